import Foundation
import LiveDefaults
import LiveDefaultsEtcdClient
import LiveDefaultsPropertyList

/// A fleet suite behind the library's backend seam (docs/design.md, "Fleet settings: the remote
/// store"): the ``SuiteStore`` keeps the values, the order and the flush scheduling; this backend
/// moves values to and from etcd.
///
/// - `load()` reads the offline cache (never the network), so a process serves the last known
///   values at once.
/// - An ``EtcdSuiteFollower`` keeps a mirror of etcd. What each piece of its news makes the store
///   apply is ``FleetSync``'s decision, a value: a watch message's per-key changes go up as they
///   are (``SuiteChange/changed(_:version:)``), which the store applies without a second diff
///   (unwritten local changes win, echoes of this process's own writes hold the values reads
///   already show and deliver nothing); a range is one replacement: the store reloads once, and
///   `reload(goneForGood:)` hands it the mirror's values, which it installs through its one merge.
/// - It holds no store: what recovery asks of the store (dead journals, the pending flush) is done
///   by the code that assembles a fleet suite (`FleetStores`, through ``onRecovery(_:)``).
/// - `write(_:over:)` sends the pending sets and removals in one transaction (etcd's limit of 128
///   operations splits larger ones).
///
/// Its other concerns live beside it: what it tells about etcd's reachability
/// (`FleetBackend+Outage.swift`), the offline cache (``FleetCacheWriter``), the state streams
/// (``FleetStateUpdates``) and what tests read (`FleetBackend+Testing.swift`).
final class FleetBackend: SuiteBackend {
    let suite: FleetSuite
    let client: EtcdClient
    let follower: EtcdSuiteFollower
    let cache: FleetCacheWriter
    /// The pending writes' journal, beside the cache file (FleetJournal.swift).
    let pendingJournal: FleetJournal
    let stateListeners = FleetStateUpdates()
    let state = Locked(State())

    struct State {
        /// Where the store hears of changes, once it watches.
        var onChange: (@Sendable (SuiteChange) -> Void)?
        /// What the code that assembled the suite does when etcd answers again after an outage
        /// (FleetStores: adopt dead journals, send what is pending); the backend knows no store.
        var onRecovery: (@Sendable () -> Void)?
        /// What the cache held at load.
        var cached: FleetCache?
        /// Where the store stands against the mirror: what each piece of news makes it apply.
        var sync = FleetSync()
        /// The follower's status as this backend was last told it (``statusChanged(_:)``), set with
        /// the outage: the state says what the outage says, never ahead of it.
        var told = EtcdSuiteFollower.Status.starting
        /// etcd is unreachable and this outage was reported.
        var outage: DefaultsError?
        /// When the outage reported began (the last contact with etcd), and the values in use then
        /// (to count what changed by the recovery).
        var outageBegan: Date?
        var valuesAtOutage: [String: PropertyListValue] = [:]
        /// The reason of the last full re-sync that replaced what the cache held.
        var cacheReplacedBecause: String?
        /// What this backend reported, oldest first (the last 100; for tests).
        var reported: [DefaultsError] = []
        /// Keys whose pending change comes from another origin than the process's own (a
        /// rollback), with the change's generation (``journalOrigin(_:forKey:generation:)``).
        var origins: [String: (origin: DefaultsHistoryEntry.Origin, generation: UInt64)] = [:]
    }

    init(suite: FleetSuite) {
        self.suite = suite
        self.client = suite.makeClient()
        let location = try? SuiteLocation(suiteName: suite.name, directory: suite.cacheLocationDirectory)
        // The name was validated by FleetSuite; the directory is absolute.
        self.cache = FleetCacheWriter(
            file: SuiteFile(
                location: location ?? SuiteLocation(filePath: suite.cacheLocationDirectory + "/suite.plist")),
            suite: suite)
        self.pendingJournal = FleetJournal(cacheFile: cache.file, suite: suite.name)
        let relay = Relay()
        self.follower = EtcdSuiteFollower(
            client: client, prefix: suite.prefix,
            stallCheck: .init(
                interval: suite.stallCheckInterval.timeInterval, timeout: suite.stallCheckTimeout.timeInterval),
            onChange: { changes, revision in relay.backend?.mirrorChanged(changes, revision: revision) },
            onProblem: { problem in relay.backend?.report(problem) })
        // A range is one replacement: the store reloads the mirror whole, and diffs it once.
        follower.onRange { relay.backend?.rangeArrived() }
        follower.onStatus { status in relay.backend?.statusChanged(status) }
        relay.backend = self
    }

    deinit {
        follower.stop()
        stateListeners.finish()
    }

    /// The location the store is given: the suite's name, and its cache file's path.
    var location: SuiteLocation { cache.file.location }

    /// The etcd revision of the values installed, nil before any came from etcd.
    var installedRevision: Int64? { state.withLock { $0.sync.installedRevision } }

    /// The revision of this process's last write that etcd took, nil before any.
    var lastCommitRevision: Int64? { state.withLock { $0.sync.lastCommit?.revision } }

    /// Calls `action` each time etcd answers again after an outage this backend reported, on the
    /// follower's thread (do the work elsewhere). Set by the code that assembles a fleet suite.
    func onRecovery(_ action: @escaping @Sendable () -> Void) {
        state.withLock { $0.onRecovery = action }
    }

    /// Where the mirror is, as the sync takes it.
    static func position(
        _ mirror: (values: [String: PropertyListValue], revision: Int64, clusterID: UInt64, resyncs: Int, range: Int)
    ) -> FleetSync.Position {
        FleetSync.Position(
            revision: mirror.revision, clusterID: mirror.clusterID, resyncs: mirror.resyncs, range: mirror.range)
    }

    // MARK: The seam

    func load() -> SuiteLoad {
        var load = SuiteLoad()
        do throws(DefaultsError) {
            if let contents = try cache.file.read() {
                let cache = try FleetCache(contents.data, suite: suite, path: location.path)
                let version = state.withLock { state -> UInt64 in
                    state.cached = cache
                    return state.sync.cacheLoaded()
                }
                load.snapshot = SuiteSnapshot(values: cache.values, version: version)
            }
        } catch {
            // A bad cache is only a slower start: say so and start from etcd.
            load.warnings.append(error)
        }
        return load
    }

    func journal(_ value: PropertyListValue?, forKey key: String) {
        pendingJournal.append(value, forKey: key)
    }

    func journalReplacement(_ values: [String: PropertyListValue]) {
        pendingJournal.appendReplacement(values)
    }

    func journalMark() {
        pendingJournal.mark()
    }

    func journalOrigin(_ origin: DefaultsHistoryEntry.Origin, forKey key: String, generation: UInt64) {
        state.withLock { $0.origins[key] = (origin, generation) }
    }

    func startWatching(_ onChange: @escaping @Sendable (SuiteChange) -> Void) {
        state.withLock { $0.onChange = onChange }
        follower.start()
    }

    func reload(goneForGood: Bool) -> SuiteReload {
        // The mirror whole, once per range (FleetSync decides; nothing before the first range:
        // the cached values stay).
        let mirror = follower.snapshot
        guard let version = state.withLock({ $0.sync.replacement(at: Self.position(mirror)) }) else {
            return .unchanged
        }
        cache.save(follower)
        return .changed(SuiteSnapshot(values: mirror.values, version: version))
    }

    func write(_ changes: SuiteWrite, over known: inout SuiteSnapshot) throws(DefaultsError) -> SuiteWritten {
        var write = EtcdSuiteWrite(prefix: suite.prefix)
        do throws(EtcdSuiteWrite.EncodingFailure) {
            switch changes {
            case .changes(let pending):
                for (key, change) in pending { try write.set(key, to: change.value) }
            case .whole(let values, _):
                // Every key this process knows of that the new values lack is deleted; a key
                // another writer adds meanwhile stays.
                let known = Set(known.values.keys).union(follower.snapshot.values.keys)
                for (key, value) in values { try write.set(key, to: value) }
                for key in known where values[key] == nil { try write.set(key, to: nil) }
            }
        } catch {
            throw DefaultsError(
                .encodingFailed, "A value of fleet suite \"\(suite.name)\" could not be encoded: \(error)",
                suite: suite.name, underlying: error)
        }
        // Each change's origin: a rollback's, marked for the change's generation, else the process's own.
        let marked = state.withLock { $0.origins }
        let ownOrigin = HistoryIdentity.defaultOrigin
        let origin: (String) -> DefaultsHistoryEntry.Origin
        if case .changes(let pending) = changes, !marked.isEmpty {
            origin = { key in
                guard let mark = marked[key], mark.generation == pending[key]?.generation else { return ownOrigin }
                return mark.origin
            }
        } else {
            origin = { _ in ownOrigin }
        }
        let committed: Int64
        do {
            // On this thread, as the store's flush runs: each transaction, and the authentication
            // before it, ends within the request timeout on every endpoint. Each change's audit
            // key goes in its transaction, from the mirror's revisions (docs/design.md, "History:
            // a fleet suite's audit keys").
            committed = try write.commitAudited(
                with: client, base: follower.auditBase(for: write.keys), origin: origin, writer: .current
            ).revision
            if !marked.isEmpty {
                state.withLock { state in
                    for (key, mark) in marked where state.origins[key]?.generation == mark.generation {
                        state.origins[key] = nil
                    }
                }
            }
        } catch {
            let problem = RemoteProblem(error)
            guard problem.isRefusal else {
                throw DefaultsError(
                    .remoteUnavailable,
                    "Could not write \(changes.keys.count) key(s) of fleet suite \"\(suite.name)\" to "
                        + "\(suite.whereabouts): \(problem). The changes stay pending (in memory and in this process's "
                        + "journal), and are sent again (backing off) until etcd takes them.",
                    suite: suite.name, underlying: SendableDescription(problem))
            }
            // Refused for good: drop the changes (reads return to etcd's values) and say which.
            let mirror = follower.snapshot
            let base = mirror.resyncs > 0 ? mirror.values : known.values
            let keys = changes.keys.sorted()
            let listed =
                keys.prefix(10).map(\.debugDescription).joined(separator: ", ") + (keys.count > 10 ? ", …" : "")
            // Dropped for good: their records go too.
            pendingJournal.release()
            let refusal = DefaultsError(
                .remoteRejected,
                "etcd refused to write \(keys.count) key(s) of fleet suite \"\(suite.name)\" (\(listed)) at "
                    + "\(suite.whereabouts)\(suite.credentials.map { " as \($0)" } ?? ""): \(problem). "
                    + "The changes were dropped and reads show etcd's values again; write with a role that may "
                    + "write this suite.",
                suite: suite.name, underlying: problem)
            return SuiteWritten(
                snapshot: SuiteSnapshot(values: base, version: state.withLock { $0.sync.version }),
                unchangedByOthers: false, refusal: refusal)
        }
        // etcd has them: their records in the journal go.
        pendingJournal.release()
        // Read after the acknowledgement: a range sent by now may still answer with older values.
        let rangesSent = follower.rangesSent
        let mirror = follower.snapshot
        let position = Self.position(mirror)
        let (behindOwnCommit, version) = state.withLock { state in
            // Asked of the previous commit, before this one is noted.
            let behind = state.sync.isBehindOwnCommit(revision: mirror.revision, at: position)
            return (behind, state.sync.committed(revision: committed, at: position, rangesSent: rangesSent))
        }
        let values: [String: PropertyListValue]
        if mirror.resyncs > 0 && mirror.revision >= committed {
            // The watch already brought the commit (and maybe later ones): etcd's values as they are.
            values = mirror.values
        } else if mirror.resyncs > 0 && !behindOwnCommit {
            // The commit's events are still to come; they hold these values, so they deliver nothing.
            values = changes.applied(to: mirror.values)
        } else {
            // Before any range; or the mirror has not yet brought this process's previous commit,
            // and its values would take that commit back from reads (and from a rollback's plan):
            // the values the store has, which hold it. The news held back asks for a reload.
            values = changes.applied(to: known.values)
        }
        return SuiteWritten(snapshot: SuiteSnapshot(values: values, version: version), unchangedByOthers: false)
    }

    // MARK: The follower's news

    /// The follower's news: one watch message's per-key changes at `revision`, which FleetSync
    /// turns into what the store applies: on top of the range the store got whole they go up as
    /// they are (the store applies them on the follower's thread when it is idle, so observers get
    /// them without a hop), with no second diff; otherwise a reload, or nothing when they are
    /// behind this process's own last commit (its events follow).
    private func mirrorChanged(_ changes: [EtcdMirror.Change], revision: Int64) {
        // Where the mirror is, without a copy of its values (this runs for every change).
        let mirror = follower.position
        let position = FleetSync.Position(
            revision: mirror.revision, clusterID: mirror.clusterID, resyncs: mirror.resyncs, range: mirror.range)
        let (onChange, apply) = state.withLock { state -> ((@Sendable (SuiteChange) -> Void)?, FleetSync.Apply) in
            guard let onChange = state.onChange else { return (nil, .nothing) }
            return (onChange, state.sync.watchBatch(changes, revision: revision, at: position))
        }
        deliver(apply, to: onChange)
    }

    /// A range filled the mirror: one replacement, which the store reloads once.
    private func rangeArrived() {
        let (onChange, apply) = state.withLock { ($0.onChange, $0.sync.range()) }
        deliver(apply, to: onChange)
    }

    private func deliver(_ apply: FleetSync.Apply, to onChange: (@Sendable (SuiteChange) -> Void)?) {
        switch apply {
        case .changes(let keyChanges, let version):
            cache.save(follower)
            onChange?(.changed(keyChanges, version: version))
        case .reload:
            onChange?(.mayHaveChanged)
        case .nothing:
            break
        }
    }
}

/// Lets the follower's callbacks reach the backend without keeping it alive.
private final class Relay: Sendable {
    private let target = Locked<WeakBackend>(WeakBackend())
    private struct WeakBackend { weak var backend: FleetBackend? }

    var backend: FleetBackend? {
        get { target.withLock { $0.backend } }
        set { target.withLock { $0.backend = newValue } }
    }
}
