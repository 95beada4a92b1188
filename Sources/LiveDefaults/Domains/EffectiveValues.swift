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
        // Made at its size: `reserveCapacity` on the empty table took the generic resize path and
        // the dictionary's metadata accessor (docs/design.md, "Opening a suite: what a cold open does").
        entries = Dictionary(minimumCapacity: values.count)
        for (key, value) in values { entries[HashedKey(key)] = Entry(value: consume value, isObserved: false) }
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
