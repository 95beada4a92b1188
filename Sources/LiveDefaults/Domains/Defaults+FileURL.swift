import Foundation

extension Defaults {
    /// Where this suite's file is (it may not exist yet): for logs and support requests.
    ///
    /// ```swift
    /// print("settings:", defaults.fileURL.path)   // ~/.config/com.example.app.plist
    /// ```
    public var fileURL: URL { URL(fileURLWithPath: suite.location.path) }
}
