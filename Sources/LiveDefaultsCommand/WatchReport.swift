import Foundation
import LiveDefaults
import LiveDefaultsPropertyList

/// One change that `defaults watch` reports.
package struct WatchReport: Sendable, Hashable {
    package var domain: String
    package var key: String
    package var oldValue: PropertyListValue?
    package var newValue: PropertyListValue?
    /// `external` (another process or an editor) or `local` (this process).
    package var origin: String

    package init(
        domain: String, key: String, oldValue: PropertyListValue?, newValue: PropertyListValue?, origin: String
    ) {
        self.domain = domain
        self.key = key
        self.oldValue = oldValue
        self.newValue = newValue
        self.origin = origin
    }

    /// `theme: light → "dark blue" (external)`; an absent value is `(none)`.
    package var line: String {
        "\(OpenStepWriter.quotedIfNeeded(key, style: .defaultsRead)): \(Self.text(oldValue)) → \(Self.text(newValue)) (\(origin))"
    }

    private static func text(_ value: PropertyListValue?) -> String {
        value.map(OpenStepWriter.singleLineString) ?? "(none)"
    }

    /// `{"domain":"com.example","key":"theme","old":"light","new":"dark","origin":"external"}`.
    ///
    /// Values map to JSON as strings, numbers, `true`/`false`, arrays and objects; dates become ISO 8601
    /// strings, data base64 strings, non-finite reals the strings "nan", "inf", "-inf"; absent values `null`.
    package var jsonLine: String {
        "{\"domain\":\(Self.json(domain)),\"key\":\(Self.json(key)),\"old\":\(Self.json(oldValue)),"
            + "\"new\":\(Self.json(newValue)),\"origin\":\(Self.json(origin))}"
    }

    /// A value as JSON, as ``jsonLine`` writes it; nil is `null`.
    static func json(_ value: PropertyListValue?) -> String {
        guard let value else { return "null" }
        switch value {
        case .string(let string): return json(string)
        case .integer(let integer): return String(integer)
        case .unsignedInteger(let integer): return String(integer)
        case .real(let real): return json(real: real)
        case .float(let float): return json(real: Double(float))
        case .bool(let bool): return bool ? "true" : "false"
        case .date(let date): return json(date.formatted(.iso8601))
        case .data(let data): return json(data.base64EncodedString())
        case .array(let elements): return "[" + elements.map { json($0) }.joined(separator: ",") + "]"
        case .dictionary(let entries):
            return "{" + entries.keys.sorted().map { json($0) + ":" + json(entries[$0]) }.joined(separator: ",") + "}"
        }
    }

    /// A real as JSON: a number, or a string for what JSON has no number for.
    private static func json(real: Double) -> String {
        guard real.isFinite else { return json(real.isNaN ? "nan" : real < 0 ? "-inf" : "inf") }
        return "\(real)"
    }

    /// A string as a JSON string.
    static func json(_ string: String) -> String {
        doubleQuoted(string) { scalar, output in
            switch scalar {
            case "\u{00}"..."\u{1F}", "\u{2028}", "\u{2029}": output += hexEscape("\\u", scalar.value)
            default: output.unicodeScalars.append(scalar)
            }
        }
    }
}
