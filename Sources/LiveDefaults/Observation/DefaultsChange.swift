/// One change of a key's effective value, as an observer receives it.
///
/// The values have the key's own type: for `Key<Int>("port", default: 8080)` they are `Int` (the
/// key's default stands in when the key has no value), for an optional key such as
/// `Key<Profile?>("profile")` they are `Profile?`. Observers of a key by name get
/// `DefaultsChange<PropertyListValue?>`, where nil means the key has no value anywhere in the
/// search list.
///
/// Both values are always given, whatever the ``ObservationOptions``: in the call made at
/// registration (``isInitial``) both are the current value; in a prior call (``isPrior``)
/// `oldValue` is the value before the change and `newValue` the one it is about to take.
public struct DefaultsChange<Value: Sendable>: Sendable {
    /// The key that changed.
    public let key: String
    /// The value before the change (the current value in the initial call).
    public let oldValue: Value
    /// The value after the change (the value about to be set, in a prior call).
    public let newValue: Value
    /// Whether this process made the change, or it came from the file.
    public let origin: ChangeOrigin
    /// A call made before a local change (``ObservationOptions/prior``).
    public let isPrior: Bool
    /// The call made at registration (``ObservationOptions/initial``).
    public let isInitial: Bool

    package init(
        key: String, oldValue: Value, newValue: Value, origin: ChangeOrigin, isPrior: Bool = false,
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

/// A change as the store queues it for observers: values by name, nil when the key has none.
typealias UntypedChange = DefaultsChange<PropertyListValue?>
