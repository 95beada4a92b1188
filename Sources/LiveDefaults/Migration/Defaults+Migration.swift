import Foundation
import Synchronization

extension Defaults {
    /// Brings the suite's file up to migration `version`: runs each numbered step not yet run
    /// (those after the recorded ``DefaultsMigration/recordKey``), in order, once.
    ///
    /// The steps run under the suite file's lock (the sidecar `<suite>.plist.lock` every write
    /// takes), so of several processes starting together exactly one runs each step, and the
    /// others find it done. The pending steps run one after another on the values in memory, and
    /// their result and the record are written in one atomic replace of the file: a crash midway
    /// leaves the file as it was, and the next start runs the steps again. (When a step throws, the
    /// steps before it are written.) Observers in this process see the changes as one burst with
    /// the origin ``ChangeOrigin/migration``; other processes see one burst of
    /// ``ChangeOrigin/external`` changes. (A ``DefaultsMigration/move(_:fromSuite:)`` adds a
    /// second write, of the record alone, once the old suite has let go of the keys.)
    ///
    /// ```swift
    /// try defaults.migrate(to: 2) { step in
    ///     switch step.number {
    ///     case 1: step.rename("fontsize", to: "fontSize")
    ///     case 2: step.remove(["legacyToolbar"])
    ///     default: break
    ///     }
    /// }
    /// ```
    ///
    /// `body` runs while the lock is held: it must change only `step`, never call this or another
    /// ``Defaults`` (a write would wait for the lock forever).
    ///
    /// - Parameters:
    ///   - version: The number of the last step.
    ///   - body: Makes step `step.number`'s changes to `step`.
    /// - Returns: The numbers of the steps this process ran (empty when others had run them all).
    /// - Throws: ``DefaultsError``: `migrationFailed` when `body` throws (the steps before stay done)
    ///   or the suite is not kept in a file; `corruptFile`, `lockFailed` or `writeFailed` from the file.
    @discardableResult
    public func migrate(to version: Int, _ body: (inout DefaultsMigration) throws -> Void) throws -> [Int] {
        guard let migrator = suite.backend.fileMigrator() else {
            throw DefaultsError(
                .migrationFailed,
                "Suite \"\(suiteName)\" is not kept in a file: migrate a fleet suite with FleetSuite.migrate(to:_:).",
                suite: suiteName)
        }
        try synchronize()
        // The store's I/O lock is held from before the file's lock until the store has reloaded
        // what the steps wrote, so that reload is the one that delivers them, with the origin
        // `.migration` when this process wrote (the watcher's reload of the same write then finds
        // nothing new); the steps another process ran are `.external` here.
        return try suite.migrating { (willWrite) throws(DefaultsError) in
            try migrator.migrate(to: version, willWrite: willWrite, body)
        }
    }

    /// The origin a change the suite store reports is delivered with: `.migration` for a fleet
    /// suite's change that brings a record this process committed. Called under the ``ChangeLock``.
    func deliveredOrigin(_ origin: ChangeOrigin, from store: SuiteStore, keys: ChangedKeys) -> ChangeOrigin {
        origin == .external && MigrationMarks.isMigration(store, keys: keys) ? .migration : origin
    }
}

/// The commits of this process's fleet migrations whose record the watch has yet to bring
/// (`FleetSuite.migrate`): a change that brings one is delivered with the origin `.migration`.
package enum MigrationMarks {
    /// How many commits there are: zero on every change but a migration's, one relaxed load.
    private static let count = Atomic<Int>(0)
    private static let commits = Locked<Set<String>>([])

    /// Whether a change of `keys` in `store` is this process's migration. Called under the ``ChangeLock``.
    static func isMigration(_ store: SuiteStore, keys: ChangedKeys) -> Bool {
        guard count.load(ordering: .relaxed) > 0 else { return false }
        guard case .many(let changed) = keys, changed.contains(DefaultsMigration.recordKey),
            let record = store.orderedValue(forKey: DefaultsMigration.recordKey),
            let commit = MigrationRecord(in: [DefaultsMigration.recordKey: record]).commit
        else { return false }
        return commits.withLock { $0.contains(commit) }
    }

    /// Until ``forget(commit:)``, a change that brings a record naming `commit` is delivered with
    /// the origin `.migration` (a fleet suite's migration, which the watch brings back).
    package static func expect(commit: String) {
        commits.withLock { _ = $0.insert(commit) }
        count.add(1, ordering: .sequentiallyConsistent)
    }

    package static func forget(commit: String) {
        commits.withLock { _ = $0.remove(commit) }
        count.subtract(1, ordering: .sequentiallyConsistent)
    }
}
