import Foundation
import LiveDefaults
import LiveDefaultsEtcdClient
import LiveDefaultsPropertyList

/// Keeps an ``EtcdMirror`` of one suite current: range at revision R, watch from R + 1, and after
/// every end of the watch a new range and the net change per key (docs/design.md, "Fleet settings:
/// the mirror").
///
/// Resuming a watch from the last revision seen would replay every intermediate value, but is
/// not safe on etcd 3.4.23: after a compaction a deletion can be lost (etcd issue 18089). A range
/// and a diff cannot be hurt by compaction, and give observers what a file reload gives them.
///
/// Across a cluster (docs/design.md, "Fleet settings: failures of a cluster"): after a watch ends
/// the follower waits a random moment (up to `reconnectJitter`) and moves on to the next member;
/// a member without a leader ends the watch at once (the has-leader header); a hung one at the
/// idle timeout. A watch message from another cluster, or at a revision below the mirror's (etcd
/// wiped and started again on the same port), ends the watch too: the next range replaces the
/// mirror, and observers get the net change per key.
///
/// A member that stops answering without closing its connections (frozen, a hung VM, a partition)
/// sends nothing more on the watch; the follower notices it with a check after each
/// ``StallCheck/interval`` of silence on the watch (docs/design.md, "Fleet settings: a stalled
/// member"): a member that does not answer within ``StallCheck/timeout`` ends the watch as a
/// disconnect, and the next range, from the next member, gives each member that timeout too.
final class EtcdSuiteFollower: Sendable {
    /// Where the follower is.
    enum Status: Sendable, Equatable {
        /// Not yet in step with etcd.
        case starting
        /// In step, at this revision.
        case live(revision: Int64)
        /// etcd is not reachable; the values are those of the last revision seen. `since` is the
        /// last contact: the last message etcd sent (a range's answer, a watch message, an
        /// answered check), or when the follower started when etcd never answered.
        case offline(since: Date, problem: String)
    }

    /// How often, and how patiently, the member of an open watch is checked.
    struct StallCheck: Sendable, Equatable {
        /// How long a watch may be silent (no message, no answered check) before its member is
        /// checked.
        var interval: TimeInterval
        /// How long the member may take to answer one check (and each member, the range after a
        /// stall).
        var timeout: TimeInterval

        /// FleetSuite's defaults: a check every 2 s, each given 2 s.
        static let standard = StallCheck(interval: 2, timeout: 2)
    }

    private struct State {
        var mirror: EtcdMirror
        var status = Status.starting
        /// Whether the loop runs, and the number of its run: ``stop()`` moves the number on, which
        /// ends the run, and a run whose number is no longer current stops at its next step.
        var loop = Loop.stopped(lastRun: 0)
        var watch: EtcdWatch?
        /// The task of the current run (on the shared follower thread).
        var task: Task<Void, Never>?
        var resyncs = 0
        /// Ranges sent so far, and the number of the one the mirror was last filled from: a range
        /// sent before a write was acknowledged can answer after it, with older values.
        var rangesSent = 0
        var mirrorRange = 0
        var identityChanges = 0
        var stalls = 0
        var checks = 0
        /// When the current watch's member was last heard from: a message, or an answered check.
        var lastHeard = ContinuousClock.now
        /// When etcd was last heard from (a range's answer, a watch message, an answered check), or
        /// when the follower started, before any answer: an outage counts from there, not from
        /// the moment it was noticed.
        var lastContact = Date()
        /// The number of the current watch; its messages are applied only while it is current
        /// (``stop()`` moves it on).
        var watchGeneration = 0
    }

    /// The follower's loop: running (run number n), or stopped (after run n).
    private enum Loop: Equatable {
        case running(Int)
        case stopped(lastRun: Int)

        /// The run's number: the current one, or the last one.
        var number: Int {
            switch self {
            case .running(let run), .stopped(let run): run
            }
        }
    }

    let client: EtcdClient
    private let state: Locked<State>
    private let idleTimeout: TimeInterval
    /// The back-off, jitter and stall-probe policy each run starts from (FollowerPolicy.swift).
    private let policy: FollowerPolicy
    private var stallCheck: StallCheck? { policy.stallCheck }
    private let onChange: @Sendable ([EtcdMirror.Change], Int64) -> Void
    private let onProblem: @Sendable (RemoteProblem) -> Void

    /// - Parameters:
    ///   - client: The etcd client to read and watch with.
    ///   - prefix: The suite's keys: every etcd key that starts with it.
    ///   - idleTimeout: How long a watch may stay silent (no event, no progress notification)
    ///     before it is ended (a hung member), and the suite read and watched again; keep it about
    ///     3× etcd's progress interval.
    ///   - reconnectJitter: The most the follower waits, at random, before it ranges again after a
    ///     watch ended, so that the watchers of one member do not all move at once.
    ///   - stallCheck: How often the member of an open watch is checked, and how long it may take
    ///     to answer; nil for no check (only the idle timeout notices a stalled member).
    ///   - onChange: Called with each burst's per-key changes and the revision, in order, from one
    ///     task at a time.
    ///   - onProblem: Called once when etcd becomes unreachable (``RemoteProblem/unreachable(_:)``, or
    ///     how else the range failed), and for each unreadable value.
    convenience init(
        client: EtcdClient, prefix: Data, idleTimeout: TimeInterval = 30, reconnectJitter: TimeInterval = 0.25,
        stallCheck: StallCheck? = .standard,
        onChange: @escaping @Sendable ([EtcdMirror.Change], Int64) -> Void,
        onProblem: @escaping @Sendable (RemoteProblem) -> Void = { _ in }
    ) {
        self.init(
            client: client, mirror: EtcdMirror(prefix: prefix), idleTimeout: idleTimeout,
            reconnectJitter: reconnectJitter, stallCheck: stallCheck, onChange: onChange, onProblem: onProblem)
    }

    /// A follower that starts from values already read (the `defaults` command's `watch` ranges
    /// the suite to open it): its first range reports only what changed since.
    init(
        client: EtcdClient, mirror: EtcdMirror, idleTimeout: TimeInterval = 30, reconnectJitter: TimeInterval = 0.25,
        stallCheck: StallCheck? = .standard,
        onChange: @escaping @Sendable ([EtcdMirror.Change], Int64) -> Void,
        onProblem: @escaping @Sendable (RemoteProblem) -> Void = { _ in }
    ) {
        self.client = client
        self.state = Locked(State(mirror: mirror))
        self.idleTimeout = idleTimeout
        self.policy = FollowerPolicy(reconnectJitter: reconnectJitter, stallCheck: stallCheck)
        self.onChange = onChange
        self.onProblem = onProblem
    }

    var status: Status { state.withLock { $0.status } }
    var values: [String: PropertyListValue] { state.withLock { $0.mirror.values } }
    /// How many times the mirror was filled from a range (the first time included).
    var resyncCount: Int { state.withLock { $0.resyncs } }
    /// How many watches were left because a message came from another cluster or went back in
    /// revisions.
    var identityChangeCount: Int { state.withLock { $0.identityChanges } }
    /// How many watches were left because their member did not answer a check in time.
    var stallCount: Int { state.withLock { $0.stalls } }
    /// How many checks were sent.
    var checkCount: Int { state.withLock { $0.checks } }
    /// The member the current watch comes from; nil between watches.
    var watchedEndpoint: URL? { state.withLock { $0.watch?.endpoint } }

    /// Why a watch message shows that the member is not the etcd the mirror was read from, or nil:
    /// another cluster ID, or a revision below the mirror's (a member's revision never goes back;
    /// etcd wiped or restored from a snapshot does, keeping its cluster ID when it keeps its
    /// name, peer URL and cluster token).
    static func identityProblem(of header: EtcdResponseHeader?, mirror: EtcdMirror) -> String? {
        guard let header else { return nil }
        if header.clusterID != 0, mirror.clusterID != 0, header.clusterID != mirror.clusterID {
            return "the cluster ID changed from \(mirror.clusterID) to \(header.clusterID)"
        }
        if header.revisionValue != 0, header.revisionValue < mirror.revision {
            return "the revision went back from \(mirror.revision) to \(header.revisionValue)"
        }
        return nil
    }

    /// The mirror's values, revision and cluster, how many ranges filled it, and the number of the
    /// range (counted as sent, see ``rangesSent``) it was last filled from, read together.
    var snapshot: (values: [String: PropertyListValue], revision: Int64, clusterID: UInt64, resyncs: Int, range: Int) {
        state.withLock {
            ($0.mirror.values, $0.mirror.revision, $0.mirror.clusterID, $0.resyncs, $0.mirrorRange)
        }
    }

    /// What an audited write of `keys` starts from, as the mirror holds it (``FleetAudit/Base``).
    func auditBase(for keys: some Sequence<String>) -> FleetAudit.Base {
        state.withLock { $0.mirror.auditBase(for: keys) }
    }

    /// The mirror's revision and cluster, how many ranges filled it and the number of the range it
    /// was last filled from, read together: ``snapshot`` without a copy of the values.
    var position: (revision: Int64, clusterID: UInt64, resyncs: Int, range: Int) {
        state.withLock { ($0.mirror.revision, $0.mirror.clusterID, $0.resyncs, $0.mirrorRange) }
    }

    /// How many ranges were sent so far (the one in flight included).
    var rangesSent: Int { state.withLock { $0.rangesSent } }

    private let statusHandler = Locked<(@Sendable (Status) -> Void)?>(nil)
    private let rangeHandler = Locked<(@Sendable () -> Void)?>(nil)

    /// Calls `handler` after every range instead of giving its per-key changes to `onChange`: the
    /// range is one replacement, which the caller reads whole (``snapshot``), and the mirror does
    /// not diff it. Set it before ``start()``.
    func onRange(_ handler: @escaping @Sendable () -> Void) {
        rangeHandler.withLock { $0 = handler }
    }

    /// The mirror's revision and the number of the loop's run, for threads that wait for a
    /// revision (``waitForRevision(_:until:)``) and for the loop's back-off (which ``stop()`` cuts
    /// short).
    private let progress = ConditionValue<(revision: Int64, run: Int)>((0, 0))

    /// Waits until the mirror holds `revision` (or a later one), or until `deadline`.
    ///
    /// - Returns: Whether the mirror got there in time.
    func waitForRevision(_ revision: Int64, until deadline: ContinuousClock.Instant) -> Bool {
        progress.wait(until: deadline) { $0.revision >= revision } != nil
    }

    private func mirrorMoved(to revision: Int64) {
        progress.update { $0.revision = revision }
    }

    /// Calls `handler` after every range (live, whether or not anything changed) and once when
    /// etcd becomes unreachable (offline). Set it before ``start()``.
    func onStatus(_ handler: @escaping @Sendable (Status) -> Void) {
        statusHandler.withLock { $0 = handler }
    }

    private func tellStatus(_ status: Status) {
        statusHandler.withLock { $0 }?(status)
    }

    /// Starts following (idempotent): the loop runs as a task on the process's one follower thread
    /// (``FollowerExecutor``), its blocking calls on the shared ``BlockingCalls`` threads, and its
    /// watch on the one transfer thread, so that N suites cost no more threads than one
    /// (docs/design.md, "Fleet settings: threads and connections"). Not the cooperative pool: an
    /// app whose pool is busy (two threads on a 2-core machine) must not stop its fleet suites
    /// from following etcd.
    func start() {
        let run = state.withLock { state -> Int? in
            guard case .stopped(let last) = state.loop else { return nil }
            state.loop = .running(last + 1)
            // Never heard from yet: an outage counts from the first attempt.
            if state.resyncs == 0 { state.lastContact = Date() }
            return last + 1
        }
        guard let run else { return }
        progress.update { $0.run = run }
        let task = Task(executorPreference: FollowerExecutor.shared) { await self.run(run) }
        state.withLock { state in
            if state.loop == .running(run) { state.task = task } else { task.cancel() }
        }
    }

    /// Stops following; the values stay as they are. A call in flight ends at its timeout and is
    /// not applied.
    func stop() {
        let (watch, task) = state.withLock { state in
            defer {
                state.loop = .stopped(lastRun: state.loop.number + 1)
                state.watch = nil
                state.task = nil
                // A message being read now is not applied.
                state.watchGeneration += 1
            }
            return (state.watch, state.task)
        }
        let run = state.withLock { $0.loop.number }
        progress.update { $0.run = run }
        watch?.cancel()
        task?.cancel()
    }

    /// Whether run number `run` of the loop is still the current one.
    private func isCurrent(_ run: Int) -> Bool { state.withLock { $0.loop == .running(run) } }

    /// Waits `seconds`, or less if ``stop()`` ends run number `run` meanwhile (it cancels the
    /// run's task).
    ///
    /// - Returns: Whether the run goes on.
    private func pause(_ seconds: Double, run: Int) async -> Bool {
        try? await Task.sleep(for: .nanoseconds(Int64(seconds * 1e9)))
        return isCurrent(run)
    }

    deinit { stop() }

    /// One message of watch number `generation`, on the thread that read it: applied to the
    /// mirror, and the changes reported. False ends the watch: it is no longer current, or the
    /// message comes from another etcd than the mirror's (the next range replaces the mirror).
    private func handle(_ message: EtcdWatchResult, generation: Int) -> Bool {
        enum Outcome {
            case stale, otherEtcd, progress
            case applied([EtcdMirror.Burst], [EtcdMirror.UnreadableValue], Int64)
        }
        let outcome = state.withLock { state -> Outcome in
            guard state.watchGeneration == generation else { return .stale }
            state.lastHeard = .now
            state.lastContact = Date()
            if Self.identityProblem(of: message.header, mirror: state.mirror) != nil {
                state.identityChanges += 1
                return .otherEtcd
            }
            guard let events = message.events, !events.isEmpty else {
                if let revision = message.header?.revision?.value { state.status = .live(revision: revision) }
                return .progress
            }
            let result = state.mirror.apply(events)
            state.status = .live(revision: state.mirror.revision)
            return .applied(result.bursts, result.unreadable, state.mirror.revision)
        }
        switch outcome {
        case .stale, .otherEtcd:
            return false
        case .progress:
            return true
        case .applied(let bursts, let unreadable, let revision):
            mirrorMoved(to: revision)
            for value in unreadable {
                onProblem(.unreadableValue(key: value.key, revision: value.revision, problem: value.problem))
            }
            // One call per transaction: a message that caught up on several revisions holds
            // several, and their net change together could be none.
            for burst in bursts { onChange(burst.changes, burst.revision) }
            return true
        }
    }

    /// Waits until `watch` ends, checking its member whenever it has been silent for
    /// ``StallCheck/interval``: a watch message (an event, a progress notification) shows the member
    /// answers as well as a check does, so a busy watch costs no check.
    ///
    /// - Returns: Whether the member failed a check (a stall), rather than the watch ending.
    private func waitForEnd(of watch: EtcdWatch, prefix: Data, run: Int) async -> Bool {
        guard let stallCheck else {
            await watch.ended()
            return false
        }
        while true {
            guard let due = policy.checkDue(lastHeard: state.withLock { $0.lastHeard }) else { return false }
            if ContinuousClock.now < due {
                if await Self.ended(watch, before: due) { return false }
                // A message may have come meanwhile: look again.
                continue
            }
            guard isCurrent(run) else { return false }
            state.withLock { $0.checks += 1 }
            do {
                let client = self.client
                let endpoint = watch.endpoint
                try await BlockingCalls.shared.run {
                    try client.checkAnswers(endpoint, prefix: prefix, timeout: stallCheck.timeout)
                }
                state.withLock { state in
                    state.lastHeard = .now
                    state.lastContact = Date()
                }
            } catch {
                // Ended meanwhile (stopped, or the member closed it): not a stall.
                return !watch.hasEnded
            }
        }
    }

    /// Whether `watch` ends before `deadline` (or the task is cancelled), holding no thread.
    private static func ended(_ watch: EtcdWatch, before deadline: ContinuousClock.Instant) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await watch.ended()
                return true
            }
            group.addTask {
                try? await Task.sleep(until: deadline)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first || watch.hasEnded
        }
    }

    /// The loop of run number `run`: range, watch until the watch ends, pause, again; until
    /// ``stop()``.
    private func run(_ run: Int) async {
        // What to wait and for how long: FollowerPolicy decides, this loop does it.
        var policy = self.policy
        var reportedOffline = false
        while isCurrent(run) {
            do {
                let (prefix, entries, rangeNumber) = state.withLock { state in
                    state.rangesSent += 1
                    return (state.mirror.prefix, state.mirror.auditKeys.entries, state.rangesSent)
                }
                let (client, timeout) = (self.client, policy.rangeTimeout)
                // The suite without its history's entries (docs/design.md, "History: a fleet
                // suite's audit keys"): a start reads the settings, not ten thousand entries.
                let (header, kvs) = try await BlockingCalls.shared.run {
                    try client.range(prefix: prefix, excluding: entries, timeout: timeout)
                }
                policy.rangeSucceeded()
                guard isCurrent(run) else { return }
                let rangeHandler = rangeHandler.withLock { $0 }
                let (changes, unreadable) = state.withLock { state in
                    if Self.identityProblem(of: header, mirror: state.mirror) != nil { state.identityChanges += 1 }
                    // A full replacement: whatever etcd this is, the mirror becomes its state
                    // (diffed here only for a caller that wants the range's per-key changes).
                    let result = state.mirror.resync(header: header, kvs: kvs, diffing: rangeHandler == nil)
                    state.status = .live(revision: header.revisionValue)
                    state.lastContact = Date()
                    state.resyncs += 1
                    state.mirrorRange = rangeNumber
                    return (result.changes, result.unreadable)
                }
                mirrorMoved(to: header.revisionValue)
                for value in unreadable {
                    onProblem(.unreadableValue(key: value.key, revision: value.revision, problem: value.problem))
                }
                if let rangeHandler {
                    rangeHandler()
                } else if !changes.isEmpty {
                    onChange(changes, header.revisionValue)
                }
                tellStatus(.live(revision: header.revisionValue))
                reportedOffline = false
                // Each message is handled on the thread that reads the stream, as it is read: no
                // hop to another thread between the bytes and the observers (docs/design.md, "Fleet
                // settings: from the bytes to the observer"). This task only waits for the end.
                let generation = state.withLock { state -> Int in
                    state.watchGeneration += 1
                    state.lastHeard = .now
                    return state.watchGeneration
                }
                let watch = try client.watch(
                    prefix: prefix, fromRevision: header.revisionValue + 1, idleTimeout: idleTimeout
                ) { [weak self] message in
                    self?.handle(message, generation: generation) ?? false
                }
                let keep = state.withLock { state -> Bool in
                    guard state.loop == .running(run), state.watchGeneration == generation else { return false }
                    state.watch = watch
                    return true
                }
                guard keep else {
                    watch.cancel()
                    return
                }
                let began = ContinuousClock.now
                // An end with an error (killed, hung, leaderless, canceled) is, like a clean end
                // (etcd stopped politely), a reason to range again — not, by itself, a sign that
                // etcd is unreachable; the range says that.
                let stalled = await waitForEnd(of: watch, prefix: prefix, run: run)
                // Range again, from the next member, after a random moment — longer each time when
                // watches keep ending at once.
                watch.cancel()
                client.avoid(watch.endpoint)
                state.withLock { $0.watch = nil }
                guard isCurrent(run) else { return }
                if stalled { state.withLock { $0.stalls += 1 } }
                switch policy.watchEnded(
                    lasted: ContinuousClock.now - began, stalled: stalled, random: .random(in: 0...1))
                {
                case .rangeAtOnce:
                    // The member went silent, so the values may already be behind.
                    continue
                case .pause(let seconds):
                    guard await pause(seconds, run: run) else { return }
                }
            } catch {
                guard isCurrent(run) else { return }
                if !reportedOffline {
                    reportedOffline = true
                    onProblem(RemoteProblem(error))
                }
                let wentOffline = state.withLock { state -> Status? in
                    if case .offline = state.status { return nil }
                    // Since the last contact: the outage began when etcd went silent, not when it
                    // was noticed (a check's or a range's timeout later).
                    state.status = .offline(since: state.lastContact, problem: "\(error)")
                    return state.status
                }
                if let wentOffline { tellStatus(wentOffline) }
                // Jittered back-off, so a fleet does not re-range at once after an etcd restart.
                guard await pause(policy.rangeFailed(random: .random(in: 0...1)), run: run) else { return }
            }
        }
    }
}

extension EtcdSuiteFollower: FleetCacheSource {
    /// The mirror as the offline cache keeps it.
    var cacheContents: FleetCache {
        state.withLock {
            FleetCache(values: $0.mirror.values, revision: $0.mirror.revision, clusterID: $0.mirror.clusterID)
        }
    }
}
