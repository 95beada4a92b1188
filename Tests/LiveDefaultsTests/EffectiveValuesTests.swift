import Testing

@testable import LiveDefaults

/// The effective-value table keeps, with each value, whether its key has observers of its own.
@Suite struct EffectiveValuesTests {
    @Test func aKeyWithoutAnEntryIsNeitherSetNorObserved() {
        var table = EffectiveValues(["a": 1], observedKeys: [])
        #expect(table[HashedKey("b")] == nil)
        #expect(!table.isObserved(HashedKey("b")))
        #expect(table.set(nil, for: HashedKey("b")) == nil)
        let change = table.set(2, for: HashedKey("b"))
        #expect(change?.old == nil && change?.isObserved == false)
        #expect(table[HashedKey("b")] == 2)
    }

    @Test func anObservedKeyKeepsItsEntryWithoutAValue() {
        var table = EffectiveValues([:], observedKeys: [HashedKey("flag")])
        #expect(table.isObserved(HashedKey("flag")))
        #expect(table[HashedKey("flag")] == nil)
        #expect(table.values.isEmpty)
        let set = table.set(true, for: HashedKey("flag"))
        #expect(set?.old == nil && set?.isObserved == true)
        let removed = table.set(nil, for: HashedKey("flag"))
        #expect(removed?.old == true && removed?.isObserved == true)
        #expect(table.isObserved(HashedKey("flag")))
        table.setObserved(HashedKey("flag"), false)
        #expect(!table.isObserved(HashedKey("flag")))
        #expect(table.set(nil, for: HashedKey("flag")) == nil)
    }

    @Test func unchangedValuesReportNoChange() {
        var table = EffectiveValues(["a": "x"], observedKeys: [HashedKey("a")])
        #expect(table.set("x", for: HashedKey("a")) == nil)
        #expect(table.set("y", for: HashedKey("a"))?.old == "x")
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
