import Foundation

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
                helpArguments: "(true | false | yes | no | 1 | 0)"),
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

    /// Parses everything after the key of `defaults write <domain> <key> …`.
    static func writeOperation(_ cursor: inout ArgumentCursor, key: String) throws(CommandLineError) -> WriteOperation {
        let first = try cursor.next("value for key '\(key)'")
        guard let flag = Flag.named(first) else {
            if looksLikeOption(first) { throw cursor.error("unknown option '\(first)'") }
            try cursor.expectEnd()
            return .set(try bareValue(first, cursor: cursor))
        }
        switch flag.kind {
        case .array:
            return .set(.array(try elements(&cursor)))
        case .arrayAdd:
            return .arrayAdd(try elements(&cursor))
        case .dictionary:
            return .set(.dictionary(try entries(&cursor)))
        case .dictionaryAdd:
            return .dictionaryAdd(try entries(&cursor))
        default:
            let argument = try cursor.next("value after \(first)")
            try cursor.expectEnd()
            return .set(try scalar(flag.kind, argument, flagName: first, cursor: cursor))
        }
    }

    /// One element of `-array`/`-array-add`, or one value of `-dict`/`-dict-add`: a typed scalar flag with its
    /// argument, or a bare value.
    private static func element(_ cursor: inout ArgumentCursor, what: String) throws(CommandLineError)
        -> PropertyListValue
    {
        let argument = try cursor.next(what)
        guard let flag = Flag.named(argument) else {
            if looksLikeOption(argument) { throw cursor.error("unknown option '\(argument)'") }
            return try bareValue(argument, cursor: cursor)
        }
        if flag.kind.isContainer {
            throw cursor.error(
                "\(argument) cannot be nested; write nested values as a property list such as '(a, b)' or '{ k = v; }'")
        }
        let value = try cursor.next("value after \(argument)")
        return try scalar(flag.kind, value, flagName: argument, cursor: cursor)
    }

    private static func elements(_ cursor: inout ArgumentCursor) throws(CommandLineError) -> [PropertyListValue] {
        var result: [PropertyListValue] = []
        while !cursor.isAtEnd { result.append(try element(&cursor, what: "array element")) }
        return result
    }

    private static func entries(_ cursor: inout ArgumentCursor) throws(CommandLineError) -> [String: PropertyListValue]
    {
        var result: [String: PropertyListValue] = [:]
        while !cursor.isAtEnd {
            let key = try cursor.next("dictionary key")
            if Flag.named(key) != nil { throw cursor.error("expected a dictionary key, found \(key)") }
            result[key] = try element(&cursor, what: "value for dictionary key '\(key)'")
        }
        return result
    }

    /// `-x…` with a letter after the dash is meant as an option; `-5` and `-` are values.
    private static func looksLikeOption(_ argument: String) -> Bool {
        guard argument.hasPrefix("-"), let second = argument.dropFirst().unicodeScalars.first else { return false }
        return second.properties.isAlphabetic
    }

    /// A value given without a flag: an old-style property-list literal when it starts like one (`{`, `(`,
    /// `<`, a quote), which must then parse; otherwise the string itself (`14` is the string "14", as on macOS).
    static func bareValue(_ argument: String, cursor: ArgumentCursor) throws(CommandLineError) -> PropertyListValue {
        guard let first = argument.unicodeScalars.first(where: { !$0.properties.isWhitespace }),
            "{(<\"'".unicodeScalars.contains(first)
        else { return .string(argument) }
        do {
            return try OpenStepParser.parse(argument)
        } catch let error as DefaultsError {
            let detail = error.message.replacingOccurrences(of: "malformed property list at ", with: "")
            throw cursor.error("the value \(quote(argument)) is not a valid property list (\(detail))")
        } catch {
            throw cursor.error("the value \(quote(argument)) is not a valid property list")
        }
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
