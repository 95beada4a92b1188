import Dispatch
import Foundation

/// The delivery engine of a ``Defaults``: a change of a store it searches, or of its own layers,
/// re-resolves the keys it touched under the ``ChangeLock``, queues a change for each effective
/// value that differs, and delivers the queue to observers once every lock is released, in the
/// order the changes were applied (docs/design.md, "Observation: one order for every change").
extension Defaults {
    /// Changes this instance's own layers with `change`, re-resolves `keys` (all keys when nil),
    /// and delivers the changes outside every lock.
    func refresh(_ keys: ChangedKeys?, origin: ChangeOrigin, changingState change: (inout State) -> Void = { _ in }) {
        let delivery = ChangeLock.withLock { applyRefresh(keys, origin: origin, changingState: change) }
        if let delivery { perform(delivery) }
    }

    /// A store this instance searches changed one key, to `new` (a `set`). Called by the store
    /// under the ``ChangeLock``, in the step that made the change.
    ///
    /// - Returns: What to deliver once the change lock is released, or nil.
    func storeChanged(
        _ store: SuiteStore, key: HashedKey, to new: PropertyListValue?, origin: ChangeOrigin
    ) -> Delivery? {
        // The suite's own change carries its new value: no second lookup in the store on every
        // `set` (the store's lock and a hash of the key).
        if store !== suite, case .applied(let delivery) = refreshAdministered(store, .one(key.string), origin: origin) {
            return delivery
        }
        return applyChange(of: key, origin: origin, suiteValue: store === suite ? .some(new) : nil)
    }

    /// A store this instance searches changed `keys` (a reload, a flush that found others'
    /// values, a replaced domain). Called by the store under the ``ChangeLock``.
    ///
    /// - Returns: What to deliver once the change lock is released, or nil.
    func storeChanged(_ store: SuiteStore, keys: ChangedKeys, origin: ChangeOrigin) -> Delivery? {
        if store !== suite, case .applied(let delivery) = refreshAdministered(store, keys, origin: origin) {
            return delivery
        }
        return applyRefresh(keys, origin: deliveredOrigin(origin, from: store, keys: keys))
    }

    /// What a change leaves to do once the change lock is released.
    struct Delivery {
        /// Changes this thread claimed to deliver (another thread delivering leaves it nil).
        var batch: [QueuedChange]?
        /// Whether to schedule the change notification.
        var notifies: Bool
        /// Whether to wait for observers that have fallen behind (``ObservationBacklog``).
        var waits: Bool
        /// Whether the change was this process's own: its notification is then timed by the
        /// library's timer thread, an outside change's by Dispatch (docs/design.md, "The change
        /// notification").
        var isLocal = false
        /// Observers of keys becoming forced or released, with their news (``Defaults/observeForcing(ofKey:_:)``).
        /// (Nil rather than empty when there are none: an empty array was retained and released, the
        /// runtime's empty array, no atomic operation, but calls into the runtime on every delivery.)
        var forcing: [@Sendable () -> Void]? = nil
    }

    /// Does what a change left to do: delivers, schedules the notification, waits for observers.
    /// Called with no lock held.
    ///
    /// With `postingNow`, the change notification is posted on this thread after the observers,
    /// rather than 5 ms later by a Dispatch worker: for a remote follower's news, delivered on its
    /// own reading thread, where one message is one burst (docs/design.md, "The change notification").
    ///
    /// The delivery is consumed, its batch moved on: delivered, the batch's buffer is then the only
    /// reference to it and goes back to the queue (``ObserverTable/exchangeBatch(_:)``) without a copy.
    func perform(_ delivery: consuming Delivery, postingNow: Bool = false) {
        if let batch = delivery.batch.take() { deliver(batch) }
        if delivery.notifies {
            if postingNow {
                postChangeNotification()
            } else {
                scheduleChangeNotification(onTimerThread: delivery.isLocal)
            }
        }
        if delivery.waits { waitForObservers() }
        if let forcing = delivery.forcing { for call in forcing { call() } }
    }

    /// Re-resolves `keys` (all keys when nil) after a layer changed and queues a change for each
    /// effective value that differs. Called under the ``ChangeLock``, so changes are applied (and
    /// queued) in the order they were made.
    ///
    /// - Returns: What to do once the change lock is released (delivery, the notification), or nil.
    func applyRefresh(
        _ keys: ChangedKeys?, origin: ChangeOrigin, suiteValue: PropertyListValue?? = nil,
        changingState change: (inout State) -> Void = { _ in }
    ) -> Delivery? {
        let delivery = state.withLock { state -> Delivery in
            change(&state)
            var changed = false
            if let keys {
                keys.forEach { key in
                    if refresh(HashedKey(key), &state, origin: origin, suiteValue: suiteValue) { changed = true }
                }
            } else {
                let all = EffectiveValues(
                    Self.resolveAll(state, suite: suite, global: global), observedKeys: state.observers.observedKeys)
                for change in state.effective.differences(from: all) {
                    changed = true
                    if all.isObserved(change.key) || state.observers.observesEveryKey {
                        state.observers.enqueue(
                            key: change.key, old: change.old, new: change.new, origin: origin)
                    }
                }
                state.effective = all
            }
            return finishRefresh(&state, changed: changed, origin: origin)
        }
        if delivery.batch == nil && !delivery.notifies && !delivery.waits { return nil }
        return delivery
    }

    /// ``applyRefresh(_:origin:suiteValue:changingState:)`` of one key already hashed, with no
    /// change to this instance's layers: a `set`'s path.
    func applyChange(of key: HashedKey, origin: ChangeOrigin, suiteValue: PropertyListValue??) -> Delivery? {
        let delivery = state.withLock { state -> Delivery in
            let changed = refresh(key, &state, origin: origin, suiteValue: suiteValue)
            return finishRefresh(&state, changed: changed, origin: origin)
        }
        if delivery.batch == nil && !delivery.notifies && !delivery.waits { return nil }
        return delivery
    }

    /// Re-resolves `key` and queues its change for its observers. Called with the state lock held.
    ///
    /// - Returns: Whether its effective value changed.
    @inline(__always)
    private func refresh(
        _ key: HashedKey, _ state: inout State, origin: ChangeOrigin, suiteValue: PropertyListValue??
    ) -> Bool {
        let new = Self.resolve(key.string, &state, suite: suite, global: global, suiteValue: suiteValue)
        let everyKey = state.observers.observesEveryKey
        var old: PropertyListValue? = nil
        switch state.effective.set(new, for: key, old: &old, keepingOld: everyKey) {
        case .unchanged: return false
        case .changed: if !everyKey { return true }
        case .changedObserved: break
        }
        state.observers.enqueue(key: key, old: old, new: new, origin: origin)
        return true
    }

    /// Claims the queue for this thread, or says whether to wait for it, and claims the change
    /// notification. Called with the state lock held, after the changes were queued.
    @inline(__always)
    private func finishRefresh(_ state: inout State, changed: Bool, origin: ChangeOrigin) -> Delivery {
        let batch = state.observers.claimBatch()
        // Another thread delivers, and its observers have fallen this far behind: wait for them.
        let waits = batch == nil && state.observers.queue.count >= backlogLimit.load(ordering: .relaxed)
        return Delivery(
            batch: batch, notifies: changed && Self.claimNotification(&state), waits: waits, isLocal: origin == .local)
    }

    /// Whether this change should schedule the notification: once per burst, and not when a
    /// persistent-domain call posts its own.
    private static func claimNotification(_ state: inout State) -> Bool {
        if state.notificationPostedByCaller {
            state.notificationPostedByCaller = false
            return false
        }
        if state.notificationScheduled { return false }
        state.notificationScheduled = true
        return true
    }

    /// Waits while the observers' queue is at its limit and another thread delivers it
    /// (``ObservationBacklog``).
    private func waitForObservers() {
        let limit = backlogLimit.load(ordering: .relaxed)
        backlogGate.wait {
            state.withLock { $0.observers.isDelivering && $0.observers.queue.count >= limit / 2 }
        }
    }

    /// Sets how many changes the observers' queue, and each `queue:` observer registered after this,
    /// may hold before writers wait (for tests of the bound; ``ObservationBacklog/defaultLimit`` otherwise).
    package func setObservationBacklogLimit(_ limit: Int) {
        backlogLimit.store(max(1, limit), ordering: .relaxed)
    }

    /// Delivers queued changes on this thread, unless another thread already is (it then delivers
    /// these too, in order). Never called with the lock held.
    func deliverQueuedChanges() {
        guard let batch = state.withLock({ $0.observers.claimBatch() }) else { return }
        deliver(batch)
    }

    /// Delivers a claimed batch, then whatever was queued meanwhile, until the queue is empty.
    ///
    /// The batch is the consumed parameter itself, and the next one is exchanged into it in place
    /// (``ObserverTable/exchangeBatch(_:)``): assigned from the lock's result, or copied from the
    /// parameter into a variable, it was retained and released around the read of its count on
    /// every delivery (docs/performance.md, "Issue 40").
    private func deliver(_ batch: consuming [QueuedChange]) {
        while true {
            // Writers may be waiting for a queue this long to be taken (``ObservationBacklog``).
            let count = batch.count
            if count >= backlogLimit.load(ordering: .relaxed) / 2 { backlogGate.wake() }
            // Each change moved out of the batch, not copied, and the batch emptied as it goes, outside
            // the lock; its buffer goes back for the next queue. Reversed once (moves, no copies) so
            // that `popLast()` takes them in order: the copy out of the batch and the batch's
            // destruction afterwards, through the runtime's generic witness, cost an observed `set`
            // about 250 instructions (docs/design.md, "Observation: the `set` path").
            if count > 1 { batch.reverse() }
            while let item = batch.popLast() { item.observer.deliver(item.change) }
            guard state.withLock({ $0.observers.exchangeBatch(&batch) }) else {
                backlogGate.wake()
                return
            }
        }
    }

    /// Queues a prior call for observers of `key` that asked for one, when setting the suite's value
    /// to `suiteValue` would change the effective value. Called under the ``ChangeLock``.
    func queuePrior(of key: String, suiteValue: PropertyListValue?) {
        state.withLock { state in
            let hashed = HashedKey(key)
            let old = state.effective[hashed]
            let new = Self.resolve(key, &state, suite: suite, global: global, suiteValue: .some(suiteValue))
            if old != new { state.observers.enqueue(key: hashed, old: old, new: new, origin: .local, isPrior: true) }
        }
    }

    /// How long the notification waits after the first change of a burst, so that a burst posts once.
    ///
    /// Posting at once woke a Dispatch worker for nearly every write of a tight loop; that worker
    /// then took this store's lock on the other core, and writes ran at half speed in some runs
    /// (docs/design.md, "Observation: the change notification").
    ///
    /// A local change's post is timed by the library's timer thread (``DeadlineTimer``): Dispatch's
    /// `asyncAfter` woke its manager thread on the first `set` of every burst, 14–40 µs of a
    /// cold `set`. An outside change's stays on `asyncAfter`: with outside changes arriving back to back,
    /// the timer thread's wake-up every 5 ms doubled the p99 of their delivery (docs/design.md, "The
    /// change notification").
    static let notificationDelay: Duration = .milliseconds(5)

    private func postChangeNotification() {
        state.withLock { $0.notificationScheduled = false }
        NotificationCenter.default.post(name: Defaults.didChangeNotification, object: self)
    }

    private func scheduleChangeNotification(onTimerThread: Bool) {
        let post: @Sendable () -> Void = { [weak self] in self?.postChangeNotification() }
        if onTimerThread, let timer = DeadlineTimer.shared {
            timer.run(after: Self.notificationDelay, on: .global(), post)
        } else {
            DispatchQueue.global().asyncAfter(deadline: .now() + Self.notificationDelay.dispatchInterval, execute: post)
        }
    }
}

/// What the ``Defaults`` that read a changed store have to deliver once the ``ChangeLock`` is
/// released: empty (and free) when no one observes. It holds the `Defaults` strongly, so that none
/// is deinitialised under the change lock.
struct Deliveries {
    /// A `Defaults` and its delivery. A struct, not a tuple: an optional tuple is tested and
    /// destroyed through the runtime's generic tuple witnesses, on every `set`.
    private struct Item {
        let defaults: Defaults
        let delivery: Defaults.Delivery
    }

    /// The first, kept inline: a suite read by one `Defaults` (the usual case) allocates no array.
    private var first: Item?
    private var rest: [Item] = []

    @inline(__always)
    mutating func append(_ defaults: Defaults, _ delivery: Defaults.Delivery?) {
        guard let delivery else { return }
        if first == nil {
            first = Item(defaults: defaults, delivery: delivery)
        } else {
            rest.append(Item(defaults: defaults, delivery: delivery))
        }
    }

    /// Delivers them; call with no lock held. `postingNow`: see ``Defaults/perform(_:postingNow:)``.
    @inline(__always)
    consuming func run(postingNow: Bool = false) {
        guard let first = first.take() else { return }
        // The item is consumed before the call, so that the delivery's batch has no second
        // reference: its buffer is then emptied in place and goes back to the queue. (Passed as
        // `first.delivery`, the item kept it alive through the delivery, and every observed `set`
        // allocated an emptied buffer and freed the full one through the runtime's generic array
        // destruction, about 400 instructions.)
        let defaults = first.defaults
        let delivery = first.delivery
        _ = consume first
        defaults.perform(delivery, postingNow: postingNow)
        for item in rest { item.defaults.perform(item.delivery, postingNow: postingNow) }
    }
}
