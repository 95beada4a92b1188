import Foundation
import LiveDefaults
import LiveDefaultsPropertyList

/// Values as the page receives them: a tree that keeps each property-list type, so the page can show nested
/// values recursively and never has to guess a type from JSON (docs/console.md).
package enum ConsoleValues {
    /// `{"t": <type>, "v": …}`: `string`, `integer` (as text, 64 bits kept), `real` (as text: JSON has no NaN),
    /// `bool`, `date` (ISO 8601), `data` (base64), `array` (nodes), `dict` (`[key, node]` pairs sorted by key:
    /// any key, `__proto__` included, stays data).
    package static func node(_ value: PropertyListValue) -> ConsoleJSON {
        switch value {
        case .string(let string): return ["t": "string", "v": .string(string)]
        case .integer(let integer): return ["t": "integer", "v": .string(String(integer))]
        case .unsignedInteger(let integer): return ["t": "integer", "v": .string(String(integer))]
        case .real(let real): return ["t": "real", "v": .string("\(real)")]
        case .float(let float): return ["t": "real", "v": .string("\(float)")]
        case .bool(let bool): return ["t": "bool", "v": .bool(bool)]
        case .date(let date): return ["t": "date", "v": .string(date.formatted(.iso8601))]
        case .data(let data): return ["t": "data", "v": .string(data.base64EncodedString())]
        case .array(let elements): return ["t": "array", "v": .array(elements.map(node))]
        case .dictionary(let entries):
            return [
                "t": "dict", "v": .array(entries.sorted { $0.key < $1.key }.map { [.string($0.key), node($0.value)] }),
            ]
        }
    }

    /// The node of a secret value that is not revealed.
    package static let secretNode: ConsoleJSON = ["t": "secret", "v": "<secret>"]

    /// The type's name as the schema says it (`integer`, `real`, `boolean`, …).
    package static func typeName(_ value: PropertyListValue) -> String {
        DefaultsSchema.ValueType(of: value).rawValue
    }

    /// The value as `defaults read` prints it, on one line.
    package static func line(_ value: PropertyListValue) -> String {
        OpenStepWriter.singleLineString(for: value)
    }

    /// The text the page's editor starts from for a container: old-style text when a schema gives the types
    /// (`defaults write` reads its scalars as the schema says), else an XML property list, which keeps every
    /// type.
    package static func editorText(_ value: PropertyListValue, typed: Bool) -> String {
        if typed { return OpenStepWriter.string(for: value) }
        guard let data = try? PropertyListCodec.encode(value, format: .xml) else {
            return OpenStepWriter.string(for: value)
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// What a schema says of a key, for the page.
    package static func schema(_ entry: DefaultsSchema.Entry, source: String) -> ConsoleJSON {
        var info: ConsoleJSON = [
            "type": .string(entry.type.rawValue), "secret": .bool(entry.isSecret), "source": .string(source),
        ]
        if let summary = entry.summary { info["summary"] = .string(summary) }
        if let choices = entry.choices { info["choices"] = .array(choices.map { .string(line($0)) }) }
        if let range = entry.range {
            info["minimum"] = .string(DefaultsSchema.Entry.text(range.lowerBound))
            info["maximum"] = .string(DefaultsSchema.Entry.text(range.upperBound))
        }
        if let value = entry.defaultValue { info["default"] = .string(entry.isSecret ? "<secret>" : line(value)) }
        if let fields = entry.fields {
            info["fields"] = .array(
                fields.map { field in
                    var described: ConsoleJSON = ["name": .string(field.name), "type": .string(field.type.rawValue)]
                    if let summary = field.summary { described["summary"] = .string(summary) }
                    return described
                })
        }
        return info
    }
}
