import Foundation
import LiveDefaults
import LiveDefaultsEtcdClient
import LiveDefaultsPropertyList

/// A fleet suite open in this process: how it stands with etcd, its values, flushing, and
/// compare-and-set updates. One store per suite per process is shared by every `Defaults` that
/// searches it (`Defaults.addFleetSuite(_:placement:)`, `Defaults.fleet(_:)`); a connection is
/// a handle on it, cheap to make again.
public final class FleetConnection: Sendable {
    /// The suite.
    public let suite: FleetSuite
    let store: SuiteStore
    let backend: FleetBackend

    init(store: SuiteStore, backend: FleetBackend) {
        self.suite = backend.suite
        self.store = store
        self.backend = backend
    }

    /// How the suite stands with etcd now.
    public var state: FleetState { backend.fleetState }

    /// The state now, then each change of it (etcd lost, etcd back), until the stream is dropped.
    public func stateUpdates() -> AsyncStream<FleetState> { backend.stateUpdates() }

    /// Waits until the suite is in step with etcd (``FleetState/live(revision:)``) and reads show
    /// etcd's values, for at most `timeout`; returns at once when it already is. A service with no
    /// offline cache yet (its first start on a machine) reads only registered defaults until the
    /// first read of etcd lands, so wait for it before serving:
    ///
    /// ```swift
    /// let connection = service.addFleetSuite(fleet)
    /// try await connection.waitUntilLive(timeout: .seconds(5))   // etcd's values, or an error
    /// ```
    ///
    /// Whether or not it throws, the suite goes on following etcd; after a timeout, reads give
    /// the cached values (or registered defaults) until etcd answers.
    ///
    /// - Parameter timeout: How long to wait.
    /// - Returns: The etcd revision the values are at.
    /// - Throws: `DefaultsError.Code.remoteUnavailable` when the suite is not in step within
    ///   `timeout`, naming its state and why (etcd unreachable, refused, …).
    @discardableResult
    public func waitUntilLive(timeout: Duration) async throws -> Int64 {
        let backend = self.backend
        let revision = await withTaskGroup(of: Int64?.self) { group -> Int64? in
            group.addTask {
                for await state in backend.stateUpdates() {
                    if case .live(let revision) = state { return revision }
                }
                return nil
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        guard let revision else {
            let why: String
            switch state {
            case .connecting: why = "its first read of etcd has not answered yet"
            case .live(let revision): return revision  // live just as the time ran out
            case .stale(let revision, let since, let reason):
                why = "etcd has not answered since \(since) (\(reason)); reads give the values of revision \(revision)"
            case .offline(let since, let reason):
                why =
                    "etcd has not answered since \(since) (\(reason)); no values are known, so reads give "
                    + "registered defaults"
            }
            throw DefaultsError(
                .remoteUnavailable,
                "The fleet suite \"\(suite.name)\" is not in step with \(suite.whereabouts) after \(timeout): \(why). It "
                    + "goes on trying, and follows etcd once it answers.",
                suite: suite.name)
        }
        // The state is live once the range is in the mirror; the store takes it now, so that the
        // next read shows it.
        let store = self.store
        await BlockingCalls.onAThreadOfItsOwn { store.reload() }
        return revision
    }

    /// The suite's own values as this process reads them: etcd's, with this process's changes not
    /// yet written laid over them (the library's own keys, such as the migration record,
    /// included).
    public var values: [String: PropertyListValue] { store.values() }

    /// The problem to know about now: a write etcd refused (`DefaultsError.Code.remoteRejected`),
    /// a write not yet taken, or etcd out of reach (`DefaultsError.Code.remoteUnavailable`); nil
    /// when there is none.
    public var lastError: DefaultsError? { store.lastError ?? backend.outage }

    /// Writes this process's pending changes to etcd now, in one transaction (several past etcd's
    /// 128 operations), and waits for etcd's answer. Not needed in normal operation: changes go out
    /// within milliseconds. A `Defaults`' `synchronize()` does the same, blocking its thread.
    ///
    /// - Throws: `DefaultsError.Code.remoteUnavailable` (the changes stay pending and are sent
    ///   again) or `DefaultsError.Code.remoteRejected` (they were dropped).
    public func synchronize() async throws {
        let store = self.store
        try await BlockingCalls.shared.run { try store.flush() }
    }

    /// Changes `key` in etcd from the value it has there to `transform`'s result, only if no one
    /// changed it in between (a compare of its modification revision, or of its absence);
    /// `transform` runs again on the new value otherwise. For counters and create-if-absent,
    /// where "the last write wins" would lose updates:
    ///
    /// ```swift
    /// try await connection.update("launches") { old in .integer((old.flatMap { if case .integer(let n) = $0 { n } else { nil } } ?? 0) + 1) }
    /// try await connection.update("rolloutSeed") { old in old ?? .integer(.random(in: 0..<1000)) }
    /// ```
    ///
    /// Unlike `set`, this is a remote transaction, not a local write: it waits for etcd, and reads
    /// (and observers, origin `.external`) see its result once the watch brings it, before it
    /// returns. This process's pending changes are written first. When `transform` returns the
    /// value the key has, nothing is written.
    ///
    /// - Parameters:
    ///   - key: The defaults key (NFC in etcd, as for every write).
    ///   - transform: The new value from the current one (nil: absent); nil removes the key. It may
    ///     run several times, so it must not have side effects.
    /// - Returns: The value the key has after the update.
    /// - Throws: `DefaultsError.Code.remoteUnavailable` when etcd cannot be reached, or when
    ///   the answer to the transaction was lost and the key has changed since: the update may or
    ///   may not have been made, and is not tried again (it could count twice). A transaction
    ///   whose answer was lost is sent again only when the key shows it was not made (its
    ///   modification revision is the one compared). `DefaultsError.Code.remoteRejected` when
    ///   etcd refuses it (a role that may only read), or after 100 attempts lost to other writers.
    @discardableResult
    public func update(
        _ key: String, _ transform: @Sendable (PropertyListValue?) throws -> PropertyListValue?
    ) async throws -> PropertyListValue? {
        if store.hasPendingChanges { try await synchronize() }
        // The client's calls block: each on the fleet's own call threads (``BlockingCalls``), neither
        // a thread of the cooperative pool nor a worker of Dispatch's global queue.
        let client = backend.client
        let etcdKey = EtcdMirror.etcdKey(key, prefix: suite.prefix)
        // The history's head, as the mirror knows it: the update's audit key goes in its transaction.
        var base = backend.follower.auditBase(for: [])
        let headKey = FleetAudit.Keys(prefix: suite.prefix).head
        for _ in 0..<100 {
            let current: EtcdKeyValue?
            do { current = try await BlockingCalls.shared.run { try client.get(key: etcdKey).kv } } catch {
                throw failure(error, key: key)
            }
            let modRevision = current?.mod_revision?.value ?? 0
            let old: PropertyListValue?
            do {
                old = try current.map { try PropertyListCodec.decode($0.value?.data ?? Data()).value }
            } catch {
                throw DefaultsError(
                    .malformedPropertyList,
                    "The value of \"\(key)\" in fleet suite \"\(suite.name)\" (revision \(modRevision)) is not a "
                        + "property list: \(error). It was not updated.", suite: suite.name, underlying: error)
            }
            let new = try transform(old)
            if new == old { return old }
            var write = EtcdSuiteWrite(prefix: suite.prefix)
            do throws(EtcdSuiteWrite.EncodingFailure) {
                try write.set(key, to: new)
            } catch {
                throw DefaultsError(
                    .encodingFailed, "The new value of \"\(key)\" could not be encoded: \(error.problem)",
                    suite: suite.name, underlying: error)
            }
            // Compare-and-set through the one builder of etcd writes: the key's revision as read
            // (and the head's), with the change's audit key (docs/design.md, "History: a fleet
            // suite's audit keys").
            base.keys[key] = (modRevision, old)
            let outcome: (succeeded: Bool, revision: Int64)
            do {
                outcome = try await BlockingCalls.shared.run { [write, base] in
                    try write.commitAudited(
                        with: client, base: base, origin: { _ in HistoryIdentity.defaultOrigin }, writer: .current,
                        retrying: false)
                }
            } catch {
                let problem = RemoteProblem(error)
                if problem.isRefusal { throw failure(problem, key: key) }
                // The answer was lost: the transaction may have been made. Only the key can tell.
                if let reread = try? await BlockingCalls.shared.run({ try client.get(key: etcdKey) }),
                    (reread.kv?.mod_revision?.value ?? 0) == modRevision
                {
                    continue  // not made: safe to send again
                }
                throw DefaultsError(
                    .remoteUnavailable,
                    "The update of \"\(key)\" in fleet suite \"\(suite.name)\" (\(suite.whereabouts)) got no answer "
                        + "(\(problem)), and the key has changed since: the update may or may not have been "
                        + "made. It was not tried again, so that it cannot count twice.",
                    suite: suite.name, underlying: problem)
            }
            guard outcome.succeeded else {
                // The key or the head moved: read the head again with the key.
                if let head = try? await BlockingCalls.shared.run({ try client.get(key: headKey).kv }) {
                    base.headRevision = head.mod_revision?.value ?? 0
                    base.next = FleetAudit.next(fromHead: head.value?.data)
                } else {
                    base.headRevision = 0
                    base.next = 1
                }
                continue
            }
            let revision = outcome.revision
            await BlockingCalls.onAThreadOfItsOwn { [self] in showRevision(revision, key: key) }
            return new
        }
        throw DefaultsError(
            .remoteRejected,
            "The update of \"\(key)\" in fleet suite \"\(suite.name)\" lost the race to other writers 100 times; "
                + "nothing was changed.", suite: suite.name)
    }

    /// How long an update waits for the watch to bring its own revision.
    static let updateVisibleWithin = Duration.seconds(5)

    /// Waits for the watch to bring `revision` (``updateVisibleWithin`` at most), then installs
    /// it, so that reads after an update see it. When the watch is later than that, says so:
    /// the update is made, and reads show it once the watch brings it.
    private func showRevision(_ revision: Int64, key: String) {
        let deadline = ContinuousClock.now + Self.updateVisibleWithin
        if !backend.follower.waitForRevision(revision, until: deadline) {
            backend.report(
                DefaultsError(
                    .remoteUnavailable,
                    "The update of \"\(key)\" in fleet suite \"\(suite.name)\" was made at revision \(revision), but "
                        + "the watch of \(suite.whereabouts) had not brought it within "
                        + "\(Self.updateVisibleWithin): reads show the value before it until the watch does.",
                    suite: suite.name))
        }
        store.reload()
    }

    private func failure(_ error: any Error, key: String) -> DefaultsError {
        if let error = error as? DefaultsError { return error }
        let problem = RemoteProblem(error)
        return DefaultsError(
            problem.isRefusal ? .remoteRejected : .remoteUnavailable,
            "Could not update \"\(key)\" in fleet suite \"\(suite.name)\" at \(suite.whereabouts)"
                + "\(suite.credentials.map { " as \($0)" } ?? ""): \(problem). Nothing was changed.",
            suite: suite.name, underlying: problem)
    }
}
