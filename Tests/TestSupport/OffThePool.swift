import Foundation

/// Runs `body` on a thread of its own and waits for it without holding a thread of Swift's
/// cooperative pool, which has two on a 2-core machine: a test that blocks one (a process it waits
/// for, a sleep that is its scenario) holds up every other test's tasks meanwhile — with four such
/// cases at once, tests that take a millisecond waited minutes for a thread. A gap timed there can
/// also come out far longer than asked; and blocking a Dispatch worker would hold up the stores'
/// reloads, which run there.
///
/// - Parameter body: The blocking work; its result (or error) is the call's.
/// - Returns: What `body` returned.
/// - Throws: What `body` threw.
public func onAThreadOfItsOwn<Result: Sendable>(_ body: @escaping @Sendable () throws -> Result) async throws
    -> Result
{
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Swift.Result { try body() }) }.start()
    }
}

/// ``eventually(within:_:)`` for a condition that blocks while it checks (a request to a server
/// that may be starting, frozen or gone): the checks run on one thread of its own
/// (``onAThreadOfItsOwn(_:)``), at the same intervals, so that a slow answer holds no thread of the
/// cooperative pool. One thread for the whole wait, not one per check: under the thread sanitizer,
/// a dozen members' starts each making a thread every few milliseconds starved the members
/// themselves, and none was seen healthy within a minute.
///
/// - Parameters:
///   - seconds: The bound on the wait, as for ``eventually(within:_:)``.
///   - condition: The check; it may block.
/// - Returns: Whether `condition` held in time.
public func eventuallyOffThePool(within seconds: Double = 30, _ condition: @escaping @Sendable () -> Bool) async
    -> Bool
{
    (try? await onAThreadOfItsOwn {
        let deadline = Date().addingTimeInterval(seconds)
        var interval = 1
        while Date() < deadline {
            if condition() { return true }
            // A poll with a deadline, as eventually's: the condition is what is waited for.
            Thread.sleep(forTimeInterval: Double(interval) / 1_000)
            interval = min(2 * interval, 10)
        }
        return condition()
    }) ?? false
}
