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
        guard let backend = suite.backend as? FileBackend<SystemFileOperations> else {
            throw DefaultsError(
                .migrationFailed,
                "Suite \"\(suiteName)\" is not kept in a file: migrate a fleet suite with FleetSuite.migrate(to:_:).",
                suite: suiteName)
        }
        try synchronize()
        let migrator = FileMigrator(file: SuiteFile(location: suite.location), ownJournal: backend.ownJournalPath)
        // The store is marked from just before this process's first write (under the file's lock,
        // so never for another process's migration) until its own reload below is done: the
        // watcher hears of the write too and may reload first, and either reload delivers the
        // changes with the origin `.migration`. Without a write, the reload is unmarked: the
        // steps another process ran are `.external` here.
        var marked = false
        defer {
            suite.reload()
            if marked { MigrationMarks.unmark(suite) }
        }
        return try migrator.migrate(
            to: version,
            willWrite: {
                guard !marked else { return }
                MigrationMarks.mark(suite)
                marked = true
            }, body)
    }

    /// The origin a change the suite store reports is delivered with: `.migration` for the reload
    /// that follows a migration in this process, and for a fleet suite's change that brings a
    /// record this process committed. Called under the ``ChangeLock``.
    func deliveredOrigin(_ origin: ChangeOrigin, from store: SuiteStore, keys: ChangedKeys) -> ChangeOrigin {
        origin == .external && MigrationMarks.isMigration(store, keys: keys) ? .migration : origin
    }
}

/// The migrations this process is making: the stores whose reloads are a migration's (a file
/// suite's, marked while `migrate` writes and reloads), and the commits of fleet migrations whose
/// record the watch has yet to bring.
package enum MigrationMarks {
    /// How many marks and commits there are: zero on every change but a migration's, one relaxed load.
    private static let count = Atomic<Int>(0)
    private static let marked = Locked<Set<ObjectIdentifier>>([])
    private static let commits = Locked<Set<String>>([])

    /// Whether a change of `keys` in `store` is this process's migration. Called under the ``ChangeLock``.
    static func isMigration(_ store: SuiteStore, keys: ChangedKeys) -> Bool {
        guard count.load(ordering: .relaxed) > 0 else { return false }
        if marked.withLock({ $0.contains(ObjectIdentifier(store)) }) { return true }
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

    /// Marks `store` until ``unmark(_:)``: its reloads deliver with the origin `.migration`.
    static func mark(_ store: SuiteStore) {
        marked.withLock { _ = $0.insert(ObjectIdentifier(store)) }
        count.add(1, ordering: .sequentiallyConsistent)
    }

    static func unmark(_ store: SuiteStore) {
        marked.withLock { _ = $0.remove(ObjectIdentifier(store)) }
        count.subtract(1, ordering: .sequentiallyConsistent)
    }

}
