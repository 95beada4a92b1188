import Foundation
import LiveDefaults
import LiveDefaultsPropertyList

/// A fleet suite behind the library's backend seam (docs/design.md, "Fleet settings: the remote
/// store"): the ``SuiteStore`` keeps the values, the order and the flush scheduling; this backend
/// moves values to and from etcd.
///
/// - `load()` reads the offline cache (never the network), so a process serves the last known
///   values at once.
/// - An ``EtcdSuiteFollower`` keeps a mirror of etcd; each burst it delivers (and each range)
///   asks the store for a reload, and `reload()` hands the store the mirror's values, which the
///   store installs through its one merge: unwritten local changes win, echoes of this process's
///   own writes hold the values reads already show and deliver nothing.
/// - `write(_:over:)` sends the pending sets and removals in one transaction (etcd's limit of 128
///   operations splits larger ones).
final class FleetBackend: SuiteBackend {
    let suite: FleetSuite
    let client: EtcdClient
    let follower: EtcdSuiteFollower
    private let cacheFile: SuiteFile
    private let state = Locked(State())
    private let cacheQueue = DispatchQueue(label: "LiveDefaultsEtcd.cache")

    private struct State {
        /// The store's reload request, once it watches.
        var onChange: (@Sendable () -> Void)?
        weak var store: SuiteStore?
        /// What the cache held at load.
        var cached: FleetCache?
        /// The mirror's identity last handed to the store: an unchanged mirror is no reload.
        var installed: (clusterID: UInt64, revision: Int64, resyncs: Int)?
        var version: UInt64 = 0
        /// This process's last commit: its revision, the mirror's cluster and range count then,
        /// and how many ranges had been sent when etcd acknowledged it. A mirror below that
        /// revision from a range sent before the acknowledgement (the same range, or one in flight
        /// that answered later) is behind values the store already shows; a range sent after it
        /// is etcd's word, even below it (a restored snapshot).
        var lastCommit: (clusterID: UInt64, resyncs: Int, revision: Int64, rangesSent: Int)?
        /// etcd is unreachable and this outage was reported.
        var outage: DefaultsError?
        /// The reason of the last full re-sync that replaced what the cache held.
        var cacheReplacedBecause: String?
        var cacheToWrite: FleetCache?
        /// When the cache file was last written, and how many times it was (for tests).
        var cacheWrittenAt: ContinuousClock.Instant?
        var cacheWrites = 0
        var stateListeners: [UUID: AsyncStream<FleetState>.Continuation] = [:]
        /// What this backend reported, oldest first (the last 100; for tests).
        var reported: [DefaultsError] = []
    }

    init(suite: FleetSuite) {
        self.suite = suite
        self.client = EtcdClient(
            endpoints: suite.endpoints, credentials: suite.credentials.map { ($0.user, $0.password) },
            requestTimeout: suite.requestTimeout.timeInterval,
            certificateAuthorities: suite.certificateAuthorities?.path)
        let location = try? SuiteLocation(suiteName: suite.name, directory: suite.cacheLocationDirectory)
        // The name was validated by FleetSuite; the directory is absolute.
        self.cacheFile = SuiteFile(
            location: location ?? SuiteLocation(filePath: suite.cacheLocationDirectory + "/suite.plist"))
        let relay = Relay()
        self.follower = EtcdSuiteFollower(
            client: client, prefix: suite.prefix,
            onChange: { _, _ in relay.backend?.mirrorChanged() },
            onProblem: { problem in relay.backend?.report(problem) })
        follower.onStatus { status in relay.backend?.statusChanged(status) }
        relay.backend = self
    }

    deinit {
        follower.stop()
        for listener in state.withLock({ $0.stateListeners.values }) { listener.finish() }
    }

    /// The location the store is given: the suite's name, and its cache file's path.
    var location: SuiteLocation { cacheFile.location }

    /// The etcd revision of the values installed, nil before any came from etcd.
    var installedRevision: Int64? { state.withLock { $0.installed?.revision } }

    func attach(_ store: SuiteStore) {
        state.withLock { $0.store = store }
    }

    // MARK: The seam

    func load() -> SuiteLoad {
        var load = SuiteLoad()
        do throws(DefaultsError) {
            if let contents = try cacheFile.read() {
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

    func startWatching(_ onChange: @escaping @Sendable () -> Void) {
        state.withLock { $0.onChange = onChange }
        follower.start()
    }

    func reload() -> SuiteReload {
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
                return nil
            }
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
        saveCache(FleetCache(values: mirror.values, revision: mirror.revision, clusterID: mirror.clusterID))
        return .changed(snapshot)
    }

    func write(_ changes: SuiteWrite, over known: inout SuiteSnapshot) throws(DefaultsError) -> SuiteWritten {
        let prefix = suite.prefix
        var puts: [(key: Data, value: Data)] = []
        var deletes: [Data] = []
        do {
            switch changes {
            case .changes(let pending):
                for (key, change) in pending {
                    if let value = change.value {
                        puts.append((EtcdMirror.etcdKey(key, prefix: prefix), try EtcdMirror.encode(value)))
                    } else {
                        deletes.append(EtcdMirror.etcdKey(key, prefix: prefix))
                    }
                }
            case .whole(let values, _):
                // Every key this process knows of that the new values lack is deleted; a key
                // another writer adds meanwhile stays.
                let known = Set(known.values.keys).union(follower.snapshot.values.keys)
                for (key, value) in values {
                    puts.append((EtcdMirror.etcdKey(key, prefix: prefix), try EtcdMirror.encode(value)))
                }
                for key in known where values[key] == nil { deletes.append(EtcdMirror.etcdKey(key, prefix: prefix)) }
            }
        } catch {
            throw DefaultsError(
                .encodingFailed, "A value of fleet suite \"\(suite.name)\" could not be encoded: \(error)",
                suite: suite.name, underlying: SendableDescription(error))
        }
        let committed: Int64
        do {
            // Each transaction, and the authentication before it, may take the request timeout on
            // every endpoint; past twice that, the write counts as unanswered (it may still land).
            let calls = (puts.count + deletes.count) / EtcdClient.maximumOperationsPerTransaction + 2
            let limit = suite.requestTimeout * (2 * calls * suite.endpoints.count)
            committed = try blocking(within: limit) { [client, puts, deletes] in
                try await client.commit(puts: puts, deletes: deletes)
            }
        } catch let error as EtcdError where Self.isRefusal(error) {
            // Refused for good: drop the changes (reads return to etcd's values) and say which.
            let mirror = follower.snapshot
            let base = mirror.resyncs > 0 ? mirror.values : known.values
            let keys = changes.keys.sorted()
            let listed =
                keys.prefix(10).map(\.debugDescription).joined(separator: ", ") + (keys.count > 10 ? ", …" : "")
            let refusal = DefaultsError(
                .remoteRejected,
                "etcd refused to write \(keys.count) key(s) of fleet suite \"\(suite.name)\" (\(listed)) at "
                    + "\(suite.whereabouts)\(suite.credentials.map { " as \($0)" } ?? ""): \(error.message). "
                    + "The changes were dropped and reads show etcd's values again; write with a role that may "
                    + "write this suite.",
                suite: suite.name, underlying: error)
            return SuiteWritten(
                snapshot: SuiteSnapshot(values: base, version: state.withLock { $0.version }),
                unchangedByOthers: false, refusal: refusal)
        } catch {
            throw DefaultsError(
                .remoteUnavailable,
                "Could not write \(changes.keys.count) key(s) of fleet suite \"\(suite.name)\" to "
                    + "\(suite.whereabouts): \(error). The changes stay in memory and pending, and are sent again "
                    + "(backing off) until etcd takes them.",
                suite: suite.name, underlying: SendableDescription(error))
        }
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

    /// etcd answers that no retry will change: permission denied, bad argument (a value or a
    /// transaction too large), no space, authentication that fails again after a new token.
    static func isRefusal(_ error: EtcdError) -> Bool {
        guard case .rejected(let code?) = error.kind else { return false }
        return [EtcdError.permissionDenied, EtcdError.invalidArgument, EtcdError.unauthenticated, 8].contains(code)
    }

    // MARK: The follower's news

    /// The follower's news: reloaded on the follower's thread when the store is idle (observers
    /// then get it without a hop to another thread), else asked of the store, which coalesces it.
    private func mirrorChanged() {
        let (onChange, store) = state.withLock { ($0.onChange, $0.store) }
        guard onChange != nil else { return }
        if let store, store.reloadIfIdle() { return }
        onChange?()
    }

    private func statusChanged(_ status: EtcdSuiteFollower.Status) {
        switch status {
        case .live:
            let mirror = follower.snapshot
            let (onChange, store, recovered) = state.withLock { state in
                if let cached = state.cached {
                    if cached.clusterID != 0 && cached.clusterID != mirror.clusterID {
                        state.cacheReplacedBecause =
                            "etcd's cluster ID is \(String(mirror.clusterID, radix: 16)), the cache's "
                            + String(cached.clusterID, radix: 16)
                    } else if mirror.revision < cached.revision {
                        state.cacheReplacedBecause =
                            "etcd's revision \(mirror.revision) is below the cache's \(cached.revision)"
                    }
                    state.cached = nil
                }
                let recovered = state.outage != nil
                state.outage = nil
                return (state.onChange, state.store, recovered)
            }
            // A range replaces everything, whether or not the follower saw a change.
            onChange?()
            if recovered, let store, store.hasPendingChanges {
                // Changes held while etcd was away go out now, not after the back-off.
                DispatchQueue.global().async {
                    do { try store.flush() } catch {
                        // The store's own retry goes on, and reported the first failure.
                    }
                }
            }
        case .offline(_, let problem):
            let mirror = follower.snapshot
            let error = state.withLock { state -> DefaultsError in
                let known: String
                if mirror.resyncs > 0 {
                    known = "The \(mirror.values.count) values last seen (revision \(mirror.revision)) stay in use"
                } else if let cached = state.cached {
                    known =
                        "The \(cached.values.count) values cached at revision \(cached.revision) "
                        + "(\(cacheFile.location.path)) are in use"
                } else {
                    known = "No values are known yet (no cache): only registered defaults apply"
                }
                let error = DefaultsError(
                    .remoteUnavailable,
                    "The fleet suite \"\(suite.name)\" cannot reach \(suite.whereabouts): \(problem). \(known); "
                        + "changes made here stay pending, and the suite is followed again once etcd answers.",
                    suite: suite.name, path: cacheFile.location.path)
                state.outage = error
                return error
            }
            report(error)
        case .starting:
            break
        }
        let current = fleetState
        for listener in state.withLock({ $0.stateListeners.values }) { listener.yield(current) }
    }

    /// Reports `error`, and keeps it for ``reported``.
    private func report(_ error: DefaultsError) {
        state.withLock { state in
            state.reported.append(error)
            if state.reported.count > 100 { state.reported.removeFirst() }
        }
        DefaultsErrorReporting.report(error)
    }

    /// What this backend reported, oldest first (the last 100).
    var reported: [DefaultsError] { state.withLock { $0.reported } }

    private func report(_ problem: String) {
        // Unreachability comes through the status, once per outage.
        guard !problem.hasPrefix("etcd is not reachable") else { return }
        report(
            DefaultsError(
                .malformedPropertyList,
                "In fleet suite \"\(suite.name)\" (\(suite.whereabouts)), \(problem). It reads as absent and is "
                    + "not overwritten; fix it with a property-list document (etcdctl put).",
                suite: suite.name))
    }

    // MARK: State

    var fleetState: FleetState {
        let status = follower.status
        let mirror = follower.snapshot
        let cached = state.withLock { $0.cached }
        switch status {
        case .starting:
            return .connecting
        case .live(let revision):
            return .live(revision: revision)
        case .offline(let since, let problem):
            if mirror.resyncs > 0 { return .stale(revision: mirror.revision, since: since, reason: problem) }
            if let cached { return .stale(revision: cached.revision, since: since, reason: problem) }
            return .offline(since: since, reason: problem)
        }
    }

    /// The outage being reported, nil while etcd answers.
    var outage: DefaultsError? { state.withLock { $0.outage } }

    /// Why the last re-sync replaced the cache outright (another cluster, a revision that went back).
    var cacheReplacedBecause: String? { state.withLock { $0.cacheReplacedBecause } }

    func stateUpdates() -> AsyncStream<FleetState> {
        let (stream, continuation) = AsyncStream<FleetState>.makeStream(bufferingPolicy: .bufferingNewest(16))
        let id = UUID()
        state.withLock { $0.stateListeners[id] = continuation }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.stateListeners.removeValue(forKey: id) }
        }
        continuation.yield(fleetState)
        return stream
    }

    // MARK: The cache

    /// The shortest time between two writes of the cache file.
    static let cacheInterval = Duration.seconds(1)

    /// Saves `cache` soon, off the delivering thread, at most once per ``cacheInterval``; saves
    /// asked for meanwhile coalesce into the last.
    ///
    /// Every change rewriting the cache durably cost each watching process two `fsync`s per change
    /// (and a fleet of them the disk's time); the cache only serves a start while etcd is away, and
    /// one up to a second old is as good: its revision and cluster are checked, and the first range
    /// gives the net change (docs/design.md, "Fleet settings: the remote store").
    private func saveCache(_ cache: FleetCache) {
        let delay = state.withLock { state -> Duration? in
            defer { state.cacheToWrite = cache }
            guard state.cacheToWrite == nil else { return nil }  // a write is already on its way
            guard let last = state.cacheWrittenAt else { return .zero }
            return max(.zero, Self.cacheInterval - last.duration(to: .now))
        }
        guard let delay else { return }
        cacheQueue.asyncAfter(deadline: .now() + delay.dispatchInterval) { [self] in writePendingCache() }
    }

    /// Writes the cache asked for last, if any (on `cacheQueue`).
    private func writePendingCache() {
        guard
            let cache = state.withLock({ state -> FleetCache? in
                guard let cache = state.cacheToWrite else { return nil }
                state.cacheToWrite = nil
                state.cacheWrittenAt = .now
                state.cacheWrites += 1
                return cache
            })
        else { return }
        do throws(DefaultsError) {
            try cacheFile.replace(with: try cache.encoded(suite: suite), using: SystemFileOperations())
        } catch {
            DefaultsErrorReporting.report(error)
        }
    }

    /// How many times the cache file was written (for tests).
    var cacheWrites: Int { state.withLock { $0.cacheWrites } }

    /// Writes the cache now if a write is waiting (at exit, and for tests).
    func saveCacheNow() {
        cacheQueue.sync { writePendingCache() }
    }

    /// What the cache file holds now, nil when there is none (for tests).
    func cacheFileContents() throws(DefaultsError) -> FleetCache? {
        guard let contents = try cacheFile.read() else { return nil }
        return try FleetCache(contents.data, suite: suite, path: location.path)
    }

    /// Writes a waiting cache now and waits until it is written (for tests).
    func cacheSaved() async {
        await withCheckedContinuation { continuation in
            cacheQueue.async { [self] in
                writePendingCache()
                continuation.resume()
            }
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

extension SuiteWrite {
    /// The keys the write touches.
    var keys: [String] {
        switch self {
        case .changes(let changes): Array(changes.keys)
        case .whole(let values, _): Array(values.keys)
        }
    }
}

/// The last known values of a fleet suite, kept for a start while etcd is unreachable: a binary
/// property list `{format, prefix, endpoints, clusterID, revision, savedAt, values}`, written with
/// the suite file's atomic contract (temporary file, fsync, rename, directory fsync).
struct FleetCache: Sendable, Equatable {
    var values: [String: PropertyListValue]
    var revision: Int64
    var clusterID: UInt64

    init(values: [String: PropertyListValue], revision: Int64, clusterID: UInt64) {
        self.values = values
        self.revision = revision
        self.clusterID = clusterID
    }

    init(_ data: Data, suite: FleetSuite, path: String) throws(DefaultsError) {
        func unreadable(_ why: String) -> DefaultsError {
            DefaultsError(
                .corruptFile,
                "The cache \(path) of fleet suite \"\(suite.name)\" \(why); it is not used, and is replaced once "
                    + "etcd answers.", suite: suite.name, path: path)
        }
        let root: PropertyListValue
        do { root = try PropertyListCodec.decode(data).value } catch { throw unreadable("does not parse: \(error)") }
        guard let fields = root.dictionaryValue, case .integer(1)? = fields["format"],
            case .integer(let revision)? = fields["revision"], let cluster = fields["clusterID"]?.stringValue,
            let clusterID = UInt64(cluster, radix: 16), let values = fields["values"]?.dictionaryValue
        else { throw unreadable("is not a cache of format 1") }
        guard fields["prefix"]?.stringValue == String(decoding: suite.prefix, as: UTF8.self) else {
            throw unreadable("belongs to another prefix")
        }
        self.init(values: values, revision: revision, clusterID: clusterID)
    }

    func encoded(suite: FleetSuite) throws(DefaultsError) -> Data {
        do {
            return try encodedDocument(suite: suite)
        } catch {
            throw DefaultsError(error, suite: suite.name)
        }
    }

    private func encodedDocument(suite: FleetSuite) throws(PropertyListError) -> Data {
        try PropertyListCodec.encode(
            .dictionary([
                "format": .integer(1),
                "prefix": .string(String(decoding: suite.prefix, as: UTF8.self)),
                "endpoints": .array(suite.endpoints.map { .string($0.absoluteString) }),
                "clusterID": .string(String(clusterID, radix: 16)),
                "revision": .integer(revision),
                "savedAt": .date(Date()),
                "values": .dictionary(values),
            ]), format: .binary)
    }
}
