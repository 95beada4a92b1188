import CObservationThread
import Foundation
import Synchronization

/// How far observers may fall behind writers, and what a writer does then
/// (docs/design.md, "Observation: one order for every change").
///
/// Changes wait for delivery in two places: a `Defaults`' queue, which the thread delivering it
/// drains in order while it calls direct observers, and a `queue:` observer's dispatch queue. Each
/// holds at most ``limit`` changes. A thread that would add to a full one waits until it has
/// drained to half, so a slow observer slows writers rather than grow memory without bound.
///
/// A thread running an observer's callback never waits: the backlog it would wait for may be
/// its own, so a callback that writes can take a backlog past the limit.
package enum ObservationBacklog {
    /// The most changes waiting in one place before writers wait (tests set a smaller one on an
    /// instance: ``Defaults/setObservationBacklogLimit(_:)``).
    package static let defaultLimit = 65_536

    /// Whether this thread is running an observer's callback: a C `_Thread_local` flag, read and
    /// written inline (two `pthread_setspecific` calls and a `pthread_getspecific` before: about 80
    /// instructions of every delivered change, docs/design.md, "Observation: the `set` path").
    @inline(__always)
    static var isInsideCallback: Bool { livedefaults_is_delivering() }

    /// Runs an observer's callback, marking the thread for its duration.
    @inline(__always)
    static func runCallback(_ body: () -> Void) {
        if livedefaults_is_delivering() { return body() }
        livedefaults_set_delivering(true)
        defer { livedefaults_set_delivering(false) }
        body()
    }
}

/// Where writers wait for a backlog to drain.
// Safe as Sendable: NSCondition is a lock, and the count is atomic.
final class BacklogGate: @unchecked Sendable {
    private let condition = NSCondition()
    /// Threads waiting: changed under the condition's lock, read without it by ``wake()``.
    private let waiters = Atomic<Int>(0)

    /// Waits while `isFull()` holds (checked under the gate, re-checked after every wake-up) unless
    /// this thread runs an observer's callback.
    func wait(while isFull: () -> Bool) {
        if ObservationBacklog.isInsideCallback { return }
        condition.lock()
        defer { condition.unlock() }
        waiters.add(1, ordering: .sequentiallyConsistent)
        defer { waiters.subtract(1, ordering: .sequentiallyConsistent) }
        // A timed wait as well: a wake-up is never needed for progress, only for speed.
        while isFull() { _ = condition.wait(until: Date(timeIntervalSinceNow: 0.05)) }
    }

    /// Wakes the waiters, if any, to check again (after a backlog shrank).
    func wake() {
        guard waiters.load(ordering: .sequentiallyConsistent) > 0 else { return }
        condition.lock()
        condition.broadcast()
        condition.unlock()
    }
}
