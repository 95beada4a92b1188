import Foundation
import Testing

extension Trait where Self == ConditionTrait {
    /// For a test whose subject is inotify itself (its events, its limits, its thread, the watches
    /// it holds): skipped, with that reason, when `LIVEDEFAULTS_WATCHER=poll` makes the process's
    /// watcher poll on purpose. The rest of the suite runs under polling as it is
    /// (`LIVEDEFAULTS_WATCHER=poll swift test`: CONTRIBUTING.md, "Test").
    public static var inotifyServes: Self {
        .enabled(
            if: ProcessInfo.processInfo.environment["LIVEDEFAULTS_WATCHER"] != "poll",
            "inotify's own behaviour: LIVEDEFAULTS_WATCHER=poll makes the watcher poll")
    }
}
