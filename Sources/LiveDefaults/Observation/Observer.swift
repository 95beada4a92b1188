import Dispatch
import Synchronization

/// One registered observer: what it watches, how, and whether it is still active.
package final class Observer: Sendable {
    /// The key observed; nil observes every key.
    let key: String?
    let options: ObservationOptions
    let queue: DispatchQueue?
    let handler: @Sendable (UntypedChange) -> Void
    let isActive = Atomic<Bool>(true)
    /// The most changes waiting on `queue` before the deliverer waits.
    let backlogLimit: Int
    /// Changes handed to `queue` and not yet run there (``ObservationBacklog``).
    private let inFlight = Atomic<Int>(0)
    private let gate = BacklogGate()

    init(
        key: String?, options: ObservationOptions, queue: DispatchQueue?,
        backlogLimit: Int = ObservationBacklog.defaultLimit,
        handler: @escaping @Sendable (UntypedChange) -> Void
    ) {
        self.backlogLimit = backlogLimit
        self.key = key
        self.options = options
        self.queue = queue
        self.handler = handler
    }

    /// Calls the handler (on its queue when it has one) unless it was cancelled meanwhile. With a
    /// queue, waits first while the queue holds `backlogLimit` of its changes (``ObservationBacklog``).
    @inline(__always)
    func deliver(_ change: UntypedChange) {
        if let queue {
            deliver(change, on: queue)
        } else if isActive.load(ordering: .acquiring) {
            ObservationBacklog.runCallback { handler(change) }
        }
    }

    /// Hands `change` to `queue`. Out of line: its closure's context, allocated, is made only here
    /// (inlined, it was allocated for a direct observer's every change too).
    @inline(never)
    private func deliver(_ change: UntypedChange, on queue: DispatchQueue) {
        let limit = backlogLimit
        if inFlight.load(ordering: .relaxed) >= limit {
            gate.wait { isActive.load(ordering: .acquiring) && inFlight.load(ordering: .acquiring) > limit / 2 }
        }
        inFlight.add(1, ordering: .relaxed)
        queue.async { [self] in
            if isActive.load(ordering: .acquiring) { ObservationBacklog.runCallback { handler(change) } }
            if inFlight.subtract(1, ordering: .acquiringAndReleasing).newValue == limit / 2 { gate.wake() }
        }
    }

    /// The change as this observer receives it.
    func shaped(
        key: String, old: PropertyListValue?, new: PropertyListValue?, origin: ChangeOrigin, isPrior: Bool = false,
        isInitial: Bool = false
    ) -> UntypedChange {
        DefaultsChange(key: key, oldValue: old, newValue: new, origin: origin, isPrior: isPrior, isInitial: isInitial)
    }
}
