/// Where a suite's values are kept: how a suite is loaded, written (under the backend's own
/// lock), and watched for changes made outside this process.
///
/// ``SuiteStore`` owns the values in memory (``SuiteValues``), the order of changes and the
/// scheduling; a backend only moves values to and from its storage. Calls of ``load()``,
/// ``write(_:over:)`` and ``reload(goneForGood:)`` never overlap for one store (the store's I/O lock
/// serialises them) and are never made under the ``ChangeLock``. Backends: files (``FileBackend``,
/// contracts 3–5) and memory (``MemoryBackend``); a remote one plugs in the same way
/// (docs/design.md, "Store model and backends").
package protocol SuiteBackend: Sendable {
    /// Reads the suite for the first time.
    func load() -> SuiteLoad

    /// Writes this process's changes: under the backend's lock, starts from what the backend holds
    /// now (`known` when no one else changed it since), applies `changes` (each key keeps the last
    /// write) and stores the result.
    ///
    /// - Parameters:
    ///   - changes: This process's changes not yet stored.
    ///   - known: The values (and their version) this store last installed. The backend may take
    ///     the values out to apply the changes to them in place (the store holds no other
    ///     reference, so a thousand-key suite is not copied on every write); when it throws, it
    ///     leaves them as they were.
    /// - Returns: The values now stored.
    /// - Throws: ``DefaultsError`` when nothing was written (the store keeps the changes pending).
    func write(_ changes: SuiteWrite, over known: inout SuiteSnapshot) throws(DefaultsError) -> SuiteWritten

    /// Looks at the suite again, after the watch said it may have changed outside this process.
    ///
    /// - Parameter goneForGood: The watch said the suite is gone and the absence counts (for
    ///   files: away for the watcher's deletion grace): a suite found absent now reads as empty.
    ///   Without it, a suite found absent is no change (it went after the watch looked, and the
    ///   watch says so if it stays away).
    /// - Returns: What the look found.
    func reload(goneForGood: Bool) -> SuiteReload

    /// Starts telling the store of changes made outside this process: ``SuiteChange/mayHaveChanged``
    /// and ``SuiteChange/goneForGood`` ask for a coalesced ``reload(goneForGood:)``, and a backend
    /// that knows what changed hands it up as ``SuiteChange/changed(_:version:)``, which the store
    /// applies without reloading. Calls only flow up: nothing the store does calls back into the
    /// watch. A backend with no outside does nothing.
    func startWatching(_ onChange: @escaping @Sendable (SuiteChange) -> Void)

    /// Records a change in the backend's journal before the store's `set` returns, so that it
    /// outlives the process (docs/design.md, "The journal"). Called under the store's state lock,
    /// in the order of the changes. `nil` removes the key.
    func journal(_ value: PropertyListValue?, forKey key: String)

    /// Records a replacement of every value of the suite, as ``journal(_:forKey:)`` does.
    func journalReplacement(_ values: [String: PropertyListValue])

    /// Notes that the store has just taken its pending changes for a write (under the store's
    /// state lock): the journal's records up to here are released once that write is durable.
    func journalMark()

    /// Records that the change of `key` this store is about to make, at `generation`, comes from
    /// `origin` (a rollback, a migration), for the suite's history (docs/design.md, "History:
    /// origins"). Called under the store's state lock, right before the change.
    func journalOrigin(_ origin: DefaultsHistoryEntry.Origin, forKey key: String, generation: UInt64)

    /// Records an outside change a reload found (`old` → `new`) in the suite's history, once for
    /// every process that sees it (docs/design.md, "History: outside changes").
    func recordOutsideChange(from old: [String: PropertyListValue], to new: [String: PropertyListValue])

    /// Where the values are, for a person (``Defaults/sources(forKey:)``, `defaults explain`): a
    /// file's path, or a fleet suite's endpoints and prefix; nil for memory.
    var sourceDescription: String? { get }

    /// The revision of the values in use, when the storage has revisions (etcd's).
    var sourceRevision: Int64? { get }

    /// What runs a migration's steps on the suite's storage (``Defaults/migrate(to:_:)``); nil when
    /// the suite is not kept in a file.
    func fileMigrator() -> FileMigrator?
}

extension SuiteBackend {
    /// No journal (memory, remote backends).
    package func journal(_ value: PropertyListValue?, forKey key: String) {}
    /// No journal.
    package func journalReplacement(_ values: [String: PropertyListValue]) {}
    /// No journal.
    package func journalMark() {}
    /// No history.
    package func journalOrigin(_ origin: DefaultsHistoryEntry.Origin, forKey key: String, generation: UInt64) {}
    /// No history.
    package func recordOutsideChange(from old: [String: PropertyListValue], to new: [String: PropertyListValue]) {}
    /// Nowhere a person could look (memory).
    package var sourceDescription: String? { nil }
    /// No revisions.
    package var sourceRevision: Int64? { nil }
    /// Not a file.
    package func fileMigrator() -> FileMigrator? { nil }
}

/// What a backend's watch tells its store (docs/design.md, "Map: the three flows": an outside
/// edit and an etcd change).
package enum SuiteChange: Sendable {
    /// The suite may have changed: the store schedules a reload (its schedule coalesces them).
    case mayHaveChanged
    /// The suite is gone, and its absence counts: the store schedules a reload that reads an
    /// absent suite as empty.
    case goneForGood
    /// These keys now hold these values (nil: removed) at backend version `version`: the store
    /// applies them as they are (keys with unwritten local changes keep their local value),
    /// with no reload and no diff of the whole suite.
    case changed([SuiteKeyChange], version: UInt64)
}

/// One key's new value in the backend, as a backend that knows its changes reports it.
package struct SuiteKeyChange: Sendable, Equatable {
    package var key: String
    /// The new value; nil when the key was removed.
    package var value: PropertyListValue?

    package init(key: String, value: PropertyListValue?) {
        self.key = key
        self.value = value
    }
}

/// A suite's values at one version of its backend.
package struct SuiteSnapshot: Sendable, Equatable {
    package var values: [String: PropertyListValue]
    /// Grows with every new content the backend sees (a remote backend's revision).
    package var version: UInt64

    package init(values: [String: PropertyListValue] = [:], version: UInt64 = 0) {
        self.values = values
        self.version = version
    }
}

/// What a first read found.
package struct SuiteLoad: Sendable {
    /// The values (empty when there are none, or when they could not be read).
    package var snapshot = SuiteSnapshot()
    /// Why the values could not be read: the store starts empty and says so in `lastError`.
    package var error: DefaultsError?
    /// Problems to report that do not stop the store (an unsafe directory).
    package var warnings: [DefaultsError] = []

    package init(snapshot: SuiteSnapshot = SuiteSnapshot(), error: DefaultsError? = nil, warnings: [DefaultsError] = [])
    {
        self.snapshot = snapshot
        self.error = error
        self.warnings = warnings
    }
}

/// What a write stored.
package struct SuiteWritten: Sendable {
    /// The values now stored: what the backend held, with the write applied.
    package var snapshot: SuiteSnapshot
    /// The backend held exactly the values the write was made over: nothing from outside to deliver.
    package var unchangedByOthers: Bool
    /// The backend refused the changes for good (a remote store whose role may only read): nothing
    /// was written, `snapshot` holds the backend's values without them, and the store drops the
    /// changes (reads go back to the backend's values), records this error and throws it.
    package var refusal: DefaultsError?

    package init(snapshot: SuiteSnapshot, unchangedByOthers: Bool, refusal: DefaultsError? = nil) {
        self.snapshot = snapshot
        self.unchangedByOthers = unchangedByOthers
        self.refusal = refusal
    }
}

/// What a reload found.
package enum SuiteReload: Sendable {
    /// Nothing new (this store's own write, or a change not yet complete).
    case unchanged
    /// New values: the store installs them and delivers the difference (origin `.external`).
    case changed(SuiteSnapshot)
    /// The suite is there but unreadable (a corrupt file): the store keeps its values, records the
    /// error and reports it when `isNew`.
    case unreadable(DefaultsError, isNew: Bool)
    /// Looking failed (an I/O error): reported, nothing else changes.
    case failed(DefaultsError)
}
