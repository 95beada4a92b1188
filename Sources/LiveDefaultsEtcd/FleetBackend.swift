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
/// - An ``EtcdSuiteFollower`` keeps a mirror of etcd. Each watch message's per-key changes go up
///   to the store as they are (``SuiteChange/changed(_:version:)``), which applies them without a
///   second diff: unwritten local changes win, echoes of this process's own writes hold the values
///   reads already show and deliver nothing. A range (a full re-sync), or news that follows news
///   held back, asks for a reload instead, and `reload(goneForGood:)` hands the store the mirror's
///   values, which it installs through its one merge.
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
        weak var store: SuiteStore?
        /// What the cache held at load.
        var cached: FleetCache?
        /// The mirror's identity last handed to the store whole: an unchanged mirror is no reload.
        /// Cleared when per-key changes go up after it (one may have been dropped by a busy store,
        /// which then reloads).
        var installed: (clusterID: UInt64, revision: Int64, resyncs: Int)?
        /// The range (cluster and re-sync count) whose values the store got whole: per-key changes
        /// go up only on top of it. Nil before the first reload, and after news was held back.
        var changesBase: (clusterID: UInt64, resyncs: Int)?
        var version: UInt64 = 0
        /// This process's last commit: its revision, the mirror's cluster and range count then,
        /// and how many ranges had been sent when etcd acknowledged it. A mirror below that
        /// revision from a range sent before the acknowledgement (the same range, or one in flight
        /// that answered later) is behind values the store already shows; a range sent after it
        /// is etcd's word, even below it (a restored snapshot).
        var lastCommit: (clusterID: UInt64, resyncs: Int, revision: Int64, rangesSent: Int)?
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
    var installedRevision: Int64? { state.withLock { $0.installed?.revision } }

    func attach(_ store: SuiteStore) {
        state.withLock { $0.store = store }
    }

    // MARK: The seam

    func load() -> SuiteLoad {
        var load = SuiteLoad()
        do throws(DefaultsError) {
            if let contents = try cache.file.read() {
                let cache = try FleetCache(contents.data, suite: suite, path: location.path)
                let version = state.withLock { state -> UInt64 in
                    state.cached = cache
                    state.version += 1
                    return state.version
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

    func startWatching(_ onChange: @escaping @Sendable (SuiteChange) -> Void) {
        state.withLock { $0.onChange = onChange }
        follower.start()
    }

    func reload(goneForGood: Bool) -> SuiteReload {
        let mirror = follower.snapshot
        // Nothing read from etcd yet: the cached values stay.
        guard mirror.resyncs > 0 else { return .unchanged }
        let snapshot = state.withLock { state -> SuiteSnapshot? in
            // Behind this process's own last commit, from a range sent before etcd acknowledged it
            // (the commit's events are still on the way, or a range in flight answered late):
            // installing it would take back values reads already show; the commit's events reload
            // again. A commit made before the first range belongs with that range (the same etcd).
            if let commit = state.lastCommit, mirror.revision < commit.revision, mirror.range <= commit.rangesSent,
                commit.clusterID == mirror.clusterID || commit.resyncs == 0
            {
                state.changesBase = nil
                return nil
            }
            state.changesBase = (mirror.clusterID, mirror.resyncs)
            if let installed = state.installed, installed.clusterID == mirror.clusterID,
                installed.revision == mirror.revision, installed.resyncs == mirror.resyncs
            {
                return nil
            }
            state.installed = (mirror.clusterID, mirror.revision, mirror.resyncs)
            state.version += 1
            return SuiteSnapshot(values: mirror.values, version: state.version)
        }
        guard let snapshot else { return .unchanged }
        cache.save(follower)
        return .changed(snapshot)
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
        let committed: Int64
        do {
            // On this thread, as the store's flush runs: each transaction, and the authentication
            // before it, ends within the request timeout on every endpoint.
            committed = try write.commit(with: client)
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
                snapshot: SuiteSnapshot(values: base, version: state.withLock { $0.version }),
                unchangedByOthers: false, refusal: refusal)
        }
        // etcd has them: their records in the journal go.
        pendingJournal.release()
        // Read after the acknowledgement: a range sent by now may still answer with older values.
        let rangesSent = follower.rangesSent
        let mirror = follower.snapshot
        let values: [String: PropertyListValue]
        if mirror.resyncs > 0 && mirror.revision >= committed {
            // The watch already brought the commit (and maybe later ones): etcd's values as they are.
            values = mirror.values
        } else {
            // The commit's events are still to come; they hold these values, so they deliver nothing.
            values = changes.applied(to: mirror.resyncs > 0 ? mirror.values : known.values)
        }
        let version = state.withLock { state -> UInt64 in
            state.version += 1
            state.lastCommit = (mirror.clusterID, mirror.resyncs, committed, rangesSent)
            return state.version
        }
        return SuiteWritten(snapshot: SuiteSnapshot(values: values, version: version), unchangedByOthers: false)
    }

    // MARK: The follower's news

    /// The follower's news: one watch message's (or range's) per-key changes at `revision`.
    ///
    /// On top of the values the store got whole, they go up as they are: the store applies them on
    /// the follower's thread when it is idle (observers then get them without a hop), with no
    /// second diff. Behind this process's own last commit they are held back (the commit's events
    /// follow), and the next news asks for a reload of the whole mirror, as a range does.
    private func mirrorChanged(_ changes: [EtcdMirror.Change], revision: Int64) {
        // Where the mirror is, without a copy of its values (this runs for every change).
        let mirror = follower.position
        enum Forward { case changes([SuiteKeyChange], version: UInt64), reload }
        let (onChange, forward) = state.withLock { state -> ((@Sendable (SuiteChange) -> Void)?, Forward?) in
            guard let onChange = state.onChange else { return (nil, nil) }
            if let commit = state.lastCommit, revision < commit.revision, mirror.range <= commit.rangesSent,
                commit.clusterID == mirror.clusterID || commit.resyncs == 0
            {
                state.changesBase = nil
                return (onChange, nil)
            }
            guard let base = state.changesBase, base.clusterID == mirror.clusterID, base.resyncs == mirror.resyncs
            else { return (onChange, .reload) }
            state.installed = nil
            state.version += 1
            let keyChanges = changes.map { SuiteKeyChange(key: $0.key, value: $0.new) }
            return (onChange, .changes(keyChanges, version: state.version))
        }
        switch forward {
        case .changes(let keyChanges, let version)?:
            cache.save(follower)
            onChange?(.changed(keyChanges, version: version))
        case .reload?:
            onChange?(.mayHaveChanged)
        case nil:
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
