import Foundation

/// A value that threads wait on: ``update(_:)`` changes it and wakes every waiter, and
/// ``wait(until:for:)`` blocks until the value satisfies a condition or a deadline passes. What a
/// thread that must block (a curl call, a follower's loop) waits with instead of polling.
package final class ConditionValue<Value>: @unchecked Sendable {
    // Safe as Sendable: `value` is read and written only while `condition` is locked.
    private let condition = NSCondition()
    private var value: Value

    package init(_ value: Value) { self.value = value }

    /// The value now.
    package var current: Value {
        condition.lock()
        defer { condition.unlock() }
        return value
    }

    /// Changes the value and wakes every waiter.
    ///
    /// - Returns: What `change` returned.
    @discardableResult
    package func update<Result>(_ change: (inout Value) -> Result) -> Result {
        condition.lock()
        defer {
            condition.broadcast()
            condition.unlock()
        }
        return change(&value)
    }

    /// Waits until `isDone` holds for the value, or until `deadline` (nil: no deadline).
    ///
    /// - Returns: The value that satisfied `isDone`; nil when the deadline passed first.
    package func wait(until deadline: ContinuousClock.Instant? = nil, for isDone: (Value) -> Bool) -> Value? {
        condition.lock()
        defer { condition.unlock() }
        while !isDone(value) {
            guard let deadline else {
                condition.wait()
                continue
            }
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { return nil }
            let seconds = Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18
            _ = condition.wait(until: Date(timeIntervalSinceNow: seconds))
        }
        return value
    }
}
