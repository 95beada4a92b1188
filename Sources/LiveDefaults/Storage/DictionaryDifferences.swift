extension Dictionary {
    /// Visits each key whose value differs between `self` (old) and `new`, once, with its value in
    /// each (nil where it has none): the one dictionary diff that a suite's reload, the effective
    /// values' resolution and a fleet suite's range all use.
    ///
    /// - Parameters:
    ///   - new: The dictionary to compare with.
    ///   - value: An entry's value, nil for an entry that holds none (an effective-values entry
    ///     kept only because the key is observed).
    ///   - visit: Called with the key, its old value and its new value.
    ///
    /// Inlined, so that `value` is too: called through a closure for each of a 1,000-key suite's
    /// entries, it cost a flush 4 % more instructions.
    @inline(__always)
    package func forEachDifference<Compared: Equatable>(
        to new: Self, value: (Value) -> Compared?, _ visit: (Key, Compared?, Compared?) -> Void
    ) {
        for (key, entry) in self {
            let old = value(entry)
            let current = new[key].flatMap(value)
            if old != current { visit(key, old, current) }
        }
        for (key, entry) in new where self[key] == nil {
            if let current = value(entry) { visit(key, nil, current) }
        }
    }
}
