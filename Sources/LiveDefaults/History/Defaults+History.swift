import Foundation

/// Where a store's history is read from (docs/design.md, "History: sources"): a file suite's log
/// today; a fleet suite's audit keys plug in here.
package protocol SuiteHistorySource: Sendable {
    /// Every entry kept, oldest first, and whether older ones were pruned.
    func readHistory() throws(DefaultsError) -> SuiteHistory
    /// The entries `query` selects, oldest first (by default, ``readHistory()`` filtered; a source
    /// may read less).
    func entries(_ query: HistoryQuery) throws(DefaultsError) -> [DefaultsHistoryEntry]
}

/// A suite's history as a source gives it.
package struct SuiteHistory: Sendable {
    /// The entries kept, oldest first.
    package var entries: [DefaultsHistoryEntry]
    /// Whether older entries were pruned.
    package var isPruned: Bool
    /// The number the next entry will have.
    package var nextID: UInt64

    package init(entries: [DefaultsHistoryEntry], isPruned: Bool, nextID: UInt64) {
        self.entries = entries
        self.isPruned = isPruned
        self.nextID = nextID
    }

    /// What rolling `key` (every key when nil) back to `point` sets, each key at most once, in the
    /// order of the changes undone: the value each key had at that point.
    ///
    /// - Throws: ``DefaultsError/Code/historyUnavailable`` when changes after the point were
    ///   pruned, or the point is past the history's end.
    package func rollback(of key: String?, to point: DefaultsHistoryPoint, suite: String) throws(DefaultsError)
        -> [(key: String, value: PropertyListValue?)]
    {
        let after: ArraySlice<DefaultsHistoryEntry>
        switch point {
        case .entry(let id):
            guard id < nextID else {
                throw DefaultsError(
                    .historyUnavailable,
                    "The history of suite \"\(suite)\" has no entry \(id) (its last is \(nextID - 1)); nothing was changed.",
                    suite: suite)
            }
            if let first = entries.first?.id, first > id + 1 {
                throw DefaultsError(
                    .historyUnavailable,
                    "Entry \(id) of suite \"\(suite)\" was pruned: the history keeps entries from \(first - 1) on, "
                        + "so the changes right after it are gone; nothing was changed.",
                    suite: suite)
            }
            after = entries.drop { $0.id <= id }
        case .date(let date):
            if isPruned, let first = entries.first, first.date > date {
                throw DefaultsError(
                    .historyUnavailable,
                    "The history of suite \"\(suite)\" was pruned before \(first.date.formatted(.iso8601)) (entry "
                        + "\(first.id)), after \(date.formatted(.iso8601)): changes after that moment are gone; "
                        + "nothing was changed.",
                    suite: suite)
            }
            after = entries.drop { $0.date <= date }
        }
        var seen = Set<String>()
        var values: [(key: String, value: PropertyListValue?)] = []
        for entry in after where key == nil || entry.key == key {
            guard seen.insert(entry.key).inserted else { continue }
            values.append((entry.key, entry.oldValue))
        }
        return values
    }
}

extension HistoryLog: SuiteHistorySource {
    package func readHistory() throws(DefaultsError) -> SuiteHistory {
        let contents = read()
        return SuiteHistory(
            entries: contents.entries(suite: suite), isPruned: contents.isPruned, nextID: contents.nextSequence)
    }
}

extension FileBackend {
    /// The suite file's log.
    package var historySource: (any SuiteHistorySource)? { historyLog }
}

extension SuiteStore {
    /// Where this store's history is kept; nil for a backend that keeps none.
    package var historySource: (any SuiteHistorySource)? {
        (backend as? any HistoryKeepingBackend)?.historySource
    }
}

/// A backend that keeps its suite's history (files; a fleet suite's, in its audit keys).
package protocol HistoryKeepingBackend: SuiteBackend {
    var historySource: (any SuiteHistorySource)? { get }
}

extension FileBackend: HistoryKeepingBackend {}

extension Defaults {
    /// The suite's history: the changes LiveDefaults wrote to it, oldest first (the newest last).
    ///
    /// This process's pending changes are written first, so they are in it. Only suites kept in
    /// files or in etcd have a history; the log keeps the last 10,000 entries or 4 MiB by default
    /// (``historyRetention``), a fleet suite the number its operator sets.
    ///
    /// ```swift
    /// let defaults = try Defaults(suiteName: "com.example.app")
    /// for entry in try defaults.history(forKey: "fontSize", limit: 5) {
    ///     print(entry.id, entry.date, entry.oldValue as Any, "→", entry.newValue as Any, entry.origin)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - key: The key; nil for every key.
    ///   - since: Only changes written at or after this moment; nil for all.
    ///   - limit: At most this many, the newest; nil for all.
    /// - Returns: The entries, oldest first.
    /// - Throws: ``DefaultsError`` (`writeFailed`) when the pending changes cannot be written, or
    ///   (`historyUnavailable`) for a suite that keeps no history (in memory).
    public func history(forKey key: String? = nil, since: Date? = nil, limit: Int? = nil) throws
        -> [DefaultsHistoryEntry]
    {
        try suite.flush()
        return try historySource().entries(HistoryQuery(key: key, since: since.map { .date($0) }, limit: limit))
    }

    /// Rolls `key` (every key when nil) back to `point`: each change written after it is undone,
    /// by a new change recorded with origin ``DefaultsHistoryEntry/Origin/rollback``.
    ///
    /// Each value is checked against the suite's schema, and a forced key is refused, before
    /// anything changes. Observers in every process see the rollback as any change, with old
    /// and new values. It is written at once.
    ///
    /// ```swift
    /// let defaults = try Defaults(suiteName: "com.example.app")
    /// try defaults.rollBack("fontSize", to: .date(Date().addingTimeInterval(-3600)))
    /// ```
    ///
    /// - Parameters:
    ///   - key: The key; nil for every key of the suite.
    ///   - point: The entry or the moment to go back to.
    ///   - schema: The schema to check against; nil for the suite's installed schema, if any.
    /// - Returns: The keys changed.
    /// - Throws: ``DefaultsError``: `historyUnavailable` when the changes after `point` were pruned
    ///   (nothing changes), `forcedKey` for a forced key, `schemaMismatch` for a value the schema
    ///   refuses, `writeFailed` when it cannot be written.
    @discardableResult
    public func rollBack(_ key: String? = nil, to point: DefaultsHistoryPoint, schema: DefaultsSchema? = nil) throws
        -> [String]
    {
        try suite.flush()
        let history = try historySource().readHistory()
        let current = suite.values()
        let planned = try history.rollback(of: key, to: point, suite: suiteName).filter { current[$0.key] != $0.value }
        guard !planned.isEmpty else { return [] }
        let schema = try schema ?? DefaultsSchema.installed(forSuite: suiteName)
        for (key, value) in planned {
            if objectIsForced(forKey: key) {
                throw DefaultsError(
                    .forcedKey,
                    "The key \"\(key)\" of suite \"\(suiteName)\" is forced by the administrator"
                        + (forcingSource(ofKey: key).map { " in \($0)" } ?? "") + "; nothing was rolled back.",
                    suite: suiteName)
            }
            if let refusal = schema?.rollbackRefusal(of: key, to: value, suite: suiteName, kind: "suite") {
                throw refusal
            }
        }
        suite.set(planned, origin: .rollback)
        try suite.flush()
        return planned.map(\.key)
    }

    private func historySource() throws(DefaultsError) -> any SuiteHistorySource {
        guard let source = suite.historySource else {
            throw DefaultsError(
                .historyUnavailable,
                "Suite \"\(suiteName)\" keeps no history (only suites kept in files or in etcd do).",
                suite: suiteName)
        }
        return source
    }
}

extension DefaultsSchema {
    /// Why rolling `key` back to `value` is refused: a value the schema's entry for the key does
    /// not admit (a removal always is admitted); nil when it is admitted. For a local suite and a
    /// fleet suite alike (`kind`: "suite", "fleet suite").
    package func rollbackRefusal(of key: String, to value: PropertyListValue?, suite: String, kind: String)
        -> DefaultsError?
    {
        guard let value, let entry = self[key] else { return nil }
        let mismatches = entry.admit(value, textIsUntyped: false).mismatches
        guard !mismatches.isEmpty else { return nil }
        return DefaultsError(
            .schemaMismatch,
            "Rolling back \"\(key)\" of \(kind) \"\(suite)\" would set a value the schema refuses ("
                + mismatches.map { "\($0.path) \($0.reason)" }.joined(separator: "; ") + "); nothing was rolled back.",
            suite: suite)
    }
}
