import Foundation

/// A type whose values are property-list values: the types the typed API accepts.
///
/// String, the integer types, Double, Float, Bool, Date, Data, URL, ``PropertyListValue``, and
/// arrays and `[String: …]` dictionaries of them conform. Reading converts the way UserDefaults'
/// getters do (a stored "14" reads as the `Int` 14, a stored integer as a `Bool`).
public protocol PropertyListRepresentable: Sendable {
    /// The value as a property-list value.
    var propertyListValue: PropertyListValue { get }
    /// Reads a value; nil when `propertyListValue` cannot be read as this type.
    init?(propertyListValue: PropertyListValue)
}

extension PropertyListValue: PropertyListRepresentable {
    public var propertyListValue: PropertyListValue { self }
    public init?(propertyListValue: PropertyListValue) { self = propertyListValue }
}

extension String: PropertyListRepresentable {
    public var propertyListValue: PropertyListValue { .string(self) }
    public init?(propertyListValue: PropertyListValue) {
        guard case .string(let value) = propertyListValue else { return nil }
        self = value
    }
}

extension Bool: PropertyListRepresentable {
    public var propertyListValue: PropertyListValue { .bool(self) }
    public init?(propertyListValue: PropertyListValue) {
        switch propertyListValue {
        case .bool(let value): self = value
        case .integer(let value) where value == 0 || value == 1: self = value == 1
        case .string(let text):
            switch text.lowercased() {
            case "yes", "true", "1": self = true
            case "no", "false", "0": self = false
            default: return nil
            }
        default: return nil
        }
    }
}

/// Integers read from integers that fit, whole reals, and decimal strings (argument-domain values).
extension PropertyListRepresentable where Self: FixedWidthInteger {
    public var propertyListValue: PropertyListValue { PropertyListValue(integer: self) }
    public init?(propertyListValue: PropertyListValue) {
        switch propertyListValue {
        case .integer(let value): guard let exact = Self(exactly: value) else { return nil }; self = exact
        case .unsignedInteger(let value): guard let exact = Self(exactly: value) else { return nil }; self = exact
        case .real(let value): guard let exact = Self(exactly: value) else { return nil }; self = exact
        case .float(let value): guard let exact = Self(exactly: value) else { return nil }; self = exact
        case .string(let text):
            guard let parsed = Self(text.trimmingCharacters(in: .whitespaces)) else { return nil }; self = parsed
        default: return nil
        }
    }
}

extension Int: PropertyListRepresentable {}
extension Int8: PropertyListRepresentable {}
extension Int16: PropertyListRepresentable {}
extension Int32: PropertyListRepresentable {}
extension Int64: PropertyListRepresentable {}
extension UInt: PropertyListRepresentable {}
extension UInt8: PropertyListRepresentable {}
extension UInt16: PropertyListRepresentable {}
extension UInt32: PropertyListRepresentable {}
extension UInt64: PropertyListRepresentable {}

extension Double: PropertyListRepresentable {
    public var propertyListValue: PropertyListValue { .real(self) }
    public init?(propertyListValue: PropertyListValue) {
        switch propertyListValue {
        case .real(let value): self = value
        case .float(let value): self = Double(value)
        case .integer(let value): self = Double(value)
        case .unsignedInteger(let value): self = Double(value)
        case .string(let text):
            guard let parsed = Double(text.trimmingCharacters(in: .whitespaces)) else { return nil }; self = parsed
        default: return nil
        }
    }
}

extension Float: PropertyListRepresentable {
    /// Stored as a 4-byte real, as Foundation stores a `Float` (``PropertyListValue/float(_:)``).
    public var propertyListValue: PropertyListValue { .float(self) }
    public init?(propertyListValue: PropertyListValue) {
        if case .float(let value) = propertyListValue {
            self = value
            return
        }
        guard let value = Double(propertyListValue: propertyListValue) else { return nil }
        self = Float(value)
    }
}

extension Date: PropertyListRepresentable {
    public var propertyListValue: PropertyListValue { .date(self) }
    public init?(propertyListValue: PropertyListValue) {
        guard case .date(let value) = propertyListValue else { return nil }
        self = value
    }
}

extension Data: PropertyListRepresentable {
    public var propertyListValue: PropertyListValue { .data(self) }
    public init?(propertyListValue: PropertyListValue) {
        guard case .data(let value) = propertyListValue else { return nil }
        self = value
    }
}

extension URL: PropertyListRepresentable {
    /// Stored as UserDefaults stores URLs: a file URL as its path, others as the absolute string.
    public var propertyListValue: PropertyListValue { .string(URL.storedString(self)) }
    public init?(propertyListValue: PropertyListValue) {
        guard case .string(let value) = propertyListValue, let url = URL(storedString: value) else { return nil }
        self = url
    }
}

extension Array: PropertyListRepresentable where Element: PropertyListRepresentable {
    public var propertyListValue: PropertyListValue { .array(map(\.propertyListValue)) }
    public init?(propertyListValue: PropertyListValue) {
        guard case .array(let values) = propertyListValue else { return nil }
        var result: [Element] = []
        result.reserveCapacity(values.count)
        for value in values {
            guard let element = Element(propertyListValue: value) else { return nil }
            result.append(element)
        }
        self = result
    }
}

extension Dictionary: PropertyListRepresentable where Key == String, Value: PropertyListRepresentable {
    public var propertyListValue: PropertyListValue { .dictionary(mapValues(\.propertyListValue)) }
    public init?(propertyListValue: PropertyListValue) {
        guard case .dictionary(let values) = propertyListValue else { return nil }
        var result: [String: Value] = [:]
        result.reserveCapacity(values.count)
        for (key, value) in values {
            guard let element = Value(propertyListValue: value) else { return nil }
            result[key] = element
        }
        self = result
    }
}
