/// One change of a key's effective value, as an observer receives it.
///
/// `Value` is the key's type for typed keys, and `PropertyListValue` for string keys (where a nil
/// value means the key has no value anywhere in the search list).
public struct DefaultsChange<Value: Sendable>: Sendable {
    /// The key that changed.
    public let key: String
    /// The value before the change; nil unless ``ObservationOptions/old`` was asked for (and, for
    /// string keys, nil when the key had no value).
    public let oldValue: Value?
    /// The value after the change; nil unless ``ObservationOptions/new`` was asked for (and, for
    /// string keys, nil when the key has no value). Nil in a prior call.
    public let newValue: Value?
    /// Whether this process made the change, or it came from the file.
    public let origin: ChangeOrigin
    /// A call made before a local change (``ObservationOptions/prior``).
    public let isPrior: Bool
    /// The call made at registration (``ObservationOptions/initial``).
    public let isInitial: Bool

    package init(
        key: String, oldValue: Value?, newValue: Value?, origin: ChangeOrigin, isPrior: Bool = false,
        isInitial: Bool = false
    ) {
        self.key = key
        self.oldValue = oldValue
        self.newValue = newValue
        self.origin = origin
        self.isPrior = isPrior
        self.isInitial = isInitial
    }
}
