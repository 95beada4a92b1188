import Foundation
import LiveDefaults
import LiveDefaultsPropertyList

/// The value part of `defaults write`: the typed flags (`-int 3`, `-array a b`, …), bare values and
/// old-style property-list literals, parsed into values without touching any domain.
package enum ValueArguments {
    /// A value flag, as listed by `defaults help`.
    package struct Flag: Sendable {
        package enum Kind: Sendable {
            case string, data, integer, float, boolean, date, array, arrayAdd, dictionary, dictionaryAdd

            var isContainer: Bool {
                switch self {
                case .array, .arrayAdd, .dictionary, .dictionaryAdd: true
                default: false
                }
            }
        }

        package let names: [String]
        package let kind: Kind
        /// `-int[eger]`
        package let helpName: String
        package let helpArguments: String

        package static func named(_ name: String) -> Flag? { all.first { $0.names.contains(name) } }

        /// Every value flag, in the order `help` lists them.
        package static let all: [Flag] = [
            Flag(names: ["-string"], kind: .string, helpName: "-string", helpArguments: "<string_value>"),
            Flag(names: ["-data"], kind: .data, helpName: "-data", helpArguments: "<hex_digits>"),
            Flag(
                names: ["-int", "-integer"], kind: .integer, helpName: "-int[eger]", helpArguments: "<integer_value>"),
            Flag(names: ["-float"], kind: .float, helpName: "-float ", helpArguments: "<floating-point_value>"),
            Flag(
                names: ["-bool", "-boolean"], kind: .boolean, helpName: "-bool[ean]",
                helpArguments: "(true | false | yes | no)"),
            Flag(names: ["-date"], kind: .date, helpName: "-date", helpArguments: "<date_rep>"),
            Flag(names: ["-array"], kind: .array, helpName: "-array", helpArguments: "<value1> <value2> ..."),
            Flag(
                names: ["-array-add"], kind: .arrayAdd, helpName: "-array-add", helpArguments: "<value1> <value2> ..."),
            Flag(
                names: ["-dict"], kind: .dictionary, helpName: "-dict",
                helpArguments: "<key1> <value1> <key2> <value2> ..."),
            Flag(
                names: ["-dict-add"], kind: .dictionaryAdd, helpName: "-dict-add", helpArguments: "<key1> <value1> ..."),
        ]
    }

    /// Parses everything after the key of `defaults write <domain> <key> …`, as macOS does: one value (a
    /// flag with its arguments, or a bare value), and nothing after it.
    static func writeOperation(_ cursor: inout ArgumentCursor) throws(CommandLineError) -> WriteOperation {
        let operation = try value(&cursor, compositesAllowed: true)
        if let extra = cursor.peek {
            throw .macOS("Unexpected argument \(extra); leaving defaults unchanged.")
        }
        return operation
    }

    /// One value at the cursor: a scalar flag and its argument, a bare value, or (when `compositesAllowed`, at
    /// the top only) `-array`/`-dict` and their variants, which take every remaining argument.
    private static func value(_ cursor: inout ArgumentCursor, compositesAllowed: Bool) throws(CommandLineError)
        -> WriteOperation
    {
        let token = try cursor.next("value")
        guard let flag = Flag.named(token) else {
            if looksLikeOption(token) { throw cursor.error("unknown option '\(token)'") }
            return .set(try bareValue(token))
        }
        guard flag.kind.isContainer else {
            let argument = try cursor.next("value after \(token)")
            return .set(try scalar(flag.kind, argument, flagName: token, cursor: cursor))
        }
        guard compositesAllowed else {
            throw .macOS("Cannot nest composite types (arrays and dictionaries); exiting")
        }
        switch flag.kind {
        case .array, .arrayAdd:
            var elements: [PropertyListValue] = []
            while !cursor.isAtEnd { elements.append(try element(&cursor)) }
            return flag.kind == .array ? .set(.array(elements)) : .arrayAdd(elements)
        default:
            var entries: [String: PropertyListValue] = [:]
            while !cursor.isAtEnd {
                // A key is parsed as a value too (so '"a (b)"' is the key a (b)), and must be a string.
                guard case .string(let key) = try element(&cursor) else {
                    throw .macOS("Dictionary keys must be strings")
                }
                if cursor.isAtEnd { throw .macOS("Key \(key) lacks a corresponding value") }
                entries[key] = try element(&cursor)
            }
            return flag.kind == .dictionary ? .set(.dictionary(entries)) : .dictionaryAdd(entries)
        }
    }

    /// One element of `-array`/`-array-add`, or one key or value of `-dict`/`-dict-add`.
    private static func element(_ cursor: inout ArgumentCursor) throws(CommandLineError) -> PropertyListValue {
        guard case .set(let element) = try value(&cursor, compositesAllowed: false) else {
            preconditionFailure("a nested value is never an -array-add or -dict-add")
        }
        return element
    }

    /// `-x…` with a letter after the dash is meant as an option; `-5` and `-` are values.
    private static func looksLikeOption(_ argument: String) -> Bool {
        guard argument.hasPrefix("-"), let second = argument.dropFirst().unicodeScalars.first else { return false }
        return second.properties.isAlphabetic
    }

    /// The characters that make macOS read a bare value as property-list text rather than as a string.
    private static let propertyListCharacters = Set("\"()[]{}<>".unicodeScalars)

    /// A value given without a flag, read as macOS reads it: text containing any of `" ( ) [ ] { } < >` is a
    /// property list (XML, such as `<integer>3</integer>` or `<dict>…</dict>`, or old-style text, such as
    /// `(a, b)`), which must parse; any other text is the string itself (`14` is the string "14").
    static func bareValue(_ argument: String) throws(CommandLineError) -> PropertyListValue {
        guard argument.unicodeScalars.contains(where: propertyListCharacters.contains) else {
            return .string(argument)
        }
        if let value = propertyList(argument) { return value }
        throw .macOS("Could not parse: \(argument).  Try single-quoting it.")
    }

    /// `text` as a property list: XML when it starts with a tag (`<string>`, `<?xml`, `<!DOCTYPE`), else
    /// old-style text (where `<…>` is data); nil when it is neither.
    private static func propertyList(_ text: String) -> PropertyListValue? {
        if looksLikeXML(text), let value = try? XMLPropertyListReader.decode(Data(text.utf8)) {
            return value
        }
        return try? OpenStepParser.parse(text)
    }

    /// Whether `text` starts with an XML tag (`<string>`, `<?xml`, `<!DOCTYPE`), not old-style data (`<0fbd>`).
    static func looksLikeXML(_ text: String) -> Bool {
        let start = text.unicodeScalars.drop(while: { $0.properties.isWhitespace })
        guard start.first == "<", let second = start.dropFirst().first else { return false }
        return second.properties.isAlphabetic || second == "?" || second == "!"
    }

    private static func scalar(_ kind: Flag.Kind, _ argument: String, flagName: String, cursor: ArgumentCursor)
        throws(CommandLineError) -> PropertyListValue
    {
        switch kind {
        case .string:
            return .string(argument)
        case .data:
            if let data = hexData(argument) { return .data(data) }
            let digits = argument.filter { !$0.isWhitespace }
            if digits.allSatisfy({ $0.isASCII && $0.isHexDigit }) {
                throw cursor.error(
                    "\(flagName) \(quote(argument)) has an odd number of hex digits; each byte needs two")
            }
            throw cursor.error("\(flagName) \(quote(argument)) is not hex data (use digits 0-9 and a-f, e.g. deadbeef)")
        case .integer:
            if let value = Int64(argument) { return .integer(value) }
            if let value = UInt64(argument) { return PropertyListValue(integer: value) }
            throw cursor.error("\(flagName) \(quote(argument)) is not an integer")
        case .float:
            if let value = Double(argument.trimmingCharacters(in: .whitespaces)), value.isFinite {
                return .real(value)
            }
            throw cursor.error("\(flagName) \(quote(argument)) is not a finite number")
        case .boolean:
            switch argument.lowercased() {
            case "yes", "true", "1": return .bool(true)
            case "no", "false", "0": return .bool(false)
            default:
                throw cursor.error("\(flagName) \(quote(argument)) is not a Boolean (use YES, NO, TRUE, FALSE, 1 or 0)")
            }
        case .date:
            if let date = PropertyListDateFormat.date(from: argument) { return .date(date) }
            throw cursor.error(
                "\(flagName) \(quote(argument)) is not a valid date (use 2024-01-01 12:00:00 +0000, "
                    + "2024-01-01T12:00:00Z or 2024-01-01)")
        case .array, .arrayAdd, .dictionary, .dictionaryAdd:
            throw cursor.error("\(flagName) cannot be used here")
        }
    }

    /// Hex digits (white space ignored, an optional `<…>` around them) as data; nil when not valid hex.
    private static func hexData(_ text: String) -> Data? {
        var digits = Substring(text.filter { !$0.isWhitespace })
        if digits.hasPrefix("<"), digits.hasSuffix(">"), digits.count >= 2 { digits = digits.dropFirst().dropLast() }
        guard digits.count.isMultiple(of: 2), digits.allSatisfy({ $0.isASCII && $0.isHexDigit }) else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = digits.startIndex
        while index < digits.endIndex {
            let next = digits.index(index, offsetBy: 2)
            guard let byte = UInt8(digits[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        return Data(bytes)
    }

    /// A value as an error message quotes it (shortened when long).
    static func quote(_ text: String) -> String {
        let shown = text.count > 60 ? String(text.prefix(57)) + "..." : text
        return "'" + shown.replacingOccurrences(of: "\n", with: "\\n") + "'"
    }
}
