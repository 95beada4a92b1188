import Testing

@testable import LiveDefaults

/// The observer table's bookkeeping of a key's observers: one kept as itself, several in a dictionary
/// (``KeyObservers``), and the passages between the two as observers come and go.
@Suite struct ObserverTableTests {
    private func observer(_ key: String?, _ options: ObservationOptions = []) -> Observer {
        Observer(key: key, options: options, queue: nil) { _ in }
    }

    /// The observers a change of `key` is queued for, in no particular order; the queue is emptied.
    private func queuedFor(_ key: String, in table: inout ObserverTable) -> Set<ObjectIdentifier> {
        table.enqueue(key: key, old: nil, new: .integer(1), origin: .local)
        let queued = Set(table.queue.map { ObjectIdentifier($0.observer) })
        #expect(table.queue.count == queued.count, "one change per observer")
        table.queue.removeAll()
        return queued
    }

    @Test func oneThenSeveralThenOneThenNoneObserversOfAKey() {
        var table = ObserverTable()
        let first = observer("k")
        let second = observer("k")
        let other = observer("other")
        table.add(first)
        table.add(other)
        #expect(queuedFor("k", in: &table) == [ObjectIdentifier(first)])
        table.add(second)
        #expect(queuedFor("k", in: &table) == [ObjectIdentifier(first), ObjectIdentifier(second)])
        table.remove(first)
        #expect(queuedFor("k", in: &table) == [ObjectIdentifier(second)])
        // Back to one observer, the key keeps it as itself again (no dictionary copied per change).
        guard case .one(let kept)? = table.byKey[HashedKey("k")] else {
            Issue.record("a key back to one observer still holds a dictionary: \(String(describing: table.byKey))")
            return
        }
        #expect(kept === second)
        #expect(table.hasObservers(of: HashedKey("k")))
        table.remove(second)
        #expect(queuedFor("k", in: &table).isEmpty)
        #expect(!table.hasObservers(of: HashedKey("k")))
        #expect(queuedFor("other", in: &table) == [ObjectIdentifier(other)])
        // Back to one, after several.
        table.add(first)
        #expect(queuedFor("k", in: &table) == [ObjectIdentifier(first)])
    }

    @Test func removingAnObserverNotRegisteredLeavesAKeysOneObserver() {
        var table = ObserverTable()
        let registered = observer("k", .prior)
        let stranger = observer("k", .prior)
        table.add(registered)
        table.remove(stranger)
        #expect(table.hasObservers(of: HashedKey("k")))
        #expect(queuedFor("k", in: &table) == [ObjectIdentifier(registered)])
        #expect(table.priorObserverCount == 1, "only a removal counts")
        #expect(table.wantsPrior("k"))
        table.remove(registered)
        #expect(table.priorObserverCount == 0)
        #expect(!table.hasObservers(of: HashedKey("k")))
    }

    @Test func priorCallsGoOnlyToObserversThatAskedForThem() {
        var table = ObserverTable()
        let plain = observer("k")
        table.add(plain)
        table.enqueue(key: "k", old: nil, new: .integer(1), origin: .local, isPrior: true)
        #expect(table.queue.isEmpty, "one observer, no prior calls asked for")
        let prior = observer("k", .prior)
        table.add(prior)
        table.enqueue(key: "k", old: nil, new: .integer(1), origin: .local, isPrior: true)
        #expect(table.queue.map { ObjectIdentifier($0.observer) } == [ObjectIdentifier(prior)])
    }

    @Test func observersOfEveryKeyGetEveryKeysChangesAfterTheKeysOwn() {
        var table = ObserverTable()
        let own = observer("k")
        let every = observer(nil)
        table.add(every)
        table.add(own)
        table.enqueue(key: "k", old: nil, new: .integer(1), origin: .local)
        #expect(table.queue.map { ObjectIdentifier($0.observer) } == [ObjectIdentifier(own), ObjectIdentifier(every)])
        table.queue.removeAll()
        #expect(queuedFor("unobserved", in: &table) == [ObjectIdentifier(every)])
    }
}
