/// The observers of one ``Defaults``, by key, and the queue of changes waiting to be delivered.
///
/// Lives inside the defaults' locked state. Registering, cancelling and finding the observers of a
/// key cost the same whatever the number of observers of other keys.
struct ObserverTable {
    private(set) var byKey: [HashedKey: KeyObservers] = [:]
    private var everyKey: [ObjectIdentifier: Observer] = [:]
    /// Changes waiting for delivery, in the order they were applied.
    var queue: [QueuedChange] = []
    /// An emptied batch whose buffer the next queue reuses (``putBack(_:)``): a `set` with an
    /// observer otherwise allocated and freed a queue every time.
    private var spare: [QueuedChange] = []
    /// Whether some thread is delivering the queue now.
    var isDelivering = false

    /// How many registered observers asked for prior calls: when none did (the usual case), a
    /// write need not look for them.
    private(set) var priorObserverCount = 0

    mutating func add(_ observer: Observer) {
        if observer.options.contains(.prior) { priorObserverCount += 1 }
        if let key = observer.key {
            let key = HashedKey(key)
            switch byKey[key] {
            case nil: byKey[key] = .one(observer)
            case .one(let first)?:
                // Not a literal of two: one observer added twice (never done) would trap there.
                var observers = [ObjectIdentifier(first): first]
                observers[ObjectIdentifier(observer)] = observer
                byKey[key] = .many(observers)
            case .many?: byKey[key]?.add(observer)
            }
        } else {
            everyKey[ObjectIdentifier(observer)] = observer
        }
    }

    mutating func remove(_ observer: Observer) {
        let removed: Observer?
        if let key = observer.key {
            let key = HashedKey(key)
            switch byKey[key] {
            case nil: removed = nil
            case .one(let only)?:
                removed = only === observer ? only : nil
                if removed != nil { byKey[key] = nil }
            case .many?:
                removed = byKey[key]?.remove(observer)
                // Back to one, kept as itself again (or none).
                if case .many(let rest)? = byKey[key], rest.count <= 1 {
                    byKey[key] = rest.values.first.map { .one($0) }
                }
            }
        } else {
            removed = everyKey.removeValue(forKey: ObjectIdentifier(observer))
        }
        if removed != nil, observer.options.contains(.prior) { priorObserverCount -= 1 }
    }

    /// The keys that have observers of their own.
    var observedKeys: Dictionary<HashedKey, KeyObservers>.Keys { byKey.keys }

    /// Whether some observer observes every key.
    var observesEveryKey: Bool { !everyKey.isEmpty }

    /// Whether `key` has observers of its own.
    func hasObservers(of key: HashedKey) -> Bool { byKey[key] != nil }

    /// Whether some observer of `key` asked for prior calls.
    func wantsPrior(_ key: String) -> Bool {
        guard priorObserverCount > 0 else { return false }
        return byKey[HashedKey(key)]?.contains { $0.options.contains(.prior) } == true
            || everyKey.values.contains { $0.options.contains(.prior) }
    }

    /// Queues a change of `key` for each of its observers.
    mutating func enqueue(
        key: String, old: PropertyListValue?, new: PropertyListValue?, origin: ChangeOrigin, isPrior: Bool = false
    ) {
        enqueue(key: HashedKey(key), old: old, new: new, origin: origin, isPrior: isPrior)
    }

    /// ``enqueue(key:old:new:origin:isPrior:)`` with the key already hashed (a `set` hashed it for
    /// the effective values).
    mutating func enqueue(
        key hashed: HashedKey, old: PropertyListValue?, new: PropertyListValue?, origin: ChangeOrigin,
        isPrior: Bool = false
    ) {
        let key = hashed.string
        // A key's one observer comes out of the table as itself, its retain the queued change's
        // own; several come out as their dictionary, copied (a retain and a release of it). The
        // append is written out in each case: one helper for the three, even `@inline(__always)`,
        // cost an observed `set` 66 instructions.
        switch byKey[hashed] {
        case nil: break
        case .one(let observer)?:
            if !isPrior || observer.options.contains(.prior) {
                queue.append(
                    QueuedChange(
                        observer: observer,
                        change: observer.shaped(key: key, old: old, new: new, origin: origin, isPrior: isPrior)))
            }
        case .many(let observers)?:
            for observer in observers.values {
                if isPrior && !observer.options.contains(.prior) { continue }
                queue.append(
                    QueuedChange(
                        observer: observer,
                        change: observer.shaped(key: key, old: old, new: new, origin: origin, isPrior: isPrior)))
            }
        }
        // Most tables have no observer of every key: not even the empty dictionary's retain.
        if everyKey.isEmpty { return }
        for observer in everyKey.values {
            if isPrior && !observer.options.contains(.prior) { continue }
            queue.append(
                QueuedChange(
                    observer: observer,
                    change: observer.shaped(key: key, old: old, new: new, origin: origin, isPrior: isPrior)))
        }
    }

    /// Takes the queue for delivery when there is something to deliver and no other thread is
    /// delivering, marking this thread as the deliverer (called under the same lock that queued the
    /// changes, saving a second acquisition). The deliverer takes what is queued afterwards with
    /// ``exchangeBatch(_:)``.
    mutating func claimBatch() -> [QueuedChange]? {
        if isDelivering || queue.isEmpty { return nil }
        isDelivering = true
        var batch = spare
        spare = []
        swap(&batch, &queue)
        return batch
    }

    /// For the deliverer, with its batch delivered: keeps the emptied `batch`'s buffer for the next
    /// queue (``putBack(_:)``) and takes the queue into `batch`; when nothing was queued meanwhile,
    /// clears the deliverer's mark and returns false.
    mutating func exchangeBatch(_ batch: inout [QueuedChange]) -> Bool {
        putBack(&batch)
        if queue.isEmpty {
            isDelivering = false
            return false
        }
        // `batch` is empty now (the emptied one, or the spare it replaced): it becomes the queue.
        swap(&batch, &queue)
        return true
    }

    /// Keeps a delivered batch's buffer, emptied outside the lock, for the next queue; not a large
    /// one (a burst's), which would hold its memory for good.
    private mutating func putBack(_ emptied: inout [QueuedChange]) {
        if spare.capacity < emptied.capacity, emptied.capacity <= 64 { swap(&spare, &emptied) }
    }
}

/// A change waiting for delivery to one observer. A struct rather than a tuple: an array of tuples
/// is destroyed through the runtime's generic tuple witness, a few hundred instructions per `set`
/// with an observer.
struct QueuedChange {
    let observer: Observer
    let change: UntypedChange
}

/// The observers of one key: most keys have one, kept as itself. Looked up on every observed
/// `set`, a dictionary of one was copied out of the table, a retain and a release of its storage
/// besides the observer's own (docs/performance.md, "Issue 40").
enum KeyObservers {
    case one(Observer)
    case many([ObjectIdentifier: Observer])

    /// Adds `observer` to several (``many(_:)``).
    mutating func add(_ observer: Observer) {
        guard case .many(var observers) = self else { return }
        self = .many([:])
        observers[ObjectIdentifier(observer)] = observer
        self = .many(observers)
    }

    /// Removes `observer` from several (``many(_:)``); returns it if it was there.
    mutating func remove(_ observer: Observer) -> Observer? {
        guard case .many(var observers) = self else { return nil }
        self = .many([:])
        let removed = observers.removeValue(forKey: ObjectIdentifier(observer))
        self = .many(observers)
        return removed
    }

    /// Whether one of them satisfies `predicate`.
    func contains(where predicate: (Observer) -> Bool) -> Bool {
        switch self {
        case .one(let observer): predicate(observer)
        case .many(let observers): observers.values.contains(where: predicate)
        }
    }
}
