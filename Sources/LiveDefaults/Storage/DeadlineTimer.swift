import CTimerFD
import Dispatch
import Foundation
import LiveDefaultsWatching

/// A store's background flush and the change notification of local changes, timed by one thread
/// for the process, asleep on a Linux timerfd (docs/design.md, "Delayed work: one timer thread").
///
/// Arming is one `timerfd_settime` on the calling thread, and only when the new deadline is the
/// earliest; the kernel wakes the timer thread when that deadline comes. Dispatch's `asyncAfter`
/// hands every deadline to its manager thread and wakes it, which on a virtual machine is an
/// interrupt sent to the other processor: 20–35 µs on the first `set` of a burst. The work still
/// runs on the Dispatch queue it names, never on the timer thread, which only keeps time.
final class DeadlineTimer: Sendable {
    /// The process's timer; nil only where the system refuses a timerfd (the library then uses
    /// Dispatch's `asyncAfter`).
    static let shared: DeadlineTimer? = DeadlineTimer()

    private struct Work {
        /// `CLOCK_MONOTONIC` nanoseconds.
        var deadline: UInt64
        /// nil: on the timer thread itself.
        var queue: DispatchQueue?
        var action: @Sendable () -> Void
    }

    private struct State {
        /// Work not yet due. A handful at a time (a store's flush and a `Defaults`' change
        /// notification per burst, a retry), so a plain array.
        var waiting: [Work] = []
        /// The deadline the timerfd is set to, `.max` when it is not set.
        var armed: UInt64 = .max
    }

    private let descriptor: Int32
    private let state = Locked(State())

    private init?() {
        let descriptor = timerfd_create(CLOCK_MONOTONIC, Int32(TFD_CLOEXEC))
        guard descriptor >= 0 else { return nil }
        self.descriptor = descriptor
        let thread = Thread { [self] in self.keepTime() }
        thread.name = "LiveDefaults timer"
        thread.start()
    }

    /// Runs `action` on `queue` once `delay` has passed (at once on `queue` when it is not
    /// positive).
    func run(after delay: Duration, on queue: DispatchQueue, _ action: @escaping @Sendable () -> Void) {
        guard delay > .zero else {
            queue.async(execute: action)
            return
        }
        schedule(after: delay, on: queue, action)
    }

    /// Runs `action` on the timer thread itself once `delay` has passed: no other thread is woken
    /// for it. It must be quick and must not block, for every deadline waits for it (the
    /// watchdog of the watcher's inotify thread, docs/design.md, "Live reload: the watcher's
    /// threads").
    func runOnTimerThread(after delay: Duration, _ action: @escaping @Sendable () -> Void) {
        schedule(after: max(delay, .nanoseconds(1)), on: nil, action)
    }

    private func schedule(after delay: Duration, on queue: DispatchQueue?, _ action: @escaping @Sendable () -> Void) {
        let deadline = Self.now() &+ delay.wholeNanoseconds
        state.withLock { state in
            state.waiting.append(Work(deadline: deadline, queue: queue, action: action))
            if deadline < state.armed {
                state.armed = deadline
                arm(deadline)
            }
        }
    }

    /// The timer thread: waits for the timerfd, hands the work that is due to its queues, in
    /// deadline order, and sets the timerfd to the next deadline.
    private func keepTime() {
        var expirations: UInt64 = 0
        while true {
            guard read(descriptor, &expirations, MemoryLayout<UInt64>.size) > 0 else {
                if errno == EINTR { continue }
                // Cannot happen on a timerfd this process made; the waiting work would never
                // run, so say so rather than spin.
                fatalError("LiveDefaults: reading the timer's timerfd failed (errno \(errno))")
            }
            let now = Self.now()
            let due = state.withLock { state -> [Work] in
                var due: [Work] = []
                var next = UInt64.max
                state.waiting.removeAll { work in
                    if work.deadline <= now {
                        due.append(work)
                        return true
                    }
                    next = min(next, work.deadline)
                    return false
                }
                state.armed = next
                if next != .max { arm(next) }
                return due
            }
            for work in due.sorted(by: { $0.deadline < $1.deadline }) {
                if let queue = work.queue { queue.async(execute: work.action) } else { work.action() }
            }
        }
    }

    /// Sets the timerfd to fire at `deadline` (absolute; a deadline already past fires at once).
    private func arm(_ deadline: UInt64) {
        var setting = itimerspec()
        setting.it_value.tv_sec = Int(deadline / 1_000_000_000)
        setting.it_value.tv_nsec = Int(deadline % 1_000_000_000)
        timerfd_settime(descriptor, Int32(TFD_TIMER_ABSTIME), &setting, nil)
    }

    private static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }
}
