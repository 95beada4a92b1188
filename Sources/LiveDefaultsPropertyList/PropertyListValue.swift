import Foundation

/// A property-list value: the only kinds of value a suite file can hold.
///
/// Strings, integers, reals, Booleans, dates, data, and arrays and dictionaries of them.
/// Integers are kept exactly: `integer` covers `Int64`, `unsignedInteger` the values above
/// `Int64.max` (a plist integer may be as large as `UInt64.max`).
///
/// ```swift
/// let value: PropertyListValue = ["theme": "dark", "fontSize": 14, "recent": ["a", "b"]]
/// ```
public enum PropertyListValue: Sendable, Hashable {
    /// A string (`<string>` in XML).
    case string(String)
    /// A signed integer (`<integer>`): every integer from `Int64.min` to `Int64.max`.
    case integer(Int64)
    /// An integer above `Int64.max`. Smaller unsigned values are stored as ``integer(_:)``.
    case unsignedInteger(UInt64)
    /// A 64-bit real (`<real>`).
    case real(Double)
    /// A 32-bit real, as a `Float` is stored: kept apart from ``real(_:)`` so that it reads back as
    /// the `Float`'s own text ("12.34"), as Foundation's UserDefaults does. A binary file keeps it
    /// as a 4-byte real; XML has one kind of real, so it comes back from XML as ``real(_:)``.
    case float(Float)
    /// A Boolean (`<true/>` or `<false/>`).
    case bool(Bool)
    /// A moment in time (`<date>`), kept to the precision of a `Date`.
    case date(Date)
    /// Bytes (`<data>`).
    case data(Data)
    /// An ordered list of values (`<array>`).
    case array([PropertyListValue])
    /// Values by string key (`<dict>`); the suite file's root is one.
    case dictionary([String: PropertyListValue])

    /// Creates an integer value from any fixed-width integer, choosing the exact representation.
    public init<Integer: BinaryInteger>(integer: Integer) {
        if let signed = Int64(exactly: integer) {
            self = .integer(signed)
        } else {
            self = .unsignedInteger(UInt64(clamping: integer))
        }
    }

    /// The name of this value's kind as `defaults read-type` prints it ("string", "integer", …).
    public var typeName: String {
        switch self {
        case .string: "string"
        case .integer, .unsignedInteger: "integer"
        case .real, .float: "float"
        case .bool: "boolean"
        case .date: "date"
        case .data: "data"
        case .array: "array"
        case .dictionary: "dictionary"
        }
    }
}

extension PropertyListValue {
    /// The string, if this is a string.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The dictionary, if this is a dictionary.
    public var dictionaryValue: [String: PropertyListValue]? {
        if case .dictionary(let value) = self { return value }
        return nil
    }

    /// The number, widened to a `Double`, if this is a real of either width.
    var widenedReal: Double? {
        switch self {
        case .real(let value): value
        case .float(let value): Double(value)
        default: nil
        }
    }

    /// The array, if this is an array.
    public var arrayValue: [PropertyListValue]? {
        if case .array(let value) = self { return value }
        return nil
    }
}

extension PropertyListValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    /// Creates a ``string(_:)`` from a string literal: `"dark"`.
    public init(stringLiteral value: String) { self = .string(value) }
    /// Creates an ``integer(_:)`` from an integer literal: `14`.
    public init(integerLiteral value: Int64) { self = .integer(value) }
    /// Creates a ``real(_:)`` from a floating-point literal: `1.5`.
    public init(floatLiteral value: Double) { self = .real(value) }
    /// Creates a ``bool(_:)`` from `true` or `false`.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// Creates an ``array(_:)`` from an array literal: `["a", 1]`.
    public init(arrayLiteral elements: PropertyListValue...) { self = .array(elements) }
    /// Creates a ``dictionary(_:)`` from a dictionary literal: `["theme": "dark", "fontSize": 14]`.
    /// When a key is written twice, the last value is kept.
    public init(dictionaryLiteral elements: (String, PropertyListValue)...) {
        self = .dictionary(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

extension PropertyListValue: CustomStringConvertible {
    /// The value in Swift's literal syntax, for logs and messages: strings quoted, data as hex in
    /// angle brackets (`<0a1b>`), dates in ISO 8601, dictionaries with their keys sorted.
    public var description: String {
        switch self {
        case .string(let value): value.debugDescription
        case .integer(let value): String(value)
        case .unsignedInteger(let value): String(value)
        case .real(let value): String(value)
        case .float(let value): String(value)
        case .bool(let value): value ? "true" : "false"
        case .date(let value): value.formatted(.iso8601)
        case .data(let value): "<\(value.map { String(format: "%02x", $0) }.joined())>"
        case .array(let values): "[" + values.map(\.description).joined(separator: ", ") + "]"
        case .dictionary(let values):
            "["
                + values.sorted { $0.key < $1.key }.map { "\($0.key.debugDescription): \($0.value)" }
                .joined(separator: ", ") + "]"
        }
    }
}
