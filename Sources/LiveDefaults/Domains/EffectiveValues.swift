/// What each key of a ``Defaults`` resolves to through the search list, and which keys have
/// observers of their own: one table, so that a write finds both with one lookup.
///
/// Every key with an observer has an entry (with no value when it resolves to nothing), so a key
/// without an entry has none. A write therefore never looks in the observer table: with 100,000
/// observers of other keys that lookup missed the cache on every write.
///
/// The table is made when it is first needed, not at open (docs/design.md, "Opening a suite: the
/// effective values made on demand"): until a write, an observer or enough reads, the values stay
/// in the resolved dictionary they came in — at open, usually the suite's own decoded values,
/// shared — and a read looks the `String` up there. A suite opened to read a flag or two never
/// builds a second table of its values (a 1,000-key open wrote about 100 KB and 250,000
/// instructions for it).
struct EffectiveValues {
    private struct Entry {
        var value: PropertyListValue?
        var isObserved: Bool
    }

    private var entries: [HashedKey: Entry] = [:]
    /// The resolved values not yet put in ``entries``: nil once they are (and then for good, until
    /// the next resolution of every key). Never set while a key is observed.
    private var unhashed: [String: PropertyListValue]?
    /// The reads left before ``entries`` is made anyway: as many as there are values (at least
    /// 16), so that the slower reads cost at most about what making the table does.
    private var readsBeforeHashing = 0

    init() {}

    /// Whether the table is made.
    @inline(__always)
    var isTableMade: Bool { unhashed == nil }

    /// Resolved `values`, with the keys `observedKeys` marked. With no key observed the table is
    /// made on demand (``makeTable()``).
    init(_ values: [String: PropertyListValue], observedKeys: some Sequence<HashedKey>) {
        var observed = observedKeys.makeIterator()
        guard let first = observed.next() else {
            if !values.isEmpty {
                unhashed = values
                readsBeforeHashing = Swift.max(16, values.count)
            }
            return
        }
        entries = Self.table(values)
        entries[first, default: Entry(value: nil, isObserved: false)].isObserved = true
        while let key = observed.next() {
            entries[key, default: Entry(value: nil, isObserved: false)].isObserved = true
        }
    }

    /// The table of `values`, none observed.
    private static func table(_ values: [String: PropertyListValue]) -> [HashedKey: Entry] {
        // Made at its size: `reserveCapacity` on the empty table took the generic resize path and
        // the dictionary's metadata accessor (docs/design.md, "Opening a suite: what a cold open does").
        var entries = [HashedKey: Entry](minimumCapacity: values.count)
        for (key, value) in values { entries[HashedKey(key)] = Entry(value: consume value, isObserved: false) }
        return entries
    }

    /// Puts the values not yet in the table into it.
    @inline(never)
    private mutating func makeTable() {
        guard let values = unhashed.take() else { return }
        entries = Self.table(values)
    }

    /// The value of `key`; nil when it resolves to nothing. Looked up in the resolved values while
    /// the table is not made. Reads of a `Defaults` go through ``tableValue(_:)`` and
    /// ``countedRead(_:)``, which counts them.
    @inline(__always)
    subscript(key: HashedKey) -> PropertyListValue? {
        if _slowPath(unhashed != nil) { return unhashed?[key.string] }
        return entries[key]?.value
    }

    /// The value of `key` in the table, which must be made (``isTableMade``). A read of a
    /// `Defaults` is this once the table is made, else ``countedRead(_:)``: one compare of a
    /// pointer with nil on the read path, and the table's lookup stays a non-mutating one (a
    /// mutating get copied the value out and destroyed it, 53 instructions a read; a mutating read
    /// taking a closure, 18).
    @inline(__always)
    func tableValue(_ key: HashedKey) -> PropertyListValue? {
        entries[key]?.value
    }

    /// A read while the table is not made: counted, and the table made once enough reads have
    /// (``readsBeforeHashing``).
    @inline(never)
    mutating func countedRead(_ key: HashedKey) -> PropertyListValue? {
        readsBeforeHashing -= 1
        if readsBeforeHashing > 0 { return unhashed?[key.string] }
        makeTable()
        return entries[key]?.value
    }

    /// Every key that has a value, with it.
    var values: [(key: String, value: PropertyListValue)] {
        if let unhashed { return unhashed.map { ($0.key, $0.value) } }
        return entries.compactMap { entry in entry.value.value.map { (entry.key.string, $0) } }
    }

    /// What ``set(_:for:old:keepingOld:)`` did.
    enum Update {
        case unchanged
        /// Changed; the key has no observers of its own.
        case changed
        /// Changed; the key has observers of its own.
        case changedObserved
    }

    /// Sets the value of `key`.
    ///
    /// - Parameters:
    ///   - new: The new value; nil when the key resolves to nothing.
    ///   - key: The key.
    ///   - old: Receives the value replaced (nil when there was none) when the key has observers of
    ///     its own or `keepingOld`; left as it is otherwise. Pass nil.
    ///   - keepingOld: Whether to give the old value even when the key has no observers of its own
    ///     (an observer of every key).
    /// - Returns: Whether the value changed, and whether the key has observers of its own.
    ///
    /// No optional tuple comes back: one held the old value, which every `set` copied out and
    /// destroyed even with no observer (docs/design.md, "Observation: the `set` path").
    @inline(__always)
    mutating func set(
        _ new: PropertyListValue?, for key: HashedKey, old: inout PropertyListValue?, keepingOld: Bool
    ) -> Update {
        if _slowPath(unhashed != nil) { makeTable() }
        guard let index = entries.index(forKey: key) else {
            // No entry: no value and no observer.
            guard let new else { return .unchanged }
            entries[key] = Entry(value: new, isObserved: false)
            return .changed
        }
        // Compared and replaced in place, rather than copying the entry out and storing it back.
        let update = Self.replace(&entries.values[index], with: new, old: &old, keepingOld: keepingOld)
        if update == .changed, case .none = new { entries.remove(at: index) }
        return update
    }

    @inline(__always)
    private static func replace(
        _ entry: inout Entry, with new: PropertyListValue?, old: inout PropertyListValue?, keepingOld: Bool
    ) -> Update {
        if entry.value == new { return .unchanged }
        if entry.isObserved || keepingOld { swap(&old, &entry.value) }
        entry.value = new
        return entry.isObserved ? .changedObserved : .changed
    }

    /// Records whether `key` has observers of its own.
    mutating func setObserved(_ key: HashedKey, _ isObserved: Bool) {
        makeTable()
        if isObserved {
            entries[key, default: Entry(value: nil, isObserved: false)].isObserved = true
        } else if let index = entries.index(forKey: key) {
            if entries.values[index].value == nil {
                entries.remove(at: index)
            } else {
                entries.values[index].isObserved = false
            }
        }
    }

    /// The keys whose values differ between `self` and `other`, with the value in each.
    func differences(from other: EffectiveValues) -> [(
        key: HashedKey, old: PropertyListValue?, new: PropertyListValue?
    )] {
        var changes: [(key: HashedKey, old: PropertyListValue?, new: PropertyListValue?)] = []
        if let mine = unhashed, let theirs = other.unhashed {
            mine.forEachDifference(to: theirs, value: { $0 }) { changes.append((HashedKey($0), $1, $2)) }
            return changes
        }
        var old = self
        var new = other
        old.makeTable()
        new.makeTable()
        old.entries.forEachDifference(to: new.entries, value: \.value) { changes.append(($0, $1, $2)) }
        return changes
    }

    /// Whether `key` has observers of its own.
    func isObserved(_ key: HashedKey) -> Bool {
        // No key is observed while the table is not made.
        entries[key]?.isObserved ?? false
    }
}
