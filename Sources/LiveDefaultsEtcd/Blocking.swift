import Dispatch
import LiveDefaults

/// Runs `operation` and waits for it on this thread, without taking a thread of Swift's
/// cooperative pool (a caller may be one: on 2 cores it has two, and a blocked pool would never
/// run the operation). The operation runs on Dispatch's threads.
///
/// - Parameters:
///   - limit: How long to wait; nil to wait for the end (the client's calls have timeouts of
///     their own).
///   - operation: The work, run on Dispatch's threads.
/// - Returns: What `operation` returned.
/// - Throws: What `operation` throws, or ``EtcdError`` (unavailable) when it has not ended within
///   `limit` (it goes on, and its result is dropped).
func blocking<Result: Sendable>(
    within limit: Duration? = nil, _ operation: @escaping @Sendable () async throws -> Result
) throws -> Result {
    let outcome = Locked<Swift.Result<Result, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task(executorPreference: DispatchTaskExecutor.shared) {
        do {
            let value = try await operation()
            outcome.withLock { $0 = .success(value) }
        } catch {
            outcome.withLock { $0 = .failure(error) }
        }
        done.signal()
    }
    if let limit {
        guard done.wait(timeout: .now() + limit.dispatchInterval) == .success else {
            throw EtcdError(kind: .unavailable, message: "etcd did not answer within \(limit)")
        }
    } else {
        done.wait()
    }
    guard let result = outcome.withLock({ $0 }) else {
        throw EtcdError(kind: .unavailable, message: "the call to etcd ended without an outcome")
    }
    return try result.get()
}

/// A task executor on Dispatch's global queue, outside the cooperative pool.
final class DispatchTaskExecutor: TaskExecutor {
    static let shared = DispatchTaskExecutor()

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        DispatchQueue.global().async { job.runSynchronously(on: executor) }
    }
}
