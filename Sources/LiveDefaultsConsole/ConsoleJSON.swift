import LiveDefaultsPropertyList

/// A JSON document as the console sends it: typed, so that writing 1,000 rows casts nothing (Foundation's
/// JSONSerialization took 1.5 s over `[String: Any]` for them), and an object keeps its members' order.
package enum ConsoleJSON: Sendable, Equatable {
    case null
    case bool(Bool)
    case integer(Int64)
    case string(String)
    case array([ConsoleJSON])
    /// Members in order; a name given twice keeps its first place and its last value (``subscript(_:)``).
    case object([(String, ConsoleJSON)])

    package static func == (left: ConsoleJSON, right: ConsoleJSON) -> Bool {
        switch (left, right) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.integer(let a), .integer(let b)): a == b
        case (.string(let a), .string(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)): a.elementsEqual(b) { $0.0 == $1.0 && $0.1 == $1.1 }
        default: false
        }
    }

    /// An object's member (nil for a missing one, or when this is not an object); setting nil removes it.
    package subscript(name: String) -> ConsoleJSON? {
        get {
            guard case .object(let members) = self else { return nil }
            return members.first { $0.0 == name }?.1
        }
        set {
            guard case .object(var members) = self else { return }
            if let index = members.firstIndex(where: { $0.0 == name }) {
                if let newValue { members[index].1 = newValue } else { members.remove(at: index) }
            } else if let newValue {
                members.append((name, newValue))
            }
            self = .object(members)
        }
    }

    /// The string, when this is one.
    package var stringValue: String? {
        if case .string(let string) = self { return string }
        return nil
    }

    /// The number, when this is an integer.
    package var integerValue: Int64? {
        if case .integer(let integer) = self { return integer }
        return nil
    }

    /// The elements, when this is an array.
    package var arrayValue: [ConsoleJSON]? {
        if case .array(let elements) = self { return elements }
        return nil
    }

    /// The document as text.
    package var text: String {
        var output = ""
        write(to: &output)
        return output
    }

    private func write(to output: inout String) {
        switch self {
        case .null: output += "null"
        case .bool(let bool): output += bool ? "true" : "false"
        case .integer(let integer): output += String(integer)
        case .string(let string): Self.write(string, to: &output)
        case .array(let elements):
            output += "["
            for (index, element) in elements.enumerated() {
                if index > 0 { output += "," }
                element.write(to: &output)
            }
            output += "]"
        case .object(let members):
            output += "{"
            for (index, (name, value)) in members.enumerated() {
                if index > 0 { output += "," }
                Self.write(name, to: &output)
                output += ":"
                value.write(to: &output)
            }
            output += "}"
        }
    }

    /// A string, escaped: quotes, backslashes, control characters, and U+2028/U+2029 (which end a line in
    /// older JavaScript); `<`, `>` and `&` too, so that no text in a document can read as markup anywhere.
    private static func write(_ string: String, to output: inout String) {
        output += doubleQuoted(string) { scalar, output in
            switch scalar {
            case "\u{00}"..."\u{1F}", "\u{2028}", "\u{2029}", "<", ">", "&": output += hexEscape("\\u", scalar.value)
            default: output.unicodeScalars.append(scalar)
            }
        }
    }
}

extension ConsoleJSON: ExpressibleByStringLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    package init(stringLiteral value: String) { self = .string(value) }
    package init(booleanLiteral value: Bool) { self = .bool(value) }
    package init(integerLiteral value: Int64) { self = .integer(value) }
    package init(arrayLiteral elements: ConsoleJSON...) { self = .array(elements) }
    package init(dictionaryLiteral elements: (String, ConsoleJSON)...) { self = .object(elements) }
}
