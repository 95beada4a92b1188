import LiveDefaults

/// Every change an observer of all keys received, in the order it received them: for comparing exact
/// sequences, checking each key's chain of old → new values, and what the observer believes now.
///
/// Shared by the test targets (as swift-argument-parser's `ArgumentParserTestHelpers` is).
public final class ChangeLog: Sendable {
    /// One change as the observer received it.
    public struct Entry: Equatable, Sendable, CustomStringConvertible {
        /// The key that changed.
        public var key: String
        /// The value before the change (`nil`: no value).
        public var oldValue: PropertyListValue?
        /// The value after the change (`nil`: no value).
        public var newValue: PropertyListValue?
        /// Who made the change.
        public var origin: ChangeOrigin

        /// An entry, to compare a log with.
        public init(key: String, old: PropertyListValue?, new: PropertyListValue?, origin: ChangeOrigin) {
            self.key = key
            self.oldValue = old
            self.newValue = new
            self.origin = origin
        }

        /// The entry as `key: old → new (origin)`.
        public var description: String {
            let old = oldValue.map(String.init(describing:)) ?? "nil"
            let new = newValue.map(String.init(describing:)) ?? "nil"
            return "\(key): \(old) → \(new) (\(origin))"
        }
    }

    // `Locked`, not `Mutex`: the thread sanitizer sees its pthread lock (`LIVEDEFAULTS_PTHREAD_LOCKS`),
    // not a futex.
    private let entries = Locked<[Entry]>([])
    private let token = Locked<ObservationToken?>(nil)
    /// The effective values when the log started (empty for a log made with ``init()``).
    public let initial: [String: PropertyListValue]

    /// An empty log, which holds what ``record(_:)`` is given.
    public init() {
        initial = [:]
    }

    /// A log of every change `defaults` delivers from now on to an observer of all keys, starting from
    /// its effective values now; the observation ends with the log.
    public init(_ defaults: Defaults) {
        var initial: [String: PropertyListValue] = [:]
        for (key, value) in defaults.dictionaryRepresentation() {
            initial[key] = try? PropertyListValue(foundationObject: value)
        }
        self.initial = initial
        let observation = defaults.observeAll { [weak self] change in self?.record(change) }
        token.withLock { $0 = observation }
    }

    /// Adds `change` to the log.
    public func record(_ change: DefaultsChange<PropertyListValue?>) {
        record(Entry(change))
    }

    /// Adds `entry` to the log (for observers whose changes are not of property-list values).
    public func record(_ entry: Entry) {
        entries.withLock { $0.append(entry) }
    }

    /// Every change so far, in the order received.
    public var all: [Entry] { entries.withLock { $0 } }

    /// The changes of `key` so far, in the order received.
    public func of(_ key: String) -> [Entry] { all.filter { $0.key == key } }

    /// Keys whose chain of old → new broke (an old value that was not the previous new), starting
    /// from each key's value when the log started.
    public func brokenChains() -> [String] {
        var last: [String: PropertyListValue?] = [:]
        var broken: Set<String> = []
        for change in all {
            let previous = last[change.key] ?? initial[change.key]
            if change.oldValue != previous { broken.insert(change.key) }
            last[change.key] = .some(change.newValue)
        }
        return broken.sorted()
    }

    /// Every effective value as the observer must see it now: the values when the log started,
    /// with every change applied.
    public var current: [String: PropertyListValue] {
        var values = initial
        for change in all { values[change.key] = change.newValue }
        return values
    }

    /// The last new value of each key the observer heard of (what it believes now).
    public var believed: [String: PropertyListValue] {
        var values: [String: PropertyListValue?] = [:]
        for change in all { values[change.key] = .some(change.newValue) }
        return values.compactMapValues { $0 }
    }
}

extension ChangeLog.Entry {
    /// The entry for a change an observer received.
    init(_ change: DefaultsChange<PropertyListValue?>) {
        self.init(key: change.key, old: change.oldValue, new: change.newValue, origin: change.origin)
    }
}
