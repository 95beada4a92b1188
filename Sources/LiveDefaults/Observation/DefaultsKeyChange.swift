import Dispatch

/// One change of one of several typed keys observed together: it says which key changed, and
/// gives the values as that key's type.
///
/// ```swift
/// let token = defaults.observe([.theme, .fontSize]) { change in
///     if let theme = change.newValue(of: .theme) { apply(theme) }
///     if let size = change.newValue(of: .fontSize) { resize(size) }
/// }
/// ```
public struct DefaultsKeyChange: Sendable {
    /// The key that changed.
    public let key: Defaults.AnyKey
    /// Whether this process made the change, or it came from the file.
    public let origin: ChangeOrigin
    /// The call made at registration (``ObservationOptions/initial``), one per key.
    public let isInitial: Bool
    let storedOld: PropertyListValue?
    let storedNew: PropertyListValue?

    /// Whether this is a change of `key`.
    public func isChange(of key: Defaults.AnyKey) -> Bool { key.name == self.key.name }

    /// The value after the change, as `key`'s type (its default when the key has no value or the
    /// stored value cannot be read as the type); nil when this is a change of another key.
    public func newValue<Value>(of key: Defaults.Key<Value>) -> Value? {
        isChange(of: key) ? Self.decode(storedNew, as: key) : nil
    }

    /// The value before the change, as `key`'s type; nil when this is a change of another key or
    /// the initial call.
    public func oldValue<Value>(of key: Defaults.Key<Value>) -> Value? {
        isChange(of: key) && !isInitial ? Self.decode(storedOld, as: key) : nil
    }

    private static func decode<Value>(_ stored: PropertyListValue?, as key: Defaults.Key<Value>) -> Value {
        guard let stored, let value = try? key.decode(stored) else { return key.defaultValue }
        return value
    }
}

extension Defaults {
    /// Observes several typed keys, of any value types, with one token: `handler` is called once per
    /// change of any of them, in the order the changes were made, and each change says which key
    /// it is (``DefaultsKeyChange/newValue(of:)``).
    ///
    /// - Parameters:
    ///   - keys: The keys to observe.
    ///   - options: ``ObservationOptions/initial`` calls at once for each key; the values are
    ///     always given.
    ///   - queue: Where to call `handler`; nil calls it as ``observe(_:options:queue:_:)-(String,_,_,_)``
    ///     does.
    ///   - handler: Called with each change of any of the keys.
    /// - Returns: One token for them all.
    public func observe(
        _ keys: [AnyKey], options: ObservationOptions = [], queue: DispatchQueue? = nil,
        _ handler: @escaping @Sendable (DefaultsKeyChange) -> Void
    ) -> ObservationToken {
        let tokens = keys.map { key in
            observe(key.name, options: options.intersection(.initial), queue: queue) { change in
                handler(
                    DefaultsKeyChange(
                        key: key, origin: change.origin, isInitial: change.isInitial, storedOld: change.oldValue,
                        storedNew: change.newValue))
            }
        }
        return ObservationToken { tokens.forEach { $0.cancel() } }
    }

    /// The changes of several typed keys as one asynchronous sequence, in the order they were made.
    ///
    /// ```swift
    /// for await change in defaults.changes(of: .theme, .fontSize) {
    ///     if change.isChange(of: .theme) { redraw() }
    /// }
    /// ```
    public func changes(of first: AnyKey, _ second: AnyKey, _ more: AnyKey..., options: ObservationOptions = [])
        -> AsyncStream<DefaultsKeyChange>
    {
        let keys = [first, second] + more
        return AsyncStream { continuation in
            let token = observe(keys, options: options) { continuation.yield($0) }
            continuation.onTermination = { _ in token.cancel() }
        }
    }
}
