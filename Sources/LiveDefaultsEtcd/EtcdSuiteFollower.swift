import Foundation
import LiveDefaults

/// Keeps an ``EtcdMirror`` of one suite current: range at revision R, watch from R + 1, and after
/// every end of the watch a new range and the net change per key (docs/design.md, "Fleet settings:
/// the mirror").
///
/// Resuming a watch from the last revision seen would replay every intermediate value, but is
/// not safe on etcd 3.4.23: after a compaction a deletion can be lost (etcd issue 18089). A range
/// and a diff cannot be hurt by compaction, and give observers what a file reload gives them.
final class EtcdSuiteFollower: Sendable {
    /// Where the follower is.
    enum Status: Sendable, Equatable {
        /// Not yet in step with etcd.
        case starting
        /// In step, at this revision.
        case live(revision: Int64)
        /// etcd is not reachable; the values are those of the last revision seen.
        case offline(since: Date, problem: String)
    }

    private struct State {
        var mirror: EtcdMirror
        var status = Status.starting
        var task: Task<Void, Never>?
        var watch: EtcdWatch?
        var resyncs = 0
    }

    let client: EtcdClient
    private let state: Locked<State>
    private let idleTimeout: TimeInterval
    private let onChange: @Sendable ([EtcdMirror.Change], Int64) -> Void
    private let onProblem: @Sendable (String) -> Void

    /// - Parameters:
    ///   - client: The etcd client to read and watch with.
    ///   - prefix: The suite's keys: every etcd key that starts with it.
    ///   - idleTimeout: How long a watch may stay silent (no event, no progress notification)
    ///     before it is ended, and the suite read and watched again.
    ///   - onChange: Called with each burst's per-key changes and the revision, in order, from one
    ///     task at a time.
    ///   - onProblem: Called once when etcd becomes unreachable, and for each unreadable value.
    init(
        client: EtcdClient, prefix: Data, idleTimeout: TimeInterval = 30,
        onChange: @escaping @Sendable ([EtcdMirror.Change], Int64) -> Void,
        onProblem: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.client = client
        self.state = Locked(State(mirror: EtcdMirror(prefix: prefix)))
        self.idleTimeout = idleTimeout
        self.onChange = onChange
        self.onProblem = onProblem
    }

    var status: Status { state.withLock { $0.status } }
    var values: [String: PropertyListValue] { state.withLock { $0.mirror.values } }
    /// How many times the mirror was filled from a range (the first time included).
    var resyncCount: Int { state.withLock { $0.resyncs } }

    /// The mirror's values, revision and cluster, and how many ranges filled it, read together.
    var snapshot: (values: [String: PropertyListValue], revision: Int64, clusterID: UInt64, resyncs: Int) {
        state.withLock { ($0.mirror.values, $0.mirror.revision, $0.mirror.clusterID, $0.resyncs) }
    }

    private let statusHandler = Locked<(@Sendable (Status) -> Void)?>(nil)

    /// Calls `handler` after every range (live, whether or not anything changed) and once when
    /// etcd becomes unreachable (offline). Set it before ``start()``.
    func onStatus(_ handler: @escaping @Sendable (Status) -> Void) {
        statusHandler.withLock { $0 = handler }
    }

    private func tellStatus(_ status: Status) {
        statusHandler.withLock { $0 }?(status)
    }

    /// Starts following (idempotent).
    func start() {
        state.withLock { state in
            guard state.task == nil else { return }
            state.task = Task { [weak self] in await self?.run() }
        }
    }

    /// Stops following; the values stay as they are.
    func stop() {
        let (task, watch) = state.withLock { state in
            defer {
                state.task = nil
                state.watch = nil
            }
            return (state.task, state.watch)
        }
        task?.cancel()
        watch?.cancel()
    }

    deinit { stop() }

    private func run() async {
        var delay = 0.0
        var reportedOffline = false
        while !Task.isCancelled {
            do {
                let (header, kvs) = try await client.range(prefix: state.withLock { $0.mirror.prefix })
                let (changes, unreadable, prefix) = state.withLock { state in
                    let result = state.mirror.resync(header: header, kvs: kvs)
                    state.status = .live(revision: header.revisionValue)
                    state.resyncs += 1
                    return (result.changes, result.unreadable, state.mirror.prefix)
                }
                for value in unreadable {
                    onProblem(
                        "the value of \"\(value.key)\" at revision \(value.revision) is not a property list: \(value.problem)"
                    )
                }
                if !changes.isEmpty { onChange(changes, header.revisionValue) }
                tellStatus(.live(revision: header.revisionValue))
                delay = 0
                reportedOffline = false
                let watch = try await client.watch(
                    prefix: prefix, fromRevision: header.revisionValue + 1, idleTimeout: idleTimeout)
                let keep = state.withLock { state -> Bool in
                    guard !Task.isCancelled else { return false }
                    state.watch = watch
                    return true
                }
                guard keep else {
                    watch.cancel()
                    return
                }
                for try await message in watch.messages {
                    guard let events = message.events, !events.isEmpty else {
                        if let revision = message.header?.revision?.value {
                            state.withLock { $0.status = .live(revision: revision) }
                        }
                        continue
                    }
                    let (changes, unreadable, revision) = state.withLock { state in
                        let result = state.mirror.apply(events)
                        state.status = .live(revision: state.mirror.revision)
                        return (result.changes, result.unreadable, state.mirror.revision)
                    }
                    for value in unreadable {
                        onProblem(
                            "the value of \"\(value.key)\" at revision \(value.revision) is not a property list: \(value.problem)"
                        )
                    }
                    if !changes.isEmpty { onChange(changes, revision) }
                }
                // A clean end (etcd stopped politely) is a disconnect too: range again at once.
            } catch {
                if Task.isCancelled { return }
                if !reportedOffline {
                    reportedOffline = true
                    onProblem("etcd is not reachable: \(error)")
                }
                let wentOffline = state.withLock { state -> Status? in
                    if case .offline = state.status { return nil }
                    state.status = .offline(since: Date(), problem: "\(error)")
                    return state.status
                }
                if let wentOffline { tellStatus(wentOffline) }
                // Jittered back-off, so a fleet does not re-range at once after an etcd restart.
                delay = min(max(delay * 2, 0.05), 30)
                let wait = Double.random(in: delay / 2...delay)
                try? await Task.sleep(for: .seconds(wait))
            }
        }
    }
}
