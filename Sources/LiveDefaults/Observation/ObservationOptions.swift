/// What an observation delivers, as KVO's `NSKeyValueObservingOptions`.
public struct ObservationOptions: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Fill ``DefaultsChange/newValue``.
    public static let new = ObservationOptions(rawValue: 1 << 0)
    /// Fill ``DefaultsChange/oldValue``.
    public static let old = ObservationOptions(rawValue: 1 << 1)
    /// One call at registration with the current value (``DefaultsChange/isInitial``).
    public static let initial = ObservationOptions(rawValue: 1 << 2)
    /// A call before each local change, with ``DefaultsChange/isPrior`` set and the value before it.
    public static let prior = ObservationOptions(rawValue: 1 << 3)
}
