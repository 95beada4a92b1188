import Foundation
import LiveDefaults
import LiveDefaultsEtcdClient
import LiveDefaultsPropertyList

extension FleetSuite {
    /// Brings the fleet suite up to migration `version`, each step once per suite across the
    /// fleet: the pending steps' changes and the record (`DefaultsMigration.recordKey`, under
    /// the suite's prefix) are committed in one etcd transaction that applies only if the record and
    /// every key the steps change are as they were read (compare-and-set). A process that loses the
    /// race reads again and finds the steps done.
    ///
    /// ```swift
    /// try suite.migrate(to: 1) { step in step.rename("maxConnections", to: "connectionLimit") }
    /// ```
    ///
    /// `body` may be evaluated by several processes racing for the same step, and by one process
    /// more than once; only one result is committed, so it must change only `step`. Every process
    /// with the suite open sees the changes as one burst, with the origin `ChangeOrigin.migration`
    /// in this process (its store of the suite, found by the suite's description, reads them
    /// before this returns; the record names the commit, `commit`, so that this process knows it
    /// as its own) and `ChangeOrigin.external` in the others. Moving keys from another suite is
    /// for suites kept in a file.
    ///
    /// - Parameters:
    ///   - version: The number of the last step.
    ///   - body: Makes step `step.number`'s changes to `step`.
    /// - Returns: The numbers of the steps this process committed.
    /// - Throws: `DefaultsError`: `migrationFailed` when `body` throws, asks for a move, or changes
    ///   more keys than one etcd transaction takes (then none of the pending steps is committed, unlike
    ///   a file suite's, which keeps the steps before the one that failed); `remoteUnavailable` when
    ///   etcd cannot be reached.
    @discardableResult
    public func migrate(to version: Int, _ body: (inout DefaultsMigration) throws -> Void) throws -> [Int] {
        // The suite's own client: its credentials, authorities and client certificate.
        let client = makeClient()
        let prefix = prefix
        var ran: [Int] = []
        while true {
            let (header, kvs): (EtcdResponseHeader, [EtcdKeyValue])
            do {
                (header, kvs) = try client.range(prefix: prefix, excluding: FleetAudit.Keys(prefix: prefix).entries)
            } catch {
                throw DefaultsError(
                    .remoteUnavailable, "The migration of fleet suite \"\(name)\" could not read etcd: \(error)",
                    suite: name, underlying: SendableDescription(error))
            }
            var mirror = EtcdMirror(prefix: prefix)
            _ = mirror.resync(header: header, kvs: kvs)
            let values = mirror.values
            let record = MigrationRecord(in: values)
            guard record.version < version else { return ran }
            // Every pending step on the values read, then one transaction: one burst for every process.
            var migrated = values
            for number in (record.version + 1)...version {
                let result: (values: [String: PropertyListValue], moves: [String: [String]])
                do {
                    result = try MigrationRecord.run(step: number, over: migrated, body)
                } catch {
                    throw failure(step: number, after: record.version, "failed", SendableDescription(error))
                }
                guard result.moves.isEmpty else {
                    throw failure(
                        step: number, after: record.version,
                        "asks to move keys from another suite, which only file suites do", nil)
                }
                migrated = result.values
            }
            // The record names this commit: this process's store, if it has the suite open, delivers
            // the watch's news of it with the origin `.migration` (other processes: `.external`).
            let commit = UUID().uuidString
            let next = MigrationRecord(version: version, commit: commit).stored(in: migrated)
            let number = record.version + 1
            let changed = Set(next.keys).union(values.keys).filter { next[$0] != values[$0] }.sorted()
            // One transaction: the changes, their audit keys, the head and the pruning.
            guard changed.count <= FleetAudit.changesPerTransaction else {
                throw failure(
                    step: version, after: record.version,
                    "makes steps \(number) to \(version) change \(changed.count) keys, more than one etcd transaction takes",
                    nil)
            }
            let revisions = Dictionary(
                kvs.compactMap { kv in kv.key.map { ($0.data, kv.mod_revision?.value ?? 0) } }, uniquingKeysWith: max)
            var write = EtcdSuiteWrite(prefix: prefix)
            do throws(EtcdSuiteWrite.EncodingFailure) {
                for key in changed {
                    write.expect(key, modRevision: revisions[EtcdMirror.etcdKey(key, prefix: prefix)] ?? 0)
                    try write.set(key, to: next[key])
                }
            } catch {
                throw failure(
                    step: number, after: record.version, "made a value that cannot be encoded",
                    SendableDescription(error))
            }
            MigrationMarks.expect(commit: commit)
            defer { MigrationMarks.forget(commit: commit) }
            let committed: (succeeded: Bool, revision: Int64)
            do {
                committed = try write.commitAudited(
                    with: client, base: mirror.auditBase(for: changed), origin: { _ in .migration }, writer: .current,
                    retrying: false)
            } catch {
                throw DefaultsError(
                    .remoteUnavailable,
                    "Steps \(number) to \(version) of the migration of fleet suite \"\(name)\" could not be committed: "
                        + "\(error). \(Self.done(through: record.version)) The next start tries again.",
                    suite: name, underlying: SendableDescription(error))
            }
            if committed.succeeded {
                ran = Array(number...version)
                showCommitted(at: committed.revision)
            }
        }
    }

    /// Waits for this process's store of the suite, if it has one, to hear of the commit at
    /// `revision` (`FleetConnection.updateVisibleWithin` at most, as an update does), while the
    /// commit is expected: reads after `migrate` see the migration, and observers get it with the
    /// origin `.migration`. A watch later than that brings it as `.external`.
    private func showCommitted(at revision: Int64) {
        guard let store = FleetStores.existing(self), let backend = store.backend as? FleetBackend else { return }
        let deadline = ContinuousClock.now + FleetConnection.updateVisibleWithin
        var target = revision
        while true {
            _ = backend.follower.waitForRevision(target, until: deadline)
            store.reload()
            // A flush of this process's own that etcd took after the migration's commit (a
            // mirrored key, say) makes the store refuse a mirror behind that flush
            // (`FleetSync.isBehindOwnCommit`), so the reload above may have installed nothing:
            // wait for that commit too, and reload again.
            guard let own = backend.lastCommitRevision, own > target, ContinuousClock.now < deadline else { return }
            target = own
        }
    }

    /// The pending steps are committed together, so a failure commits none of them: the record is
    /// still at `recorded`.
    private func failure(step number: Int, after recorded: Int, _ problem: String, _ cause: SendableDescription?)
        -> DefaultsError
    {
        DefaultsError(
            .migrationFailed,
            "Step \(number) of the migration of fleet suite \"\(name)\" \(problem); no step of this run was "
                + "committed. \(Self.done(through: recorded)) The next start tries again from step \(recorded + 1).",
            suite: name, underlying: cause)
    }

    private static func done(through recorded: Int) -> String {
        switch recorded {
        case 0: "No step is done."
        case 1: "Step 1 is done."
        default: "Steps 1 to \(recorded) are done."
        }
    }
}
