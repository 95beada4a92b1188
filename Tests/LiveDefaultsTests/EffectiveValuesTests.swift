import Testing

@testable import LiveDefaults

/// The effective-value table keeps, with each value, whether its key has observers of its own.
@Suite struct EffectiveValuesTests {
    /// One `set`: what it did, and the old value it gave (nil when it gave none).
    private func set(
        _ table: inout EffectiveValues, _ new: PropertyListValue?, _ key: String, keepingOld: Bool = false
    ) -> (update: EffectiveValues.Update, old: PropertyListValue?) {
        var old: PropertyListValue? = nil
        let update = table.set(new, for: HashedKey(key), old: &old, keepingOld: keepingOld)
        return (update, old)
    }

    @Test func aKeyWithoutAnEntryIsNeitherSetNorObserved() {
        var table = EffectiveValues(["a": 1], observedKeys: [])
        #expect(table[HashedKey("b")] == nil)
        #expect(!table.isObserved(HashedKey("b")))
        #expect(set(&table, nil, "b").update == .unchanged)
        let change = set(&table, 2, "b", keepingOld: true)
        #expect(change.update == .changed && change.old == nil)
        #expect(table[HashedKey("b")] == 2)
    }

    @Test func anObservedKeyKeepsItsEntryWithoutAValue() {
        var table = EffectiveValues([:], observedKeys: [HashedKey("flag")])
        #expect(table.isObserved(HashedKey("flag")))
        #expect(table[HashedKey("flag")] == nil)
        #expect(table.values.isEmpty)
        let set1 = set(&table, true, "flag")
        #expect(set1.update == .changedObserved && set1.old == nil)
        let removed = set(&table, nil, "flag")
        #expect(removed.update == .changedObserved && removed.old == true)
        #expect(table.isObserved(HashedKey("flag")))
        table.setObserved(HashedKey("flag"), false)
        #expect(!table.isObserved(HashedKey("flag")))
        #expect(set(&table, nil, "flag").update == .unchanged)
    }

    @Test func unchangedValuesReportNoChange() {
        var table = EffectiveValues(["a": "x"], observedKeys: [HashedKey("a")])
        #expect(set(&table, "x", "a").update == .unchanged)
        let change = set(&table, "y", "a")
        #expect(change.update == .changedObserved && change.old == "x")
        #expect(table[HashedKey("a")] == "y")
    }

    /// The old value is given for an observed key, or when asked for (an observer of every key),
    /// and only then: a `set` with no observer does not copy it out.
    @Test func theOldValueIsGivenOnlyWhenObservedOrAskedFor() {
        var table = EffectiveValues(["plain": 1, "watched": 2], observedKeys: [HashedKey("watched")])
        let plain = set(&table, 10, "plain")
        #expect(plain.update == .changed && plain.old == nil)
        #expect(table[HashedKey("plain")] == 10)
        let asked = set(&table, 11, "plain", keepingOld: true)
        #expect(asked.update == .changed && asked.old == 10)
        let watched = set(&table, 20, "watched")
        #expect(watched.update == .changedObserved && watched.old == 2)
        #expect(table[HashedKey("watched")] == 20)
    }

    /// A key with no observer loses its entry when its value goes; an observed one keeps it.
    @Test func aRemovedUnobservedKeyLosesItsEntry() {
        var table = EffectiveValues(["plain": 1, "watched": 2], observedKeys: [HashedKey("watched")])
        let removed = set(&table, nil, "plain", keepingOld: true)
        #expect(removed.update == .changed && removed.old == 1)
        #expect(table[HashedKey("plain")] == nil)
        #expect(!table.values.contains { $0.key == "plain" })
        // No entry left: removing it again changes nothing.
        #expect(set(&table, nil, "plain").update == .unchanged)
        #expect(set(&table, nil, "watched").update == .changedObserved)
        #expect(table.isObserved(HashedKey("watched")))
    }

    @Test func differencesListChangedAddedAndRemovedValues() {
        let old = EffectiveValues(["same": 1, "changed": 2, "removed": 3], observedKeys: [HashedKey("watched")])
        let new = EffectiveValues(["same": 1, "changed": 20, "added": 4], observedKeys: [HashedKey("watched")])
        let changes = old.differences(from: new).map { ($0.key.string, $0.old, $0.new) }
        #expect(changes.count == 3)
        #expect(changes.contains { $0 == ("changed", 2, 20) })
        #expect(changes.contains { $0 == ("removed", 3, nil) })
        #expect(changes.contains { $0 == ("added", nil, 4) })
    }
}
