import Foundation
import LiveDefaults
import LiveDefaultsEtcdClient

/// The threads every fleet suite of a process shares (docs/design.md, "Fleet settings: threads and
/// connections"): the followers' loops run as tasks on one thread of their own
/// (``FollowerExecutor``), and their blocking etcd calls (a range, a member's check) on a few
/// threads (``BlockingCalls``). With the one transfer thread that reads every watch, a process
/// following N suites uses the same threads for 1 suite as for 100.
///
/// Not Swift's cooperative pool: an app whose pool is busy (two threads on a 2-core machine) must
/// not stop its fleet suites from following etcd.
final class FollowerExecutor: TaskExecutor, @unchecked Sendable {
    // Safe as Sendable: `jobs` is read and written only while `condition` is locked.

    /// The process's one follower thread, started at the first follower.
    static let shared = FollowerExecutor()

    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []

    private init() {
        let thread = Thread { [unowned self] in
            // Named for ps, top and the tests (15 bytes at most).
            nameThisThread("ld-etcd-follow")
            run()
        }
        thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while jobs.isEmpty { condition.wait() }
            let batch = jobs
            jobs = []
            condition.unlock()
            for job in batch { job.runSynchronously(on: asUnownedTaskExecutor()) }
        }
    }
}

/// A few threads for the fleet suites' blocking etcd calls (libcurl's unary calls block): the
/// followers' ranges, the calls of ``FleetConnection``'s async methods, the flush after an outage.
/// At most ``width`` at once, whatever the number of suites; a call waits its turn in order.
///
/// Not Dispatch's global queue: on Linux its workers are Swift's cooperative pool, a few per core,
/// and while they all wait one more is started each second, so that calls waiting for a member
/// that does not answer held up every task of the app (docs/design.md, "Fleet settings", "Threads
/// and connections").
final class BlockingCalls: @unchecked Sendable {
    // Safe as Sendable: `queue` and `threads` are read and written only while `condition` is locked.

    static let shared = BlockingCalls()
    /// The most threads: enough that a member that does not answer (each call waits for its
    /// timeout) does not hold every suite's range behind it.
    static let width = 4

    private let condition = NSCondition()
    private var queue: [@Sendable () -> Void] = []
    private var threads = 0
    private var idle = 0

    /// Runs `work` on one of the threads, and gives its result without holding the caller's.
    func run<Result: Sendable>(_ work: @escaping @Sendable () throws -> Result) async throws -> Result {
        try await withCheckedThrowingContinuation { continuation in
            submit {
                do { continuation.resume(returning: try work()) } catch { continuation.resume(throwing: error) }
            }
        }
    }

    /// Runs `job` on one of the threads, without waiting for it.
    func submit(_ job: @escaping @Sendable () -> Void) {
        condition.lock()
        queue.append(job)
        let startThread = idle == 0 && threads < Self.width
        if startThread { threads += 1 }
        condition.signal()
        condition.unlock()
        if startThread {
            let thread = Thread { [unowned self] in
                // Named for ps, top and the tests (15 bytes at most).
                nameThisThread("ld-etcd-call")
                work()
            }
            thread.start()
        }
    }

    /// Runs `work`, which may wait but makes no call to etcd (for the follower to bring a revision,
    /// for the store's lock), on a thread of its own, and gives its end without holding the
    /// caller's: not behind calls on these threads, nor on them, where the follower may need one for
    /// the range that ends the wait.
    static func onAThreadOfItsOwn(_ work: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { continuation in
            Thread {
                work()
                continuation.resume()
            }.start()
        }
    }

    private func work() {
        while true {
            condition.lock()
            idle += 1
            while queue.isEmpty { condition.wait() }
            idle -= 1
            let job = queue.removeFirst()
            condition.unlock()
            job()
        }
    }
}
