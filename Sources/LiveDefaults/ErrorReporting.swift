import Foundation

/// Where LiveDefaults reports problems that no call can throw: a corrupt file found while loading
/// or reloading, a background flush that failed, file watching that fell back to polling.
///
/// By default each report is written as one line to standard error. Install a handler to route
/// them elsewhere:
///
/// ```swift
/// DefaultsErrorReporting.setHandler { error in logger.error("\(error)") }
/// ```
public enum DefaultsErrorReporting {
    private static let handler = Locked<(@Sendable (DefaultsError) -> Void)?>(nil)

    /// Replaces the handler that receives every reported error; `nil` restores the default
    /// (one line on standard error).
    ///
    /// - Parameter newHandler: Called on the thread that found the problem; it must not block.
    public static func setHandler(_ newHandler: (@Sendable (DefaultsError) -> Void)?) {
        handler.withLock { $0 = newHandler }
    }

    /// Reports `error` to the installed handler.
    package static func report(_ error: DefaultsError) {
        if let installed = handler.withLock({ $0 }) {
            installed(error)
        } else {
            FileHandle.standardError.write(Data("LiveDefaults: \(error)\n".utf8))
        }
    }
}
