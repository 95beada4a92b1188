import Foundation

// Numbers written as text. macOS's `defaults write <domain> maxConnections 40` (a value without a
// type flag) stores the string "40", and so does every value of old-style text: a step that
// matches `.integer` alone skips such a value silently. These read the number either way, with the
// same rule the `defaults` command applies for a schema (``DefaultsSchema``).

extension DefaultsMigration {
    /// The whole number stored at `key`, however it was written: an integer, a real without a
    /// fraction (`40.0`), or text that is one (`"40"`, as an old-style `defaults write` stores it).
    ///
    /// ```swift
    /// try defaults.migrate(to: 4) { step in
    ///     if step.number == 4, let limit = step.integer("maxConnections") {
    ///         step.set(.integer(limit), forKey: "maxConnections")
    ///     }
    /// }
    /// ```
    ///
    /// - Parameter key: The key.
    /// - Returns: The number; nil when the key has no value, or a value that is no whole number
    ///   (`"12.5"`, `"lots"`, a date), which a step then leaves as it is.
    public func integer(_ key: String) -> Int64? {
        switch values[key] {
        case .integer(let integer)?: integer
        case .unsignedInteger(let integer)?: Int64(exactly: integer)
        case .real(let real)?: Int64(exactly: real)
        case .float(let float)?: Int64(exactly: float)
        case .string(let text)?: DefaultsSchema.integer(fromText: text)
        default: nil
        }
    }

    /// The number stored at `key`, however it was written: a real, an integer, or text that is a
    /// finite number (`"0.5"`, `"2"`, as an old-style `defaults write` stores it).
    ///
    /// - Parameter key: The key.
    /// - Returns: The number; nil when the key has no value, or a value that is no number.
    public func real(_ key: String) -> Double? {
        switch values[key] {
        case .real(let real)?: real
        case .float(let float)?: Double(float)
        case .integer(let integer)?: Double(integer)
        case .unsignedInteger(let integer)?: Double(integer)
        case .string(let text)?: DefaultsSchema.real(fromText: text)
        default: nil
        }
    }
}
