import Observation

/// A key's value as an `Observable` object: reading ``value`` inside `withObservationTracking`
/// (or a SwiftUI-style view) tracks it, and every change of the key — local or from another
/// process — fires the tracking.
///
/// ```swift
/// let theme = defaults.observable(.theme)
/// withObservationTracking { render(theme.value) } onChange: { scheduleRedraw() }
/// ```
public final class ObservableSetting<Value: Sendable>: Observable, Sendable {
    private let registrar = ObservationRegistrar()
    private let storage: Locked<Value>
    private let defaults: Defaults
    private let key: Defaults.Key<Value>
    private let token = Locked<ObservationToken?>(nil)

    init(defaults: Defaults, key: Defaults.Key<Value>) {
        self.defaults = defaults
        self.key = key
        self.storage = Locked(defaults[key])
        let observation = defaults.observe(key, options: [.new]) { [weak self] change in
            guard let self, let newValue = change.newValue else { return }
            self.registrar.withMutation(of: self, keyPath: \.value) {
                self.storage.withLock { $0 = newValue }
            }
        }
        token.withLock { $0 = observation }
    }

    /// The key's current value. Setting it writes the store (and observers, this one included,
    /// are told).
    public var value: Value {
        get {
            registrar.access(self, keyPath: \.value)
            return storage.withLock { $0 }
        }
        set {
            defaults[key] = newValue
        }
    }
}

extension Defaults {
    /// The value of a typed key as an `Observable` object, for Swift Observation.
    public func observable<Value>(_ key: Key<Value>) -> ObservableSetting<Value> {
        ObservableSetting(defaults: self, key: key)
    }
}
