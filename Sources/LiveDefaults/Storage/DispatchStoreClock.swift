import Dispatch
import LiveDefaultsWatching

/// The library's clock: the work runs on Dispatch's global utility queue, timed by the
/// ``DeadlineTimer`` (Dispatch's own `asyncAfter` where there is no timerfd).
///
/// Work with no delay asked for inside the file watcher's call for an event (the store's reload of
/// an outside change) is the watcher's to run once the call returns: on its inotify thread while
/// the suite's reloads and observers are fast, with no hop to a worker
/// (``FileWatcher/runAfterCall(_:)``; docs/design.md, "Live reload: who calls observers").
package struct DispatchStoreClock: StoreClock {
    package init() {}

    package func run(after delay: Duration, _ action: @escaping @Sendable () -> Void) {
        if delay <= .zero, FileWatcher.runAfterCall(action) { return }
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
