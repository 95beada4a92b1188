import Foundation

/// Parses old-style (OpenStep) property-list text, as macOS `defaults` and CFPropertyList accept it.
///
/// The grammar:
/// - strings, quoted (`"…"` or `'…'`, with the escapes `\a \b \f \n \r \t \v \" \' \\`, octal `\101`
///   and UTF-16 `\U00e9`) or unquoted (a run of `A–Z a–z 0–9 _ $ + / : . -`);
/// - arrays `( a, b, )` (a trailing comma is allowed);
/// - dictionaries `{ key = value; }` (keys are strings; `key;` alone means `key = key;`, as in `.strings` files);
/// - data `<0fbd77 1f>` (hex digits, white space ignored, an even number of digits);
/// - GNUstep's typed extensions `<*I14>`, `<*R1.5>`, `<*BY>`/`<*BN>` and `<*D2024-01-01 00:00:00 +0000>`;
/// - comments `// …` and `/* … */` wherever white space may go.
///
/// Old-style text has no numbers, Booleans or dates of its own: `14` is the string `"14"`; callers that know
/// the type they want convert. A text that is a bare dictionary body (`a = 1; b = 2;`, a `.strings` file) is
/// read as a dictionary, and an empty text is an empty dictionary, as CFPropertyList does.
///
/// Errors are ``PropertyListError`` with a message that names
/// the problem with its line and column (both counted from 1). Nesting deeper than ``maximumDepth`` is an error,
/// never a stack overflow.
package enum OpenStepParser {
    /// How deeply arrays and dictionaries may nest.
    package static let maximumDepth = 512

    /// Parses a whole old-style property list.
    ///
    /// - Parameter text: The text.
    /// - Returns: The value: a string, data, array or dictionary (or a typed value from a GNUstep `<*…>` form).
    /// - Throws: ``PropertyListError`` naming the problem, line and column.
    package static func parse(_ text: String) throws -> PropertyListValue {
        var scanner = Scanner(text)
        return try scanner.parseDocument()
    }
}

extension OpenStepParser {
    /// A cursor over the text's Unicode scalars.
    fileprivate struct Scanner {
        let scalars: [Unicode.Scalar]
        var position = 0
        var depth = 0

        init(_ text: String) {
            var scalars = Array(text.unicodeScalars)
            if scalars.first == "\u{FEFF}" { scalars.removeFirst() }
            self.scalars = scalars
        }

        var current: Unicode.Scalar? { position < scalars.count ? scalars[position] : nil }

        func peek(_ offset: Int) -> Unicode.Scalar? {
            position + offset < scalars.count ? scalars[position + offset] : nil
        }

        // MARK: Document

        mutating func parseDocument() throws -> PropertyListValue {
            try skipWhiteSpaceAndComments()
            guard current != nil else { return .dictionary([:]) }
            let start = position
            let value = try parseValue()
            try skipWhiteSpaceAndComments()
            guard let next = current else { return value }
            if case .string = value, next == "=" || next == ";" {
                // A bare dictionary body, as in a .strings file: start over and read entries to the end.
                position = start
                return .dictionary(try parseDictionaryEntries(closedBy: nil))
            }
            throw error("unexpected \(describe(next)) after the end of the property list", at: position)
        }

        // MARK: Values

        mutating func parseValue() throws -> PropertyListValue {
            try skipWhiteSpaceAndComments()
            guard let scalar = current else { throw error("the text ended where a value was expected", at: position) }
            switch scalar {
            case "{":
                let open = position
                position += 1
                try enterContainer(at: open)
                defer { depth -= 1 }
                return .dictionary(try parseDictionaryEntries(closedBy: open))
            case "(":
                let open = position
                position += 1
                try enterContainer(at: open)
                defer { depth -= 1 }
                return .array(try parseArrayElements(openedAt: open))
            case "<":
                return try parseAngleBracketed()
            case "\"", "'":
                return .string(try parseQuotedString())
            default:
                if Self.isUnquotedStringCharacter(scalar) { return .string(parseUnquotedString()) }
                throw error("unexpected \(describe(scalar)) where a value was expected", at: position)
            }
        }

        mutating func enterContainer(at open: Int) throws {
            depth += 1
            if depth > OpenStepParser.maximumDepth {
                throw error("arrays and dictionaries nest more than \(OpenStepParser.maximumDepth) deep", at: open)
            }
        }

        /// Reads `key = value;` entries up to the `}` matching the brace at `open`, or to the end of the text when
        /// `open` is `nil` (a bare dictionary body).
        mutating func parseDictionaryEntries(closedBy open: Int?) throws -> [String: PropertyListValue] {
            var result: [String: PropertyListValue] = [:]
            while true {
                try skipWhiteSpaceAndComments()
                guard let scalar = current else {
                    if let open { throw error("the dictionary opened here is never closed with '}'", at: open) }
                    return result
                }
                if scalar == "}" {
                    guard open != nil else { throw error("unexpected '}' with no '{' to close", at: position) }
                    position += 1
                    return result
                }
                let keyStart = position
                guard case .string(let key) = try parseValue() else {
                    throw error("a dictionary key must be a string", at: keyStart)
                }
                try skipWhiteSpaceAndComments()
                switch current {
                case ";":
                    // `key;` is shorthand for `key = key;` (.strings files).
                    position += 1
                    result[key] = .string(key)
                    continue
                case "=":
                    position += 1
                case let other?:
                    throw error(
                        "expected '=' after the key \(key.debugDescription), found \(describe(other))", at: position)
                case nil:
                    throw error("the text ended after the key \(key.debugDescription); expected '='", at: position)
                }
                let value = try parseValue()
                try skipWhiteSpaceAndComments()
                switch current {
                case ";":
                    position += 1
                case let other?:
                    throw error(
                        "expected ';' after the value of the key \(key.debugDescription), found \(describe(other))",
                        at: position)
                case nil:
                    throw error(
                        "the text ended after the value of the key \(key.debugDescription); expected ';'", at: position)
                }
                result[key] = value
            }
        }

        mutating func parseArrayElements(openedAt open: Int) throws -> [PropertyListValue] {
            var result: [PropertyListValue] = []
            while true {
                try skipWhiteSpaceAndComments()
                guard let scalar = current else {
                    throw error("the array opened here is never closed with ')'", at: open)
                }
                if scalar == ")" {
                    position += 1
                    return result
                }
                result.append(try parseValue())
                try skipWhiteSpaceAndComments()
                switch current {
                case ",":
                    position += 1
                case ")":
                    continue
                case let other?:
                    throw error("expected ',' or ')' after an array element, found \(describe(other))", at: position)
                case nil:
                    throw error("the array opened here is never closed with ')'", at: open)
                }
            }
        }

        // MARK: Data and GNUstep typed values

        mutating func parseAngleBracketed() throws -> PropertyListValue {
            let open = position
            position += 1
            if current == "*" {
                position += 1
                return try parseTypedValue(openedAt: open)
            }
            var bytes: [UInt8] = []
            var high: UInt8?
            while true {
                guard let scalar = current else {
                    throw error("the data opened here is never closed with '>'", at: open)
                }
                if scalar == ">" {
                    if high != nil {
                        throw error("the data has an odd number of hex digits; each byte needs two", at: open)
                    }
                    position += 1
                    return .data(Data(bytes))
                }
                if scalar.properties.isWhitespace {
                    position += 1
                    continue
                }
                guard let nibble = Self.hexValue(scalar) else {
                    throw error("unexpected \(describe(scalar)) in data; only hex digits may appear", at: position)
                }
                if let pending = high {
                    bytes.append(pending << 4 | nibble)
                    high = nil
                } else {
                    high = nibble
                }
                position += 1
            }
        }

        /// `<*I14>`, `<*R1.5>`, `<*BY>`, `<*D2024-01-01 00:00:00 +0000>` (the `<*` already consumed).
        mutating func parseTypedValue(openedAt open: Int) throws -> PropertyListValue {
            guard let kind = current else { throw error("the text ended inside '<*'", at: open) }
            position += 1
            let bodyStart = position
            while let scalar = current, scalar != ">" { position += 1 }
            guard current == ">" else { throw error("the value opened here is never closed with '>'", at: open) }
            var body = String(String.UnicodeScalarView(scalars[bodyStart..<position]))
            position += 1
            body = body.trimmingCharacters(in: .whitespaces)
            switch kind {
            case "I":
                if let value = Int64(body) { return .integer(value) }
                if let value = UInt64(body) { return PropertyListValue(integer: value) }
                throw error("\(body.debugDescription) is not an integer", at: open)
            case "R":
                if let value = Double(body) { return .real(value) }
                throw error("\(body.debugDescription) is not a real number", at: open)
            case "B":
                switch body {
                case "Y": return .bool(true)
                case "N": return .bool(false)
                default: throw error("\(body.debugDescription) is not a Boolean; use <*BY> or <*BN>", at: open)
                }
            case "D":
                if let date = PropertyListDateFormat.date(from: body) { return .date(date) }
                throw error(
                    "\(body.debugDescription) is not a date; use the form 2024-01-01 12:00:00 +0000", at: open)
            default:
                throw error("unknown typed value '<*\(kind)'; expected <*I…>, <*R…>, <*B…> or <*D…>", at: open)
            }
        }

        // MARK: Strings

        mutating func parseUnquotedString() -> String {
            let start = position
            while let scalar = current, Self.isUnquotedStringCharacter(scalar) { position += 1 }
            return String(String.UnicodeScalarView(scalars[start..<position]))
        }

        mutating func parseQuotedString() throws -> String {
            let open = position
            let quote = scalars[position]
            position += 1
            var units: [UInt16] = []
            while true {
                guard let scalar = current else {
                    throw error("the string opened here is never closed with \(describe(quote))", at: open)
                }
                position += 1
                if scalar == quote { break }
                if scalar != "\\" {
                    units.append(contentsOf: scalar.utf16)
                    continue
                }
                guard let escaped = current else {
                    throw error("the string opened here is never closed with \(describe(quote))", at: open)
                }
                let escapeStart = position - 1
                position += 1
                switch escaped {
                case "a": units.append(0x07)
                case "b": units.append(0x08)
                case "f": units.append(0x0C)
                case "n": units.append(0x0A)
                case "r": units.append(0x0D)
                case "t": units.append(0x09)
                case "v": units.append(0x0B)
                case "0"..."7":
                    var value = UInt16(escaped.value - 0x30)
                    var digits = 1
                    while digits < 3, let next = current, ("0"..."7").contains(next) {
                        value = value * 8 + UInt16(next.value - 0x30)
                        position += 1
                        digits += 1
                    }
                    // Octal escapes name bytes; above 0x7F they are taken as Latin-1 (CF uses NeXTSTEP's encoding).
                    units.append(value & 0xFF)
                case "U", "u":
                    var value: UInt16 = 0
                    var digits = 0
                    while digits < 4, let next = current, let nibble = Self.hexValue(next) {
                        value = value << 4 | UInt16(nibble)
                        position += 1
                        digits += 1
                    }
                    guard digits > 0 else {
                        throw error("'\\\(escaped)' must be followed by 1 to 4 hex digits", at: escapeStart)
                    }
                    units.append(value)
                default:
                    // `\"`, `\'`, `\\` and any other escaped character stand for themselves.
                    units.append(contentsOf: escaped.utf16)
                }
            }
            return String(decoding: units, as: UTF16.self)
        }

        // MARK: White space and comments

        mutating func skipWhiteSpaceAndComments() throws {
            while let scalar = current {
                if scalar.properties.isWhitespace {
                    position += 1
                } else if scalar == "/", peek(1) == "/" {
                    position += 2
                    while let next = current, next != "\n", next != "\r" { position += 1 }
                } else if scalar == "/", peek(1) == "*" {
                    let open = position
                    position += 2
                    while true {
                        guard let next = current else {
                            throw error("the comment opened here is never closed with '*/'", at: open)
                        }
                        if next == "*", peek(1) == "/" {
                            position += 2
                            break
                        }
                        position += 1
                    }
                } else {
                    return
                }
            }
        }

        // MARK: Helpers

        static func isUnquotedStringCharacter(_ scalar: Unicode.Scalar) -> Bool {
            switch scalar {
            case "a"..."z", "A"..."Z", "0"..."9", "_", "$", "+", "/", ":", ".", "-": true
            default: false
            }
        }

        static func hexValue(_ scalar: Unicode.Scalar) -> UInt8? {
            switch scalar {
            case "0"..."9": UInt8(scalar.value - 0x30)
            case "a"..."f": UInt8(scalar.value - 0x61 + 10)
            case "A"..."F": UInt8(scalar.value - 0x41 + 10)
            default: nil
            }
        }

        func describe(_ scalar: Unicode.Scalar) -> String {
            switch scalar {
            case "\n": "a line break"
            case "'": "\"'\""
            default:
                scalar.properties.isWhitespace || scalar.value < 0x20
                    ? "U+\(String(scalar.value, radix: 16, uppercase: true))" : "'\(Character(scalar))'"
            }
        }

        /// The 1-based line and column of `offset` (a CR LF pair counts as one line break).
        func location(of offset: Int) -> (line: Int, column: Int) {
            var line = 1
            var column = 1
            var index = 0
            while index < offset, index < scalars.count {
                let scalar = scalars[index]
                if scalar == "\n" || scalar == "\r" {
                    if scalar == "\r", index + 1 < offset, scalars[index + 1] == "\n" { index += 1 }
                    line += 1
                    column = 1
                } else {
                    column += 1
                }
                index += 1
            }
            return (line, column)
        }

        func error(_ message: String, at offset: Int) -> PropertyListError {
            let (line, column) = location(of: offset)
            return PropertyListError("malformed property list at line \(line), column \(column): \(message)")
        }
    }
}
