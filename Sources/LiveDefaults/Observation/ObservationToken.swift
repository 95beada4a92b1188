/// Keeps an observation alive. ``cancel()`` ends it; so does dropping the last reference.
///
/// ```swift
/// let token = defaults.observe("theme") { change in print(change.newValue as Any) }
/// token.cancel()   // idempotent
/// ```
public final class ObservationToken: Sendable {
    private let onCancel: Locked<(@Sendable () -> Void)?>

    package init(onCancel: @escaping @Sendable () -> Void) {
        self.onCancel = Locked(onCancel)
    }

    /// Ends the observation: no call starts after this returns. Calling it again does nothing;
    /// calling it from inside the observer's own callback is safe.
    public func cancel() {
        let action = onCancel.withLock { action in
            defer { action = nil }
            return action
        }
        action?()
    }

    /// Whether ``cancel()`` has run.
    public var isCancelled: Bool { onCancel.withLock { $0 == nil } }

    deinit { cancel() }
}
