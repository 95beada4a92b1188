import Foundation

/// Why a text is not JSON, or not the shape expected, and where.
package struct JSONFailure: Error, CustomStringConvertible {
    package let description: String
}

/// A member's name, as the text has it (no copy) or, when it holds an escape, decoded.
struct JSONName {
    fileprivate enum Storage {
        case text(UnsafeRawBufferPointer)
        case decoded(String)
    }
    fileprivate let storage: Storage

    /// Whether the name is `name`, compared byte by byte.
    func `is`(_ name: StaticString) -> Bool {
        let wanted = UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
        switch storage {
        case .text(let bytes):
            guard bytes.count == wanted.count else { return false }
            guard let text = bytes.baseAddress, let wanted = wanted.baseAddress else { return true }
            return memcmp(text, wanted, bytes.count) == 0
        case .decoded(let text):
            return text.utf8.elementsEqual(wanted)
        }
    }
}

/// A pull reader of one JSON text (RFC 8259): the caller asks for the value it expects next (an
/// object member by member, an array item by item, a string, a boolean, an integer, base64 bytes)
/// and skips the rest, so that a watch line becomes etcd's structures as it is read, with no tree
/// of values in between (``EtcdWatchLineReader`` is its one user).
///
/// Everything is checked as it is read or skipped: a text that is not JSON is refused wherever the
/// fault is, with a ``JSONFailure`` naming it and its byte; a value of the wrong kind is refused
/// naming the field and what was there. Hand-written rather than `JSONSerialization` or a C library
/// for the speed of a watch message: the benchmark's `etcd-json` rows compare the three on etcd's
/// watch lines (docs/design.md, "Fleet settings: from the bytes to the observer").
struct JSONReader {
    let bytes: UnsafeRawBufferPointer
    private(set) var index = 0
    private var depth = 0
    /// Deeper nesting is refused (etcd's messages nest four levels).
    static let maximumDepth = 64
    /// What the text is, for errors ("the watch message").
    let what: String

    private init(bytes: UnsafeRawBufferPointer, what: String) {
        self.bytes = bytes
        self.what = what
    }

    /// Reads `text` with `body`, which must read its one value; only white space may follow it.
    ///
    /// - Parameters:
    ///   - text: The JSON text.
    ///   - what: What the text is, for errors ("the watch message").
    ///   - body: Reads the value.
    /// - Returns: What `body` returns.
    /// - Throws: ``JSONFailure`` naming the problem and its byte, or what `body` throws.
    static func read<Result>(_ text: Data, what: String, _ body: (inout JSONReader) throws -> Result) throws -> Result {
        try text.withUnsafeBytes { bytes in
            var reader = JSONReader(bytes: bytes, what: what)
            let result = try body(&reader)
            reader.skipSpace()
            guard reader.index == bytes.count else { throw reader.failure("text after the JSON value") }
            return result
        }
    }

    /// Whether `field` is met for the first time in its object (`seen` holds one bit a field): a
    /// name given twice counts once, its first value, as `JSONDecoder` reads it; the later ones are
    /// skipped (and still checked).
    static func first(_ seen: inout UInt32, _ field: UInt32) -> Bool {
        let bit: UInt32 = 1 << field
        defer { seen |= bit }
        return seen & bit == 0
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

    /// The first byte of the next value, white space skipped.
    private mutating func next() throws -> UInt8 {
        skipSpace()
        guard index < bytes.count else { throw failure("the message ended where a value was expected") }
        return bytes[index]
    }

    /// The next value's kind, for an error naming what was found; a byte that begins no value is
    /// itself the error.
    private func kind(_ byte: UInt8) throws -> String {
        switch byte {
        case UInt8(ascii: "{"): return "an object"
        case UInt8(ascii: "["): return "an array"
        case UInt8(ascii: "\""): return "a string"
        case UInt8(ascii: "t"), UInt8(ascii: "f"): return "a boolean"
        case UInt8(ascii: "n"): return "null"
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return "a number"
        default: throw failure("unexpected character \(Self.describe(byte))")
        }
    }

    private func mismatch(_ field: String, _ byte: UInt8, _ expected: String) throws -> JSONFailure {
        JSONFailure(description: "\(field) is \(try kind(byte)), not \(expected)")
    }

    static func describe(_ byte: UInt8) -> String {
        byte >= 0x20 && byte < 0x7F ? "\"\(Character(Unicode.Scalar(byte)))\"" : "0x\(String(byte, radix: 16))"
    }

    /// Reads `null`, if it is next.
    private mutating func null(_ byte: UInt8) throws -> Bool {
        guard byte == UInt8(ascii: "n") else { return false }
        try literal("null")
        return true
    }

    // MARK: Containers

    /// Reads an object, calling `member` with each name, the reader at its value, which `member`
    /// must read or skip.
    ///
    /// - Parameters:
    ///   - field: The field's name, for errors (`"\"kv\""`).
    ///   - member: Reads one member's value.
    /// - Returns: False if the value is `null`.
    /// - Throws: ``JSONFailure`` if the text is not JSON or the value is neither an object nor
    ///   `null`, or what `member` throws.
    mutating func object(_ field: @autoclosure () -> String, _ member: (inout JSONReader, JSONName) throws -> Void)
        throws -> Bool
    {
        let byte = try next()
        if try null(byte) { return false }
        guard byte == UInt8(ascii: "{") else { throw try mismatch(field(), byte, "an object") }
        try enter()
        index += 1
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return true
        }
        while true {
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                throw failure("expected a member name")
            }
            let name = try self.name()
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else {
                throw failure("expected \":\" after a member name")
            }
            index += 1
            try member(&self, name)
            skipSpace()
            guard index < bytes.count else { throw failure("the message ended inside an object") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else if bytes[index] == UInt8(ascii: "}") {
                index += 1
                depth -= 1
                return true
            } else {
                throw failure("expected \",\" or \"}\" in an object")
            }
        }
    }

    /// Reads an array, calling `item` with the reader at each item, which `item` must read or skip.
    ///
    /// - Returns: False if the value is `null`.
    mutating func array(_ field: @autoclosure () -> String, _ item: (inout JSONReader) throws -> Void) throws -> Bool {
        let byte = try next()
        if try null(byte) { return false }
        guard byte == UInt8(ascii: "[") else { throw try mismatch(field(), byte, "an array") }
        try enter()
        index += 1
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            return true
        }
        while true {
            try item(&self)
            skipSpace()
            guard index < bytes.count else { throw failure("the message ended inside an array") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else if bytes[index] == UInt8(ascii: "]") {
                index += 1
                depth -= 1
                return true
            } else {
                throw failure("expected \",\" or \"]\" in an array")
            }
        }
    }

    private mutating func enter() throws {
        depth += 1
        guard depth < Self.maximumDepth else { throw failure("JSON nested more than \(Self.maximumDepth) deep") }
    }

    /// Skips the next value, checking it all the same.
    mutating func skipValue() throws {
        let byte = try next()
        switch byte {
        case UInt8(ascii: "{"): _ = try object("a value") { reader, _ in try reader.skipValue() }
        case UInt8(ascii: "["): _ = try array("a value") { reader in try reader.skipValue() }
        case UInt8(ascii: "\""): _ = try stringBytes()
        case UInt8(ascii: "t"): try literal("true")
        case UInt8(ascii: "f"): try literal("false")
        case UInt8(ascii: "n"): try literal("null")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): _ = try number()
        default: throw failure("unexpected character \(Self.describe(byte))")
        }
    }

    // MARK: Scalars

    /// A string, or nil for `null`.
    mutating func string(_ field: @autoclosure () -> String) throws -> String? {
        let byte = try next()
        if try null(byte) { return nil }
        guard byte == UInt8(ascii: "\"") else { throw try mismatch(field(), byte, "a string") }
        return try stringValue()
    }

    /// A boolean, or nil for `null`.
    mutating func bool(_ field: @autoclosure () -> String) throws -> Bool? {
        let byte = try next()
        switch byte {
        case UInt8(ascii: "t"): try literal("true"); return true
        case UInt8(ascii: "f"): try literal("false"); return false
        case UInt8(ascii: "n"): try literal("null"); return nil
        default: throw try mismatch(field(), byte, "a boolean")
        }
    }

    /// A 64-bit integer written as a JSON number or as a string of one (as etcd writes them), or nil
    /// for `null`: what `Value(text)` makes of the number's or the string's text.
    mutating func integer<Value: FixedWidthInteger>(
        _ field: @autoclosure () -> String, as type: Value.Type = Value.self
    )
        throws -> Value?
    {
        let byte = try next()
        let text: Range<Int>
        switch byte {
        case UInt8(ascii: "n"):
            try literal("null")
            return nil
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            text = try number()
        case UInt8(ascii: "\""):
            // Digits with no escape are read in place; anything else becomes a String first.
            switch try stringBytes() {
            case .plain(let range): text = range
            case .escaped(let resolved):
                return try integer(field(), fromText: String(decoding: resolved, as: UTF8.self))
            }
        default:
            throw try mismatch(field(), byte, "an integer")
        }
        if let value = Self.decimal(UnsafeRawBufferPointer(rebasing: bytes[text]), as: Value.self) { return value }
        return try integer(
            field(), fromText: String(decoding: UnsafeRawBufferPointer(rebasing: bytes[text]), as: UTF8.self))
    }

    private func integer<Value: FixedWidthInteger>(_ field: String, fromText text: String) throws -> Value {
        guard let value = Value(text) else {
            throw JSONFailure(description: "\(field) is \"\(text.prefix(40))\", not a 64-bit integer")
        }
        return value
    }

    /// Plain decimal digits (a `-` first for a signed type), 1 to 18 of them: the usual case, read
    /// without a String. Nil for anything else, which `Value(text)` then decides.
    private static func decimal<Value: FixedWidthInteger>(_ text: UnsafeRawBufferPointer, as type: Value.Type) -> Value?
    {
        var start = 0
        let negative = Value.isSigned && text.first == UInt8(ascii: "-")
        if negative { start = 1 }
        let count = text.count - start
        guard count > 0, count <= 18, Value.bitWidth >= 64 else { return nil }
        var magnitude: Int64 = 0
        for offset in start..<text.count {
            let digit = text[offset] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            magnitude = magnitude &* 10 &+ Int64(digit)
        }
        return Value(negative ? -magnitude : magnitude)
    }

    /// Bytes written as base64 text, or nil for `null`: what `Data(base64Encoded:)` makes of the
    /// text, decoded in place when it is plain padded base64.
    mutating func base64(_ field: @autoclosure () -> String) throws -> Data? {
        let byte = try next()
        if try null(byte) { return nil }
        guard byte == UInt8(ascii: "\"") else { throw try mismatch(field(), byte, "a string") }
        let text: String
        switch try stringBytes() {
        case .plain(let range):
            let base64 = UnsafeRawBufferPointer(rebasing: bytes[range])
            if let data = Self.base64(base64) { return data }
            text = String(decoding: base64, as: UTF8.self)
        case .escaped(let resolved):
            text = String(decoding: resolved, as: UTF8.self)
        }
        guard let data = Data(base64Encoded: text) else {
            throw JSONFailure(description: "\(field()) is not base64: \(text.prefix(40))")
        }
        return data
    }

    /// Base64 with its padding, its unused bits zero: the usual case. Nil for anything else, which
    /// `Data(base64Encoded:)` then decides.
    private static func base64(_ text: UnsafeRawBufferPointer) -> Data? {
        guard text.count % 4 == 0 else { return nil }
        if text.isEmpty { return Data() }
        let padding =
            text[text.count - 1] != UInt8(ascii: "=") ? 0 : text[text.count - 2] != UInt8(ascii: "=") ? 1 : 2
        let count = text.count / 4 * 3 - padding
        return base64Sextets.withUnsafeBufferPointer { sextets in
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: count + 2) { output -> Data? in
                // Every group but the last: four digits, three bytes. A byte that is no digit has
                // the high bit set in the table, so one test after the four looks finds it.
                var out = 0
                var offset = 0
                let whole = text.count - 4
                while offset < whole {
                    let a = sextets[Int(text[offset])]
                    let b = sextets[Int(text[offset + 1])]
                    let c = sextets[Int(text[offset + 2])]
                    let d = sextets[Int(text[offset + 3])]
                    guard (a | b | c | d) < 64 else { return nil }
                    let group = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                    output[out] = UInt8(truncatingIfNeeded: group >> 16)
                    output[out + 1] = UInt8(truncatingIfNeeded: group >> 8)
                    output[out + 2] = UInt8(truncatingIfNeeded: group)
                    out += 3
                    offset += 4
                }
                // The last group, its padding read as zero digits.
                var group: UInt32 = 0
                for position in 0..<4 {
                    let sextet = position >= 4 - padding ? 0 : sextets[Int(text[offset + position])]
                    guard sextet < 64 else { return nil }
                    group = group << 6 | UInt32(sextet)
                }
                // Bits past the last byte must be zero, as canonical base64 has them.
                if padding == 2 && group & 0xFFFF != 0 || padding == 1 && group & 0xFF != 0 { return nil }
                output[out] = UInt8(truncatingIfNeeded: group >> 16)
                output[out + 1] = UInt8(truncatingIfNeeded: group >> 8)
                output[out + 2] = UInt8(truncatingIfNeeded: group)
                return Data(buffer: UnsafeMutableBufferPointer(rebasing: output[..<count]))
            }
        }
    }

    /// Each byte's value as a base64 digit, 0xFF for a byte that is none.
    private static let base64Sextets: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (value, character) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8.enumerated() {
            table[Int(character)] = UInt8(value)
        }
        return table
    }()

    // MARK: Text

    private mutating func literal(_ word: StaticString) throws {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count, let text = bytes.baseAddress,
            memcmp(text + index, word.utf8Start, count) == 0
        else { throw failure("not JSON (expected \(word))") }
        index += count
    }

    /// A member's name; the opening quote is at `index`.
    private mutating func name() throws -> JSONName {
        switch try stringBytes() {
        case .plain(let range): return JSONName(storage: .text(UnsafeRawBufferPointer(rebasing: bytes[range])))
        case .escaped(let resolved): return JSONName(storage: .decoded(String(decoding: resolved, as: UTF8.self)))
        }
    }

    /// A string, its escapes resolved; the opening quote is at `index`.
    private mutating func stringValue() throws -> String {
        switch try stringBytes() {
        case .plain(let range): return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self)
        case .escaped(let resolved): return String(decoding: resolved, as: UTF8.self)
        }
    }

    /// A string's bytes: where they are in the text when it holds no escape, or resolved.
    private enum StringBytes {
        case plain(Range<Int>)
        case escaped([UInt8])
    }

    /// Reads a string whose opening quote is at `index`, checking it whole (escapes, control
    /// characters, UTF-8).
    private mutating func stringBytes() throws -> StringBytes {
        index += 1  // "
        let start = index
        var ascii = true
        scan: while true {
            // Eight bytes at a time while none of them is a quote, a backslash, a control
            // character or outside ASCII (most strings, base64 and digits among them).
            if let base = bytes.baseAddress {
                while index + 8 <= bytes.count {
                    let word = (base + index).loadUnaligned(as: UInt64.self)
                    let ones: UInt64 = 0x0101_0101_0101_0101
                    let highs: UInt64 = 0x8080_8080_8080_8080
                    let quotes = word ^ (ones &* 0x22)
                    let backslashes = word ^ (ones &* 0x5C)
                    let special =
                        ((quotes &- ones) & ~quotes) | ((backslashes &- ones) & ~backslashes)
                        | ((word &- ones &* 0x20) & ~word) | word
                    if special & highs != 0 { break }
                    index += 8
                }
            }
            // Byte by byte up to the next word, or to the end.
            let stop = Swift.min(index + 8, bytes.count)
            guard index < stop else { break scan }
            while index < stop {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    let range = start..<index
                    index += 1
                    if !ascii { try validate(range) }
                    return .plain(range)
                }
                if byte == UInt8(ascii: "\\") { break scan }
                if byte < 0x20 { throw failure("a control character in a string") }
                if byte >= 0x80 { ascii = false }
                index += 1
            }
        }
        // An escape: the rest byte by byte, resolved into a buffer to check it as UTF-8.
        var resolved = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                guard String(validating: resolved, as: UTF8.self) != nil else {
                    throw failure("a string that is not UTF-8")
                }
                return .escaped(resolved)
            case UInt8(ascii: "\\"):
                try escape(into: &resolved)
            case 0..<0x20:
                throw failure("a control character in a string")
            default:
                resolved.append(byte)
            }
        }
        throw failure("the message ended inside a string")
    }

    private func validate(_ range: Range<Int>) throws {
        guard String(validating: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self) != nil else {
            throw failure("a string that is not UTF-8")
        }
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
            index -= 1
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

    /// A number's text, checked against JSON's grammar.
    private mutating func number() throws -> Range<Int> {
        let start = index
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        let integerStart = index
        let integerDigits = digits()
        guard integerDigits > 0 else { throw failure("a number without digits") }
        if integerDigits > 1 && bytes[integerStart] == UInt8(ascii: "0") {
            throw failure("a number with a leading zero")
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else { throw failure("a number without digits after \".\"") }
        }
        if index < bytes.count, bytes[index] | 0x20 == UInt8(ascii: "e") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard digits() > 0 else { throw failure("a number without an exponent") }
        }
        return start..<index
    }

    private mutating func digits() -> Int {
        let first = index
        while index < bytes.count, bytes[index] &- UInt8(ascii: "0") < 10 { index += 1 }
        return index - first
    }
}
