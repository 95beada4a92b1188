// Observing keys as asynchronous sequences.
extension Defaults {
    /// The changes of a typed key as an asynchronous sequence. The registration ends when the
    /// iterating task is cancelled or the sequence is dropped.
    ///
    /// ```swift
    /// for await change in defaults.changes(of: .theme) {
    ///     apply(change.newValue)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - key: The key to observe.
    ///   - options: As for ``observe(_:options:queue:_:)-(Defaults.Key<Value>,_,_,_)``; with
    ///     ``ObservationOptions/initial`` the sequence starts with the current value.
    /// - Returns: A sequence of the key's changes, in the order they were made.
    public func changes<Value>(
        of key: Key<Value>, options: ObservationOptions = []
    ) -> AsyncStream<DefaultsChange<Value>> {
        AsyncStream { continuation in
            let token = observe(key, options: options) { continuation.yield($0) }
            continuation.onTermination = { _ in token.cancel() }
        }
    }

    /// The changes of a key, by name, as an asynchronous sequence of property-list values.
    public func changes(
        of key: String, options: ObservationOptions = []
    ) -> AsyncStream<DefaultsChange<PropertyListValue?>> {
        AsyncStream { continuation in
            let token = observe(key, options: options) { continuation.yield($0) }
            continuation.onTermination = { _ in token.cancel() }
        }
    }
}
