import Foundation

// The check of a value against its entry, to any depth. Only the `defaults` command (before a
// write) calls it; the library's reads never do (docs/design.md, "Schemas", "Values inside
// values").

extension DefaultsSchema.Entry {
    /// One way a value does not fit its entry: where, and why.
    package struct Mismatch: Sendable, Hashable {
        /// The key's name, then a field's name after `.` and an element's index in `[…]`:
        /// `rateLimit.burst`, `servers[2].port`.
        package var path: String
        /// What is wrong, in words that quote the value unless it is secret:
        /// `missing`, `expects an integer, not a string ("oops")`.
        package var reason: String

        package init(path: String, reason: String) {
            self.path = path
            self.reason = reason
        }
    }

    /// `value` as the entry admits it, with the conversions macOS users expect, and every way it
    /// does not fit. Converted, at any depth: a whole real for an `integer`, an integer for a
    /// `real`, and, when `textIsUntyped` (a value typed without a flag, old-style text, where every
    /// scalar is a string), text for a number, a Boolean or a date.
    ///
    /// A dictionary with ``fields`` must have each field that is not optional and no other: an
    /// unknown field is refused, because `Codable` decoding skips it silently, so a misspelled
    /// optional field would be accepted and never read.
    ///
    /// - Parameters:
    ///   - value: The value.
    ///   - textIsUntyped: Whether a string may stand for another scalar.
    /// - Returns: The converted value, and the mismatches (empty when it fits).
    package func admit(_ value: PropertyListValue, textIsUntyped: Bool) -> (
        value: PropertyListValue, mismatches: [Mismatch]
    ) {
        var mismatches: [Mismatch] = []
        let converted = admit(value, path: name, secret: false, textIsUntyped: textIsUntyped, into: &mismatches)
        return (converted, mismatches)
    }

    private func admit(
        _ value: PropertyListValue, path: String, secret inherited: Bool, textIsUntyped: Bool,
        into mismatches: inout [Mismatch]
    ) -> PropertyListValue {
        let secret = inherited || isSecret
        let converted = Self.convert(value, to: type, textIsUntyped: textIsUntyped)
        guard type.matches(converted) else {
            mismatches.append(
                Mismatch(
                    path: path,
                    reason: typeReason(given: value, secret: secret, textIsUntyped: textIsUntyped)))
            return value
        }
        if let choices, !choices.contains(converted) {
            let listed = choices.map { String(describing: $0) }.joined(separator: ", ")
            mismatches.append(Mismatch(path: path, reason: "allows only \(listed)" + Self.quoted(value, secret)))
            return converted
        }
        if let range, let number = Self.number(converted), !range.contains(number) {
            mismatches.append(
                Mismatch(
                    path: path,
                    reason: "allows only \(Self.text(range.lowerBound)) to \(Self.text(range.upperBound))"
                        + Self.quoted(value, secret)))
            return converted
        }
        switch converted {
        case .dictionary(let entries) where fields != nil || elements != nil:
            var admitted: [String: PropertyListValue] = [:]
            if let fields {
                for field in fields {
                    guard let stored = entries[field.name] else {
                        if !field.isOptional {
                            mismatches.append(Mismatch(path: path + "." + field.name, reason: "missing"))
                        }
                        continue
                    }
                    admitted[field.name] = field.admit(
                        stored, path: path + "." + field.name, secret: secret, textIsUntyped: textIsUntyped,
                        into: &mismatches)
                }
                let names = fields.map(\.name)
                for (name, stored) in entries.sorted(by: { $0.key < $1.key }) where !names.contains(name) {
                    mismatches.append(
                        Mismatch(
                            path: path + "." + name,
                            reason: "is not a field of \(path) (its fields: \(names.joined(separator: ", ")))"))
                    admitted[name] = stored
                }
            } else if let elements {
                for (name, stored) in entries.sorted(by: { $0.key < $1.key }) {
                    admitted[name] = elements.admit(
                        stored, path: path + "." + name, secret: secret, textIsUntyped: textIsUntyped,
                        into: &mismatches)
                }
            }
            return .dictionary(admitted)
        case .array(let stored) where elements != nil:
            guard let elements else { return converted }
            return .array(
                stored.enumerated().map { index, element in
                    elements.admit(
                        element, path: "\(path)[\(index)]", secret: secret, textIsUntyped: textIsUntyped,
                        into: &mismatches)
                })
        default:
            return converted
        }
    }

    /// Why a value is not of the entry's type: a number with a fraction for an `integer` says so.
    private func typeReason(given value: PropertyListValue, secret: Bool, textIsUntyped: Bool) -> String {
        if type == .integer {
            var fraction: String?
            switch value {
            case .real(let real) where real.isFinite: fraction = Self.text(real)
            case .float(let float) where float.isFinite: fraction = Self.text(Double(float))
            case .string(let text) where textIsUntyped:
                if let real = Double(text), real.isFinite { fraction = text }
            default: break
            }
            if let fraction {
                return secret
                    ? "expects an integer, and the value is not a whole number"
                    : "expects an integer, and \(fraction) is not a whole number"
            }
        }
        let given = DefaultsSchema.ValueType(of: value)
        return "expects \(Self.article(type)) \(type.rawValue), not \(Self.article(given)) \(value.typeName)"
            + Self.quoted(value, secret)
    }

    /// ` ("oops")`: the value as old-style text, for a message, a string always in quotes (so that the
    /// string "40" does not read as a number); nothing for a secret one.
    private static func quoted(_ value: PropertyListValue, _ secret: Bool) -> String {
        guard !secret else { return "" }
        if case .string(let text) = value { return " (\(text.debugDescription))" }
        return " (\(OpenStepWriter.singleLineString(for: value)))"
    }

    /// A value converted to `type` where people expect it (see ``admit(_:textIsUntyped:)``); any
    /// other value as it is.
    static func convert(_ value: PropertyListValue, to type: DefaultsSchema.ValueType, textIsUntyped: Bool)
        -> PropertyListValue
    {
        switch (type, value) {
        case (.integer, .real(let real)): return Int64(exactly: real).map(PropertyListValue.integer) ?? value
        case (.integer, .float(let float)): return Int64(exactly: float).map(PropertyListValue.integer) ?? value
        case (.real, .integer(let integer)): return .real(Double(integer))
        case (.real, .unsignedInteger(let integer)): return .real(Double(integer))
        case (_, .string(let text)) where textIsUntyped:
            switch type {
            case .integer: return DefaultsSchema.integer(fromText: text).map(PropertyListValue.integer) ?? value
            case .real: return DefaultsSchema.real(fromText: text).map(PropertyListValue.real) ?? value
            case .boolean: return Bool(propertyListValue: value).map(PropertyListValue.bool) ?? value
            case .date: return PropertyListDateFormat.date(from: text).map(PropertyListValue.date) ?? value
            default: return value
            }
        default: return value
        }
    }

    private static func article(_ type: DefaultsSchema.ValueType) -> String {
        type == .integer || type == .array || type == .any ? "an" : "a"
    }

    private static func number(_ value: PropertyListValue) -> Double? {
        switch value {
        case .integer(let integer): Double(integer)
        case .unsignedInteger(let integer): Double(integer)
        case .real(let real): real
        case .float(let float): Double(float)
        default: nil
        }
    }

    /// A bound as people write it: `8`, not `8.0`.
    package static func text(_ bound: Double) -> String {
        bound.rounded() == bound && abs(bound) < 1e15 ? String(Int64(bound)) : String(bound)
    }
}

extension DefaultsSchema {
    /// The integer that text written by an old-style `defaults write` stands for (`"40"`, `" 40 "`,
    /// `"+40"`), or nil when it is not one.
    package static func integer(fromText text: String) -> Int64? {
        Int64(text.trimmingCharacters(in: .whitespaces))
    }

    /// The finite number that text stands for (`"0.5"`, `"2"`, `"1e3"`), or nil.
    package static func real(fromText text: String) -> Double? {
        Double(text.trimmingCharacters(in: .whitespaces)).flatMap { $0.isFinite ? $0 : nil }
    }
}
