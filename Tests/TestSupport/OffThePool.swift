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
