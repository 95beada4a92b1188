import Foundation

extension Defaults {
    /// Where this suite's file is (it may not exist yet), for logs and support requests; nil for a
    /// store made with ``inMemory(suiteName:)``, which has no file, and for a suite kept elsewhere
    /// (a fleet suite).
    ///
    /// ```swift
    /// print("settings:", defaults.fileURL?.path ?? "in memory")   // ~/.config/com.example.app.plist
    /// ```
    public var fileURL: URL? {
        if case .memory = stores { return nil }
        if !suiteHasFile { return nil }
        return URL(fileURLWithPath: suite.location.path)
    }
}
