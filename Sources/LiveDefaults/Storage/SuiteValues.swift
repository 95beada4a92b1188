/// One suite's values in this process, as a pure value: the backend's values at a version, this
/// process's changes not yet written, and what reads see — the first with the second laid over it.
///
/// No locks, no I/O and no callbacks (as ``WatchRegistry`` is for the watcher): ``SuiteStore``
/// keeps it under its state lock and does the I/O through its backend. Every change returns the
/// per-key old and new values it made. A write and a reload install new backend values through
/// the same merge, ``install(_:after:)`` (docs/design.md, "Store model and backends").
package struct SuiteValues: Sendable {
    /// A change of this process not yet written: nil is a removal. The generation orders them, so
    /// a change made while a write was under way is not taken for the one written.
    package struct Pending: Sendable, Equatable {
        package var value: PropertyListValue?
        package var generation: UInt64
    }

    /// What reads see: `stored` with `pending` laid over it (or, while the whole suite is being
    /// replaced, the replacement with the changes made since).
    package private(set) var current: [String: PropertyListValue]
    /// The backend's values at ``version``, as last loaded, written or reloaded.
    package private(set) var stored: [String: PropertyListValue]
    /// The backend's version of ``stored`` (for files, how many contents this process has seen; a
    /// remote backend's revision).
    package private(set) var version: UInt64
    /// This process's changes not yet written, by the key's ``HashedKey``: a `set` hashes the key
    /// once, for this table and the reading `Defaults`' effective values, instead of a second
    /// SipHash of the `String` (about 300 instructions of every `set`, docs/performance.md,
    /// "Issue 40"). A write sends them by `String` (``outgoing()``).
    private var pending: [HashedKey: Pending] = [:]
    /// The generation of a replacement of the whole suite not yet written, nil when none.
    package private(set) var wholeReplacement: UInt64?
    private var generation: UInt64 = 0

    package init(stored: [String: PropertyListValue] = [:], version: UInt64 = 0) {
        self.current = stored
        self.stored = stored
        self.version = version
    }

    /// Whether this process has changes not yet written.
    package var hasPendingChanges: Bool { !pending.isEmpty || wholeReplacement != nil }

    // MARK: This process's changes

    /// Sets (nil: removes) `key`.
    ///
    /// - Returns: Whether reads see a change (false when the value was already that). (No
    ///   ``StoredChange``: this is every write's path, and no reader needs the old value.)
    @discardableResult
    package mutating func set(_ value: PropertyListValue?, forKey key: String) -> Bool {
        set(value, forKey: HashedKey(key))
    }

    /// ``set(_:forKey:)`` with the key already hashed (every `set` of a store: the reading
    /// `Defaults` use the same hashed key).
    @inline(__always)
    mutating func set(_ value: PropertyListValue?, forKey key: HashedKey) -> Bool {
        generation += 1
        pending[key] = Pending(value: value, generation: generation)
        // One lookup, not a comparison and then a store (a SipHash each).
        let old: PropertyListValue?
        if let value {
            old = current.updateValue(value, forKey: key.string)
        } else {
            old = current.removeValue(forKey: key.string)
        }
        return old != value
    }

    /// The generation of this process's unwritten change of `key`, nil when it has none.
    package func pendingGeneration(forKey key: String) -> UInt64? {
        pending[HashedKey(key)]?.generation
    }

    /// Replaces every value (empty removes them all: the next write deletes the suite).
    ///
    /// - Returns: The changes reads see.
    package mutating func replaceAll(with values: [String: PropertyListValue]) -> [StoredChange] {
        generation += 1
        let changes = Self.changes(from: current, to: values)
        current = values
        pending = [:]
        wholeReplacement = generation
        return changes
    }

    // MARK: Writing and reloading

    /// Takes ``stored`` out (leaving it empty) for a write to merge this process's changes into in
    /// place; ``install(_:version:after:unchangedByOthers:)`` or ``putBackStored(_:)`` ends the
    /// write. Left in place, the merge would copy the whole dictionary on every flush, as the
    /// copy here would share its storage (docs/design.md, "Store model and backends").
    package mutating func takeStored() -> [String: PropertyListValue] {
        var taken: [String: PropertyListValue] = [:]
        swap(&taken, &stored)
        return taken
    }

    /// Puts back what ``takeStored()`` took, after a write that stored nothing.
    package mutating func putBackStored(_ values: [String: PropertyListValue]) {
        stored = values
    }

    /// What a write sends to the backend, nil when there is nothing to write.
    package func outgoing() -> SuiteWrite? {
        if let wholeReplacement { return .whole(current, generation: wholeReplacement) }
        if pending.isEmpty { return nil }
        var changes: [String: Pending] = [:]
        changes.reserveCapacity(pending.count)
        for (key, change) in pending { changes[key.string] = change }
        return .changes(changes)
    }

    /// Installs the backend's `values` at `version` — after a write of `written`, or, with nil,
    /// after a reload — and lays this process's changes still unwritten over them: the one merge
    /// of flush and reload.
    ///
    /// - Parameters:
    ///   - values: The values the backend holds now.
    ///   - version: Their version.
    ///   - written: The write this process just made, or nil after a reload.
    ///   - unchangedByOthers: The backend says `values` are exactly the last stored values with
    ///     `written` applied (no one else wrote in between), so reads already see them: nothing to
    ///     compare (a thousand-key comparison on every flush otherwise).
    /// - Returns: The changes reads see: values others wrote, net of this process's own.
    package mutating func install(
        _ values: [String: PropertyListValue], version: UInt64, after written: SuiteWrite?,
        unchangedByOthers: Bool = false
    ) -> [StoredChange] {
        stored = values
        self.version = version
        switch written {
        case .changes(let changes)?:
            // `written` is what ``outgoing()`` took: every change pending then, at its generation;
            // a change made since has a later one. So the changes written are the pending ones at
            // or below the last generation written, found without hashing each key again (a flush
            // of a thousand new keys hashed them all once more).
            let lastWritten = changes.values.reduce(0) { max($0, $1.generation) }
            if pending.values.allSatisfy({ $0.generation <= lastWritten }) {
                pending.removeAll(keepingCapacity: true)
            } else {
                pending = pending.filter { $0.value.generation > lastWritten }
            }
        case .whole(_, let generation)?:
            if wholeReplacement == generation { wholeReplacement = nil }
        case nil:
            break
        }
        if unchangedByOthers, case .changes? = written, wholeReplacement == nil { return [] }
        // A replacement not yet written hides the stored values entirely.
        if wholeReplacement != nil { return [] }
        var merged = values
        for (key, change) in pending { merged[key.string] = change.value }
        let changes = Self.changes(from: current, to: merged)
        current = merged
        return changes
    }

    /// Applies a backend's own per-key changes at `version` (a backend that knows what changed,
    /// as the fleet mirror does): the other keys are neither copied nor compared. As in
    /// ``install(_:version:after:unchangedByOthers:)``, keys with changes of this process not yet
    /// written keep their local value, and a replacement of the whole suite not yet written hides
    /// the stored values entirely.
    ///
    /// - Returns: The changes reads see.
    package mutating func apply(_ changes: [SuiteKeyChange], version: UInt64) -> [StoredChange] {
        self.version = version
        var seen: [StoredChange] = []
        for change in changes {
            if let value = change.value {
                stored[change.key] = value
            } else {
                stored.removeValue(forKey: change.key)
            }
            guard wholeReplacement == nil, pending[HashedKey(change.key)] == nil else { continue }
            let old: PropertyListValue?
            if let value = change.value {
                old = current.updateValue(value, forKey: change.key)
            } else {
                old = current.removeValue(forKey: change.key)
            }
            if old != change.value { seen.append(StoredChange(key: change.key, old: old, new: change.value)) }
        }
        return seen
    }

    /// The per-key differences from `old` to `new`.
    package static func changes(
        from old: [String: PropertyListValue], to new: [String: PropertyListValue]
    ) -> [StoredChange] {
        var changes: [StoredChange] = []
        old.forEachDifference(to: new, value: { $0 }) { changes.append(StoredChange(key: $0, old: $1, new: $2)) }
        return changes
    }
}

/// What a write sends to a backend: this process's changes, or a replacement of the whole suite.
package enum SuiteWrite: Sendable, Equatable {
    /// Sets and removals (nil) of single keys; other keys keep what the backend holds.
    case changes([String: SuiteValues.Pending])
    /// Every value of the suite; empty removes the suite.
    case whole([String: PropertyListValue], generation: UInt64)

    /// The values after this write is applied to `stored`: each key keeps the last write.
    package func applied(to stored: [String: PropertyListValue]) -> [String: PropertyListValue] {
        switch self {
        case .whole(let values, _):
            return values
        case .changes(let changes):
            var merged = stored
            for (key, change) in changes { merged[key] = change.value }
            return merged
        }
    }

    /// Whether this write removes the whole suite (as `defaults delete <domain>` does).
    package var removesSuite: Bool {
        if case .whole(let values, _) = self { return values.isEmpty }
        return false
    }
}

/// One key's stored value changing: the values it changed between, captured when the change was
/// applied.
package struct StoredChange: Sendable, Equatable {
    package var key: String
    package var old: PropertyListValue?
    package var new: PropertyListValue?

    package init(key: String, old: PropertyListValue?, new: PropertyListValue?) {
        self.key = key
        self.old = old
        self.new = new
    }
}
