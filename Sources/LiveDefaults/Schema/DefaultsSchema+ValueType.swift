import Foundation

extension DefaultsSchema {
    /// The kind of value a key holds, as a schema names it: the property-list types, and `any` for a
    /// key whose values the schema does not constrain (a ``PropertyListValue`` key).
    public enum ValueType: String, Sendable, Hashable, CaseIterable {
        /// Text (`String`, `URL`, a `String`-backed enum).
        case string
        /// A whole number (`Int` and the other integer types, an `Int`-backed enum).
        case integer
        /// A floating-point number (`Double`, `Float`).
        case real
        /// `true` or `false`.
        case boolean
        /// A date.
        case date
        /// Bytes.
        case data
        /// An array.
        case array
        /// A dictionary with string keys (also a `Codable` structure).
        case dictionary
        /// Any property-list value.
        case any

        /// Whether a stored value is of this type as it stands (an integer is no real here: the
        /// `defaults` command converts, the check does not).
        package func matches(_ value: PropertyListValue) -> Bool {
            switch (self, value) {
            case (.any, _), (.string, .string), (.integer, .integer), (.integer, .unsignedInteger), (.real, .real),
                (.real, .float), (.boolean, .bool), (.date, .date), (.data, .data), (.array, .array),
                (.dictionary, .dictionary):
                true
            default: false
            }
        }

        /// The type of a stored value.
        package init(of value: PropertyListValue) {
            switch value {
            case .string: self = .string
            case .integer, .unsignedInteger: self = .integer
            case .real, .float: self = .real
            case .bool: self = .boolean
            case .date: self = .date
            case .data: self = .data
            case .array: self = .array
            case .dictionary: self = .dictionary
            }
        }

        /// The type a Swift type is stored as; `any` when the type alone does not say (a `Codable`
        /// type, ``PropertyListValue``).
        static func of(_ type: Any.Type) -> ValueType {
            if type == String.self || type == URL.self { return .string }
            if type == Bool.self { return .boolean }
            if type is any FixedWidthInteger.Type { return .integer }
            if type is any BinaryFloatingPoint.Type { return .real }
            if type == Date.self { return .date }
            if type == Data.self { return .data }
            if let optional = type as? any SchemaOptional.Type { return of(optional.wrappedType) }
            if let raw = type as? any RawRepresentable.Type { return of(rawValueType(of: raw)) }
            if type is any SchemaArray.Type { return .array }
            if type is any SchemaDictionary.Type { return .dictionary }
            return .any
        }

        private static func rawValueType<Raw: RawRepresentable>(of type: Raw.Type) -> Any.Type { Raw.RawValue.self }
    }
}

/// `Optional`, to find the wrapped type of a key's `Value` at run time.
protocol SchemaOptional { static var wrappedType: Any.Type { get } }
extension Optional: SchemaOptional { static var wrappedType: Any.Type { Wrapped.self } }
/// `Array`, recognised at run time.
protocol SchemaArray {}
extension Array: SchemaArray {}
/// `Dictionary`, recognised at run time.
protocol SchemaDictionary {}
extension Dictionary: SchemaDictionary {}
