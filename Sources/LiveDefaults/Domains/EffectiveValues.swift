/// What each key of a ``Defaults`` resolves to through the search list, and which keys have
/// observers of their own: one table, so that a write finds both with one lookup.
///
/// Every key with an observer has an entry (with no value when it resolves to nothing), so a key
/// without an entry has none. A write therefore never looks in the observer table: with 100,000
/// observers of other keys that lookup missed the cache on every write.
struct EffectiveValues {
    private struct Entry {
        var value: PropertyListValue?
        var isObserved: Bool
    }

    private var entries: [HashedKey: Entry] = [:]

    init() {}

    /// Resolved `values`, with the keys `observedKeys` marked.
    init(_ values: [String: PropertyListValue], observedKeys: some Sequence<HashedKey>) {
        entries.reserveCapacity(values.count)
        for (key, value) in values { entries[HashedKey(key)] = Entry(value: value, isObserved: false) }
        for key in observedKeys { entries[key, default: Entry(value: nil, isObserved: false)].isObserved = true }
    }

    /// The value of `key`; nil when it resolves to nothing.
    @inline(__always)
    subscript(key: HashedKey) -> PropertyListValue? {
        entries[key]?.value
    }

    /// Every key that has a value, with it.
    var values: [(key: String, value: PropertyListValue)] {
        entries.compactMap { entry in entry.value.value.map { (entry.key.string, $0) } }
    }

    /// Sets the value of `key`.
    ///
    /// - Returns: nil when the value did not change; else the old value and whether the key has
    ///   observers of its own.
    mutating func set(_ new: PropertyListValue?, for key: HashedKey) -> (old: PropertyListValue?, isObserved: Bool)? {
        guard let index = entries.index(forKey: key) else {
            // No entry: no value and no observer.
            guard let new else { return nil }
            entries[key] = Entry(value: new, isObserved: false)
            return (nil, false)
        }
        // Compared and swapped in place, rather than copying the entry out and storing the new
        // value back: fewer outlined copies of the values on every `set` (docs/performance.md,
        // "Issue 40").
        let change = Self.replace(&entries.values[index], with: new)
        if let change, new == nil, !change.isObserved { entries.remove(at: index) }
        return change
    }

    @inline(__always)
    private static func replace(
        _ entry: inout Entry, with new: PropertyListValue?
    ) -> (old: PropertyListValue?, isObserved: Bool)? {
        if entry.value == new { return nil }
        var old = new
        swap(&old, &entry.value)
        return (old, entry.isObserved)
    }

    /// Records whether `key` has observers of its own.
    mutating func setObserved(_ key: HashedKey, _ isObserved: Bool) {
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
        entries.forEachDifference(to: other.entries, value: \.value) { changes.append(($0, $1, $2)) }
        return changes
    }

    /// Whether `key` has observers of its own.
    func isObserved(_ key: HashedKey) -> Bool {
        entries[key]?.isObserved ?? false
    }
}
