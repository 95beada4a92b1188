import Dispatch
import LiveDefaultsWatching

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

    /// On the inotify thread, in a call of the watcher: `action` runs there once the call
    /// returns (``FileWatcher/runAfterCall(_:)``).
    package func runAfterWatcherCall(_ action: @escaping @Sendable () -> Void) -> Bool {
        FileWatcher.runAfterCall(action)
    }
}
