/// When an observation calls, as KVO's `NSKeyValueObservingOptions`.
///
/// A change always carries both its old and its new value (``DefaultsChange``): `.old` and `.new`
/// are accepted, so KVO-style option sets read as before, and change nothing.
public struct ObservationOptions: OptionSet, Sendable, Hashable {
    /// The options' bits.
    public let rawValue: UInt8
    /// Creates options from their bits; use the named options (``initial``, ``prior``) instead.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// KVO's option for the new value; it is always given.
    public static let new = ObservationOptions(rawValue: 1 << 0)
    /// KVO's option for the old value; it is always given.
    public static let old = ObservationOptions(rawValue: 1 << 1)
    /// One call at registration with the current value (``DefaultsChange/isInitial``).
    public static let initial = ObservationOptions(rawValue: 1 << 2)
    /// A call before each local change, with ``DefaultsChange/isPrior`` set.
    public static let prior = ObservationOptions(rawValue: 1 << 3)
}
