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
    /// The path of a directory given as a file URL, for opening a suite in it: the URL's encoded
    /// path as it is when decoding could change nothing (an absolute file URL, no base, no `%`),
    /// else `path`, which resolves a relative URL against its base and decodes (docs/design.md,
    /// "Opening a suite: what a cold open does"). A trailing `/` is left for ``SuiteLocation`` to cut.
    var suiteDirectoryPath: String {
        guard isFileURL, baseURL == nil else { return path }
        let encoded = path(percentEncoded: true)
        var isPlain = encoded.utf8.first == UInt8(ascii: "/")
        for byte in encoded.utf8 where byte == UInt8(ascii: "%") { isPlain = false }
        guard isPlain else { return path }
        var trimmed = Substring(encoded)
        while trimmed.utf8.count > 1, trimmed.utf8.last == UInt8(ascii: "/") { trimmed.removeLast() }
        return trimmed.utf8.count == encoded.utf8.count ? encoded : String(trimmed)
    }
}
