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

    // MARK: The table made on demand

    /// A read as `Defaults` makes one: counted, then looked up.
    private func read(_ table: inout EffectiveValues, _ key: String) -> PropertyListValue? {
        table.isTableMade ? table.tableValue(HashedKey(key)) : table.countedRead(HashedKey(key))
    }

    /// Values with no key observed stay in their dictionary; reads find them there, by `String`
    /// equality (the KELVIN SIGN is canonically an ASCII "K"), until enough reads make the table.
    @Test func readsBeforeTheTableIsMadeFindWhatItWouldFind() {
        var table = EffectiveValues(["K": 1, "b": "two"], observedKeys: [])
        #expect(!table.isTableMade)
        for _ in 0..<3 {
            #expect(read(&table, "K") == 1)
            #expect(read(&table, "\u{212A}") == 1)
            #expect(read(&table, "b") == "two")
            #expect(read(&table, "missing") == nil)
        }
        #expect(!table.isTableMade)
        for _ in 0..<4 { _ = read(&table, "K") }
        // The 16th read made it.
        #expect(table.isTableMade)
        #expect(read(&table, "\u{212A}") == 1)
        #expect(read(&table, "b") == "two")
        #expect(read(&table, "missing") == nil)
    }

    /// A `set`, or an observer, makes the table first, and works as on one made at once.
    @Test func aSetOrAnObserverMakesTheTable() {
        var table = EffectiveValues(["a": 1, "b": 2], observedKeys: [])
        #expect(table.values.count == 2)
        let change = set(&table, 10, "a", keepingOld: true)
        #expect(table.isTableMade)
        #expect(change.update == .changed && change.old == 1)
        #expect(table[HashedKey("a")] == 10 && table[HashedKey("b")] == 2)
        var observed = EffectiveValues(["a": 1], observedKeys: [])
        observed.setObserved(HashedKey("a"), true)
        #expect(observed.isTableMade && observed.isObserved(HashedKey("a")))
        let watched = set(&observed, 5, "a")
        #expect(watched.update == .changedObserved && watched.old == 1)
    }

    /// The differences are the same whichever of the two has its table made.
    @Test func differencesDoNotDependOnWhetherTheTablesAreMade() {
        let oldValues: [String: PropertyListValue] = ["same": 1, "changed": 2, "removed": 3]
        let newValues: [String: PropertyListValue] = ["same": 1, "changed": 20, "added": 4]
        func table(_ values: [String: PropertyListValue], made: Bool) -> EffectiveValues {
            var table = EffectiveValues(values, observedKeys: [])
            if made { table.setObserved(HashedKey("unrelated"), false) }
            #expect(table.isTableMade == made)
            return table
        }
        for (oldMade, newMade) in [(false, false), (false, true), (true, false), (true, true)] {
            let changes = table(oldValues, made: oldMade).differences(from: table(newValues, made: newMade))
                .map { ($0.key.string, $0.old, $0.new) }
            #expect(changes.count == 3, "old made: \(oldMade), new made: \(newMade)")
            #expect(changes.contains { $0 == ("changed", 2, 20) })
            #expect(changes.contains { $0 == ("removed", 3, nil) })
            #expect(changes.contains { $0 == ("added", nil, 4) })
        }
    }
}
