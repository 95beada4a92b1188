import Foundation
import LiveDefaultsWatching

extension FileWatcher {
    /// The watcher of this process, the only one that uses inotify; its threads start on first use.
    /// Its problems are reported as ``DefaultsError/Code/watchingDegraded``. Setting the environment
    /// variable `LIVEDEFAULTS_WATCHER=poll` makes it poll instead (for file systems where inotify
    /// sees no changes made by other machines, such as NFS).
    ///
    /// The watchdog of reloads run on the inotify thread (``FileWatcher/runAfterCall(_:)``) is
    /// timed by the ``DeadlineTimer``, on its own thread: no Dispatch thread is woken for it.
    package static let shared: FileWatcher = {
        if let timer = DeadlineTimer.shared {
            FileWatcher.useWatchdogTimer { delay, action in timer.runOnTimerThread(after: delay, action) }
        }
        return FileWatcher(
            usingInotify: ProcessInfo.processInfo.environment["LIVEDEFAULTS_WATCHER"] != "poll",
            report: { problem in DefaultsErrorReporting.report(DefaultsError(problem)) })
    }()
}
