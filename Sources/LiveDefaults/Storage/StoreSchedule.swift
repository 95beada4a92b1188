import Foundation

/// When a store's background work runs: the flush a change asks for (after ``flushDelay``, so
/// bursts coalesce), the back-off after a failed flush, and coalesced reloads.
///
/// A pure value, kept under the store's state lock; the store arms what it says on its
/// ``StoreClock`` (docs/design.md, "Store model and backends").
package struct StoreSchedule: Sendable, Equatable {
    /// How long a change waits before the background flush writes it, so bursts coalesce.
    package static let flushDelay: Duration = .milliseconds(20)
    /// The first delay after a failed flush; it doubles on each failure, up to ``longestRetryDelay``.
    package static let firstRetryDelay: Duration = .milliseconds(250)
    package static let longestRetryDelay: Duration = .seconds(30)

    /// A background flush is armed and has not started.
    package private(set) var flushArmed = false
    /// The wait before the next flush after a failure; zero when the last flush succeeded.
    package private(set) var retryDelay: Duration = .zero
    /// A reload is armed and has not started.
    package private(set) var reloadArmed = false

    package init() {}

    /// A change was made. Returns the delay to arm the flush after, nil when one is already armed.
    @inline(__always)
    package mutating func changeMade() -> Duration? {
        guard !flushArmed else { return nil }
        flushArmed = true
        return retryDelay > .zero ? retryDelay : Self.flushDelay
    }

    /// The armed flush started: changes made from now on arm another.
    package mutating func flushStarted() {
        flushArmed = false
    }

    /// A flush wrote.
    package mutating func flushSucceeded() {
        retryDelay = .zero
    }

    /// The background flush failed: the values stay pending and a later flush retries, backing off.
    ///
    /// - Returns: The delay to arm the retry after (nil when one is already armed), and whether
    ///   this is the first failure in a row (the one to report).
    package mutating func flushFailed() -> (retryAfter: Duration?, isFirstFailure: Bool) {
        let isFirstFailure = retryDelay == .zero
        retryDelay = min(max(retryDelay * 2, Self.firstRetryDelay), Self.longestRetryDelay)
        return (changeMade(), isFirstFailure)
    }

    /// Someone asked for a reload. Returns whether to arm one (requests before it starts coalesce).
    package mutating func reloadRequested() -> Bool {
        guard !reloadArmed else { return false }
        reloadArmed = true
        return true
    }

    /// The armed reload started: requests from now on arm another.
    package mutating func reloadStarted() {
        reloadArmed = false
    }
}

/// Runs a store's background work after a delay: Dispatch in the library, a clock the test
/// advances in tests.
package protocol StoreClock: Sendable {
    /// Runs `action` once, after `delay`, on some other thread (never before returning).
    func run(after delay: Duration, _ action: @escaping @Sendable () -> Void)
}

/// The library's clock: the work runs on Dispatch's global utility queue, timed by the
/// ``DeadlineTimer`` (Dispatch's own `asyncAfter` where there is no timerfd).
package struct DispatchStoreClock: StoreClock {
    package init() {}

    package func run(after delay: Duration, _ action: @escaping @Sendable () -> Void) {
        let queue = DispatchQueue.global(qos: .utility)
        if let timer = DeadlineTimer.shared {
            timer.run(after: delay, on: queue, action)  // (no delay: at once, on the queue)
        } else if delay <= .zero {
            queue.async(execute: action)
        } else {
            queue.asyncAfter(deadline: .now() + delay.dispatchInterval, execute: action)
        }
    }
}

extension Duration {
    /// The duration for Dispatch's deadlines, to the nanosecond.
    package var dispatchInterval: DispatchTimeInterval {
        let (seconds, attoseconds) = components
        return .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
    }

    /// The duration in seconds, for APIs that take a `TimeInterval`.
    package var timeInterval: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
