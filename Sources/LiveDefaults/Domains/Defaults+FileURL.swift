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

extension URL {
    /// The path of a directory URL, for opening a suite in it: the URL's encoded path, with any
    /// trailing `/` cut, when decoding could change nothing (no base URL, absolute, no `%`), else
    /// `path`, which resolves a relative URL against its base, decodes and cuts a trailing `/`
    /// (docs/design.md, "Opening a suite: what a cold open does"). A directory URL usually ends
    /// in `/` (`URL(fileURLWithPath:)` adds one for a directory that exists): `path` for one cost
    /// a cold open of 10 keys about 2 µs.
    var suiteDirectoryPath: String {
        guard baseURL == nil else { return path }
        let encoded = path(percentEncoded: true)
        guard encoded.utf8.first == UInt8(ascii: "/"), !encoded.utf8.contains(UInt8(ascii: "%")) else { return path }
        return SuiteLocation.withoutTrailingSlashes(encoded)
    }
}
