import Foundation

/// Why a text is not JSON, or not the shape expected, and where.
package struct JSONFailure: Error, CustomStringConvertible {
    package let description: String
}

/// A JSON value (RFC 8259), parsed whole from one text: the etcd client's watch lines
/// (``EtcdWatchLineReader`` maps etcd's fields from it). An object keeps its members in order, and
/// a name given twice counts once, its last value (as `JSONDecoder`).
///
/// Hand-written rather than `JSONSerialization` or a C library for the speed of a watch message:
/// the benchmark's `etcd-json` rows compare the three on etcd's watch lines (docs/performance.md,
/// "Hand-tuned code and the target it serves").
enum JSONValue {
    /// The one value `text` holds (white space around it allowed).
    ///
    /// - Parameters:
    ///   - text: The JSON text.
    ///   - what: What the text is, for errors ("the watch message").
    /// - Returns: The value.
    /// - Throws: ``JSONFailure`` naming the problem and its byte.
    static func parse(_ text: Data, what: String) throws -> JSONValue {
        try text.withUnsafeBytes { bytes in
            var parser = JSONParser(bytes: bytes, what: what)
            let value = try parser.value(depth: 0)
            parser.skipSpace()
            guard parser.index == bytes.count else { throw parser.failure("text after the JSON value") }
            return value
        }
    }

    case object(JSONMembers)
    case array([JSONValue])
    case string(String)
    /// Its text, as written.
    case number(String)
    case bool(Bool)
    case null

    var kind: String {
        switch self {
        case .object: "an object"
        case .array: "an array"
        case .string: "a string"
        case .number: "a number"
        case .bool: "a boolean"
        case .null: "null"
        }
    }

    func object(_ name: String) throws -> JSONMembers {
        guard case .object(let members) = self else {
            throw JSONFailure(description: "\(name) is \(kind), not an object")
        }
        return members
    }

    func optionalObject(_ name: String) throws -> JSONMembers? {
        if case .null = self { return nil }
        return try object(name)
    }

    func optionalArray(_ name: String) throws -> [JSONValue]? {
        switch self {
        case .null: return nil
        case .array(let items): return items
        default: throw JSONFailure(description: "\"\(name)\" is \(kind), not an array")
        }
    }

    func optionalString(_ name: String) throws -> String? {
        switch self {
        case .null: return nil
        case .string(let text): return text
        default: throw JSONFailure(description: "\"\(name)\" is \(kind), not a string")
        }
    }

    func optionalBool(_ name: String) throws -> Bool? {
        switch self {
        case .null: return nil
        case .bool(let value): return value
        default: throw JSONFailure(description: "\"\(name)\" is \(kind), not a boolean")
        }
    }
}

/// An object's members (a handful: looked up in order, no hashing).
struct JSONMembers {
    var pairs: [(name: String, value: JSONValue)] = []

    subscript(name: String) -> JSONValue? {
        pairs.last { $0.name == name }?.value
    }
}

/// A recursive-descent JSON parser (RFC 8259) over a text's bytes.
private struct JSONParser {
    let bytes: UnsafeRawBufferPointer
    var index = 0
    /// Deeper nesting is refused (etcd's messages nest four levels).
    static let maximumDepth = 64

    /// What the text is, for errors ("the watch message").
    let what: String

    init(bytes: UnsafeRawBufferPointer, what: String) {
        self.bytes = bytes
        self.what = what
    }

    func failure(_ problem: String) -> JSONFailure {
        JSONFailure(description: "\(problem) at byte \(index) of \(what)")
    }

    mutating func skipSpace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    mutating func value(depth: Int) throws -> JSONValue {
        guard depth < Self.maximumDepth else { throw failure("JSON nested more than \(Self.maximumDepth) deep") }
        skipSpace()
        guard index < bytes.count else { throw failure("the message ended where a value was expected") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try object(depth: depth)
        case UInt8(ascii: "["): return try array(depth: depth)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        default: throw failure("unexpected character \(Self.describe(bytes[index]))")
        }
    }

    static func describe(_ byte: UInt8) -> String {
        byte >= 0x20 && byte < 0x7F ? "\"\(Character(Unicode.Scalar(byte)))\"" : "0x\(String(byte, radix: 16))"
    }

    private mutating func expect(_ byte: UInt8, _ what: String) throws {
        skipSpace()
        guard index < bytes.count, bytes[index] == byte else { throw failure("expected \(what)") }
        index += 1
    }

    private mutating func literal(_ word: StaticString) throws {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count,
            UnsafeRawBufferPointer(rebasing: bytes[index..<index + count]).elementsEqual(
                UnsafeRawBufferPointer(start: word.utf8Start, count: count))
        else { throw failure("not JSON (expected \(word))") }
        index += count
    }

    private mutating func object(depth: Int) throws -> JSONValue {
        index += 1  // {
        var members = JSONMembers()
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        while true {
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                throw failure("expected a member name")
            }
            let name = try string()
            try expect(UInt8(ascii: ":"), "\":\" after a member name")
            members.pairs.append((name, try value(depth: depth + 1)))
            skipSpace()
            guard index < bytes.count else { throw failure("the message ended inside an object") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else if bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(members)
            } else {
                throw failure("expected \",\" or \"}\" in an object")
            }
        }
    }

    private mutating func array(depth: Int) throws -> JSONValue {
        index += 1  // [
        var items: [JSONValue] = []
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(items)
        }
        while true {
            items.append(try value(depth: depth + 1))
            skipSpace()
            guard index < bytes.count else { throw failure("the message ended inside an array") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else if bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(items)
            } else {
                throw failure("expected \",\" or \"]\" in an array")
            }
        }
    }

    private mutating func number() throws -> String {
        let start = index
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        func digits(_ parser: inout JSONParser) -> Int {
            let first = parser.index
            while parser.index < parser.bytes.count,
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(parser.bytes[parser.index])
            {
                parser.index += 1
            }
            return parser.index - first
        }
        let integerStart = index
        let integerDigits = digits(&self)
        guard integerDigits > 0 else { throw failure("a number without digits") }
        if integerDigits > 1 && bytes[integerStart] == UInt8(ascii: "0") {
            throw failure("a number with a leading zero")
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digits(&self) > 0 else { throw failure("a number without digits after \".\"") }
        }
        if index < bytes.count, bytes[index] | 0x20 == UInt8(ascii: "e") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard digits(&self) > 0 else { throw failure("a number without an exponent") }
        }
        return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
    }

    /// A string, its escapes resolved; the opening quote is at `index`.
    private mutating func string() throws -> String {
        index += 1  // "
        let start = index
        // The usual case: no escape (base64, decimal digits, names).
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                defer { index += 1 }
                return try validated(start..<index)
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw failure("a control character in a string") }
            index += 1
        }
        var text = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                guard let string = String(validating: text, as: UTF8.self) else {
                    throw failure("a string that is not UTF-8")
                }
                return string
            case UInt8(ascii: "\\"):
                try escape(into: &text)
            case 0..<0x20:
                throw failure("a control character in a string")
            default:
                text.append(byte)
            }
        }
        throw failure("the message ended inside a string")
    }

    private func validated(_ range: Range<Int>) throws -> String {
        guard let string = String(validating: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self)
        else { throw failure("a string that is not UTF-8") }
        return string
    }

    private mutating func escape(into text: inout [UInt8]) throws {
        guard index < bytes.count else { throw failure("the message ended inside an escape") }
        let byte = bytes[index]
        index += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): text.append(byte)
        case UInt8(ascii: "b"): text.append(0x08)
        case UInt8(ascii: "f"): text.append(0x0C)
        case UInt8(ascii: "n"): text.append(0x0A)
        case UInt8(ascii: "r"): text.append(0x0D)
        case UInt8(ascii: "t"): text.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try hexUnit()
            if (0xD800..<0xDC00).contains(scalar) {
                // A high surrogate: its low half must follow as another \u escape.
                guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"),
                    bytes[index + 1] == UInt8(ascii: "u")
                else { throw failure("a lone surrogate in a \\u escape") }
                index += 2
                let low = try hexUnit()
                guard (0xDC00..<0xE000).contains(low) else { throw failure("a lone surrogate in a \\u escape") }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00..<0xE000).contains(scalar) {
                throw failure("a lone surrogate in a \\u escape")
            }
            guard let unicode = Unicode.Scalar(scalar) else { throw failure("a bad \\u escape") }
            text.append(contentsOf: String(Character(unicode)).utf8)
        default:
            throw failure("an unknown escape \\\(Self.describe(byte))")
        }
    }

    private mutating func hexUnit() throws -> UInt32 {
        guard index + 4 <= bytes.count else { throw failure("the message ended inside a \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw failure("a bad \\u escape")
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }
}
