/// A property backed by a typed key: reading gives the key's value, assigning writes it.
///
/// ```swift
/// struct Settings {
///     @Setting(.theme) var theme                      // Defaults.standard
///     @Setting(.fontSize, in: appDefaults) var fontSize
/// }
/// ```
///
/// Reading the property inside `withObservationTracking` tracks the key, as reading the projected
/// value's ``ObservableSetting/value`` does: the next change of the key fires `onChange`.
/// `$theme` is the key's ``ObservableSetting`` (the same object each time while it is in use).
///
/// In an `@Observable` class, write `@ObservationIgnored @Setting(.theme) var theme`: the macro
/// would otherwise declare a `_theme` of its own beside the wrapper's, and the class would not
/// compile. Nothing is lost, since the setting tracks itself.
@propertyWrapper
public struct Setting<Value: Sendable>: Sendable {
    private let key: Defaults.Key<Value>
    private let defaults: Defaults

    /// - Parameters:
    ///   - key: The key the property reads and writes.
    ///   - defaults: The store; ``Defaults/standard`` when omitted.
    public init(_ key: Defaults.Key<Value>, in defaults: Defaults = .standard) {
        self.key = key
        self.defaults = defaults
    }

    /// The key's current value (read from the store, so a write is seen at once); tracked by
    /// Swift Observation.
    public var wrappedValue: Value {
        get {
            defaults.tracked(key).recordAccess()
            return defaults[key]
        }
        nonmutating set { defaults[key] = newValue }
    }

    /// The key's value as an `Observable` object.
    public var projectedValue: ObservableSetting<Value> { defaults.observable(key) }
}
