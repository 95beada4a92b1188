import Foundation
import LiveDefaultsWatching

extension FileWatcher {
    /// The watcher of this process, the only one that uses inotify; its threads start on first use.
    /// Its problems are reported as ``DefaultsError/Code/watchingDegraded``. Setting the environment
    /// variable `LIVEDEFAULTS_WATCHER=poll` makes it poll instead (for file systems where inotify
    /// sees no changes made by other machines, such as NFS).
    package static let shared = FileWatcher(
        usingInotify: ProcessInfo.processInfo.environment["LIVEDEFAULTS_WATCHER"] != "poll",
        report: { problem in DefaultsErrorReporting.report(DefaultsError(problem)) })
}
