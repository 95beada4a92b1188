import Observation

/// A key's value as an `Observable` object: reading ``value`` inside `withObservationTracking`
/// (or a SwiftUI-style view) tracks it, and the next change of the key — local or from another
/// process — fires the tracking.
///
/// ```swift
/// let theme = defaults.observable(.theme)
/// withObservationTracking { render(theme.value) } onChange: { scheduleRedraw() }
/// ```
///
/// There is one per key per ``Defaults``: ``Defaults/observable(_:)`` gives the same object each
/// time while it is in use, and what it tracks is kept by the `Defaults`, so a temporary
/// (`defaults.observable(.theme).value`, `@Setting`'s `$theme.value`) tracks as well as a stored one.
/// A key costs nothing until it is first used through this type or ``Setting``.
///
/// **When `onChange` runs.** Swift Observation's rule is that `onChange` runs *before* the change
/// (at `willSet`): for an `@Observable` class, a property read inside `onChange` still gives the
/// old value. ``value`` reads the store, which has already changed when the change is delivered, so
/// here `onChange` and anything it schedules read the new value (or a newer one). `onChange` runs
/// once, on the thread that delivers the change — for a local change, usually the thread that made
/// it; for a change from another process, a background thread — so do not draw there: schedule
/// the work (on a queue, a task, the next frame) and track again in it, as
/// `withObservationTracking` requires.
public final class ObservableSetting<Value: Sendable>: Observable, Sendable {
    private let tracked: TrackedSetting<Value>
    private let defaults: Defaults
    private let key: Defaults.Key<Value>

    init(defaults: Defaults, key: Defaults.Key<Value>, tracked: TrackedSetting<Value>) {
        self.defaults = defaults
        self.key = key
        self.tracked = tracked
    }

    /// The key's current value, tracked by Swift Observation. Setting it writes the store (and
    /// observers, this one included, are told).
    public var value: Value {
        get {
            tracked.recordAccess()
            return defaults[key]
        }
        set { defaults[key] = newValue }
    }
}

/// What an ``ObservableSetting`` tracks: the registrar and the observation that tells it of
/// each change of the key. Owned by its ``Defaults`` (no reference back to it, so the two never
/// keep each other alive); the public object holds the `Defaults` and this.
/// (docs/design.md, "Observation: Swift Observation").
final class TrackedSetting<Value: Sendable>: Observable, Sendable {
    private let registrar = ObservationRegistrar()
    private let token = Locked<ObservationToken?>(nil)
    let key: Defaults.Key<Value>
    /// The public object last handed out, kept weakly so that repeated calls give the same one.
    private let handle = Locked<WeakHandle>(WeakHandle())

    private struct WeakHandle {
        weak var object: ObservableSetting<Value>?
    }

    init(key: Defaults.Key<Value>) {
        self.key = key
    }

    /// Starts following the key in `defaults` (once the object is fully made).
    func start(in defaults: Defaults) {
        // Typed observation drops changes that decode to equal values.
        let observation = defaults.observe(key) { [weak self] _ in
            guard let self else { return }
            self.registrar.withMutation(of: self, keyPath: \.value) {}
        }
        token.withLock { $0 = observation }
    }

    /// The public object for `defaults`: the one handed out before if it is still in use.
    func handle(in defaults: Defaults) -> ObservableSetting<Value> {
        handle.withLock { handle in
            if let object = handle.object { return object }
            let object = ObservableSetting(defaults: defaults, key: key, tracked: self)
            handle.object = object
            return object
        }
    }

    /// What Swift Observation tracks (the value itself is read from the store).
    var value: Void { () }

    /// Records a read of the value for Swift Observation.
    func recordAccess() {
        registrar.access(self, keyPath: \.value)
    }
}

/// The ``TrackedSetting`` of each key used through ``ObservableSetting`` or ``Setting``, per
/// ``Defaults``, created on first use.
struct TrackedSettings {
    private var byName: [String: [AnyObject]] = [:]

    /// The one for `key`: the same object for the same key (or a key of the same name, type and
    /// default), nil when there is none yet.
    func existing<Value>(_ key: Defaults.Key<Value>) -> TrackedSetting<Value>? {
        for case let tracked as TrackedSetting<Value> in byName[key.name] ?? [] {
            // Keys whose defaults cannot be compared share one object; so do equal defaults.
            if tracked.key === key || Equality.areEqual(tracked.key.defaultValue, key.defaultValue)
                || !(key.defaultValue is any Equatable)
            {
                return tracked
            }
        }
        return nil
    }

    mutating func add<Value>(_ tracked: TrackedSetting<Value>) {
        byName[tracked.key.name, default: []].append(tracked)
    }
}

extension Defaults {
    /// The value of a typed key as an `Observable` object, for Swift Observation: the same object
    /// for the same key while it is in use (``ObservableSetting``).
    public func observable<Value>(_ key: Key<Value>) -> ObservableSetting<Value> {
        tracked(key).handle(in: self)
    }

    /// The ``TrackedSetting`` of `key`, made and started on first use.
    func tracked<Value>(_ key: Key<Value>) -> TrackedSetting<Value> {
        if let existing = trackedSettings.withLock({ $0.existing(key) }) { return existing }
        // Started outside the lock: registering an observer may deliver queued changes.
        let made = TrackedSetting(key: key)
        let winner = trackedSettings.withLock { settings -> TrackedSetting<Value> in
            if let existing = settings.existing(key) { return existing }
            settings.add(made)
            return made
        }
        if winner === made { made.start(in: self) }
        return winner
    }
}
