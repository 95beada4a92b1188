import Foundation

/// Where LiveDefaults reports problems that no call can throw: a corrupt file found while loading
/// or reloading, a background flush that failed, file watching that fell back to polling — and
/// the end of an outage it reported (``DefaultsError/Code/remoteRecovered``, not a failure), so that
/// a log that shows the loss shows its end.
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

    /// Listeners that hear every report besides the handler, for tests running side by side
    /// (one test's handler would take another's reports).
    private static let listeners = Locked<[ObjectIdentifier: @Sendable (DefaultsError) -> Void]>([:])

    /// Calls `listener` with every report, besides the handler, until the token is cancelled.
    package static func listen(_ listener: @escaping @Sendable (DefaultsError) -> Void) -> ObservationToken {
        let box = Locked(0)
        let id = ObjectIdentifier(box)
        listeners.withLock { $0[id] = listener }
        return ObservationToken {
            _ = box; listeners.withLock { _ = $0.removeValue(forKey: id) }
        }
    }

    /// Reports `error` to the installed handler.
    package static func report(_ error: DefaultsError) {
        for listener in listeners.withLock({ Array($0.values) }) { listener(error) }
        if let installed = handler.withLock({ $0 }) {
            installed(error)
        } else {
            FileHandle.standardError.write(Data("LiveDefaults: \(error)\n".utf8))
        }
    }
}
