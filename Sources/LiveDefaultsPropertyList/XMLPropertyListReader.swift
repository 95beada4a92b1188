import Foundation

/// Reads Apple's XML property-list format.
///
/// A small scanner for the plist vocabulary (no general XML parser): hostile input is a thrown
/// error naming the line, in time linear in the input. Internal DTD subsets (where entity
/// expansion attacks live) are refused; only the five predefined entities and character
/// references are understood; nesting deeper than ``maximumDepth`` is refused.
package enum XMLPropertyListReader {
    /// The deepest nesting of arrays and dictionaries accepted.
    package static let maximumDepth = 512

    package static func decode(_ data: Data) throws(PropertyListError) -> PropertyListValue {
        let result: Result<PropertyListValue, Malformed> = data.withUnsafeBytes { buffer in
            // An empty file has no address: a byte of our own stands in, as nothing is read from it.
            withUnsafePointer(to: UInt8(0)) { placeholder in
                do throws(Malformed) {
                    let base = buffer.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? placeholder
                    var scanner = Scanner(base: base, count: buffer.count)
                    defer { scanner.releaseEntries() }
                    return .success(try scanner.document())
                } catch {
                    return .failure(error)
                }
            }
        }
        return try result.decoded()
    }

    private typealias Malformed = MalformedPropertyList

    private struct Scanner {
        let base: UnsafePointer<UInt8>
        let count: Int
        var position = 0
        /// The entries of the dictionaries being read, innermost last: each dictionary's are moved
        /// into it when it closes (not copied, then released with an array of them), and the
        /// room is reused by the next.
        var entries: UnsafeMutablePointer<(String, PropertyListValue)>?
        var entryCount = 0
        var entryCapacity = 0
        /// The elements of the arrays being read, innermost last, in the same way.
        var elements: UnsafeMutablePointer<PropertyListValue>?
        var elementCount = 0
        var elementCapacity = 0

        init(base: UnsafePointer<UInt8>, count: Int) {
            self.base = base
            self.count = count
            // A UTF-8 byte-order mark.
            if count >= 3, base[0] == 0xEF, base[1] == 0xBB, base[2] == 0xBF { position = 3 }
        }

        @inline(__always)
        mutating func pushEntry(_ key: String, _ value: PropertyListValue) {
            if entryCount == entryCapacity { growEntries() }
            (entries.unsafelyUnwrapped + entryCount).initialize(to: (key, value))
            entryCount += 1
        }

        @inline(never)
        mutating func growEntries() {
            // At first room for as many entries as the file could hold at a typical 48 bytes each
            // (a key, its value and their indentation), so that a suite's entries are rarely moved;
            // at most 65,536 (a few megabytes), so that a file of a few large values does not reserve much.
            let capacity = max(16, entryCapacity * 2, entryCapacity == 0 ? min(count / 48, 1 << 16) : 0)
            let grown = UnsafeMutablePointer<(String, PropertyListValue)>.allocate(capacity: capacity)
            if let entries {
                grown.moveInitialize(from: entries, count: entryCount)
                entries.deallocate()
            }
            entries = grown
            entryCapacity = capacity
        }

        /// The dictionary of the entries from `start` on, which it takes (a later duplicate key
        /// wins, as in Foundation).
        mutating func takeDictionary(from start: Int) -> [String: PropertyListValue] {
            var dictionary: [String: PropertyListValue] = [:]
            guard start < entryCount, let entries else { return dictionary }
            dictionary.reserveCapacity(entryCount - start)
            for index in start..<entryCount {
                let (key, value) = (entries + index).move()
                dictionary[key] = value
            }
            entryCount = start
            return dictionary
        }

        @inline(__always)
        mutating func pushElement(_ element: PropertyListValue) {
            if elementCount == elementCapacity { growElements() }
            (elements.unsafelyUnwrapped + elementCount).initialize(to: element)
            elementCount += 1
        }

        @inline(never)
        mutating func growElements() {
            let capacity = max(16, elementCapacity * 2)
            let grown = UnsafeMutablePointer<PropertyListValue>.allocate(capacity: capacity)
            if let elements {
                grown.moveInitialize(from: elements, count: elementCount)
                elements.deallocate()
            }
            elements = grown
            elementCapacity = capacity
        }

        /// The array of the elements from `start` on, which it takes.
        mutating func takeArray(from start: Int) -> [PropertyListValue] {
            guard start < elementCount, let elements else { return [] }
            let taken = elementCount - start
            elementCount = start
            // Reserved and appended: `init(unsafeUninitializedCapacity:)` is not specialised and
            // looks the array's storage type up at run time, which costs more than the appends.
            var array: [PropertyListValue] = []
            array.reserveCapacity(taken)
            for index in start..<start + taken { array.append((elements + index).move()) }
            return array
        }

        /// Frees the entries' and elements' room, and those of containers not closed (a malformed file).
        mutating func releaseEntries() {
            if let entries {
                entries.deinitialize(count: entryCount)
                entries.deallocate()
                self.entries = nil
                entryCount = 0
                entryCapacity = 0
            }
            if let elements {
                elements.deinitialize(count: elementCount)
                elements.deallocate()
                self.elements = nil
                elementCount = 0
                elementCapacity = 0
            }
        }

        /// The error for `problem` at `offset` (by default where the scanner is), naming the line:
        /// out of line, so that the message is built only on this cold path.
        @inline(never)
        func error(_ problem: @autoclosure () -> String, at offset: Int? = nil) -> Malformed {
            let end = min(offset ?? position, count)
            var line = 1
            for index in 0..<end where base[index] == 0x0A { line += 1 }
            return Malformed(message: "XML property list, line \(line): \(problem())")
        }

        var atEnd: Bool { position >= count }

        @inline(__always)
        func peek(_ literal: StaticString) -> Bool {
            let length = literal.utf8CodeUnitCount
            let pointer = literal.utf8Start
            guard position + length <= count, base[position] == pointer[0] else { return false }
            for index in 1..<length where base[position + index] != pointer[index] { return false }
            return true
        }

        @inline(__always)
        mutating func skip(_ literal: StaticString) -> Bool {
            guard peek(literal) else { return false }
            position += literal.utf8CodeUnitCount
            return true
        }

        @inline(__always)
        mutating func skip(_ byte: UInt8) -> Bool {
            guard position < count, base[position] == byte else { return false }
            position += 1
            return true
        }

        @inline(__always)
        mutating func skipWhitespace() {
            // In locals, so that the loop keeps them in registers (no store of `position` a byte).
            var index = position
            let base = self.base
            let count = self.count
            while index < count, Self.isSpace(base[index]) { index += 1 }
            position = index
        }

        /// A tag of the plist vocabulary as little-endian words, recognised with one or two loads
        /// instead of a comparison per byte.
        struct Tag {
            let length: Int
            /// Its first eight bytes (all of them when shorter).
            let first: UInt64
            /// Its last eight bytes, when it is longer than eight.
            let last: UInt64

            /// `<key>`
            static let key = Tag(length: 5, first: 0x3e_7965_6b3c, last: 0x0)
            /// `<string>`
            static let string = Tag(length: 8, first: 0x3e67_6e69_7274_733c, last: 0x0)
            /// `<integer>`
            static let integer = Tag(length: 9, first: 0x7265_6765_746e_693c, last: 0x3e72_6567_6574_6e69)
            /// `<real>`
            static let real = Tag(length: 6, first: 0x3e6c_6165_723c, last: 0x0)
            /// `<dict>`
            static let dict = Tag(length: 6, first: 0x3e74_6369_643c, last: 0x0)
            /// `<date>`
            static let date = Tag(length: 6, first: 0x3e65_7461_643c, last: 0x0)
            /// `<data>`
            static let data = Tag(length: 6, first: 0x3e61_7461_643c, last: 0x0)
            /// `<array>`
            static let array = Tag(length: 7, first: 0x3e_7961_7272_613c, last: 0x0)
            /// `<true/>`
            static let trueEmpty = Tag(length: 7, first: 0x3e_2f65_7572_743c, last: 0x0)
            /// `<false/>`
            static let falseEmpty = Tag(length: 8, first: 0x3e2f_6573_6c61_663c, last: 0x0)
            /// `</key>`
            static let keyEnd = Tag(length: 6, first: 0x3e79_656b_2f3c, last: 0x0)
            /// `</string>`
            static let stringEnd = Tag(length: 9, first: 0x676e_6972_7473_2f3c, last: 0x3e67_6e69_7274_732f)
            /// `</integer>`
            static let integerEnd = Tag(length: 10, first: 0x6567_6574_6e69_2f3c, last: 0x3e72_6567_6574_6e69)
            /// `</real>`
            static let realEnd = Tag(length: 7, first: 0x3e_6c61_6572_2f3c, last: 0x0)
            /// `</array>`
            static let arrayEnd = Tag(length: 8, first: 0x3e79_6172_7261_2f3c, last: 0x0)
            /// `</dict>`
            static let dictEnd = Tag(length: 7, first: 0x3e_7463_6964_2f3c, last: 0x0)
        }

        /// Moves past `tag` when it comes next.
        @inline(__always)
        mutating func skip(_ tag: Tag) -> Bool {
            let raw = UnsafeRawPointer(base)
            if tag.length <= 8 {
                guard position + 8 <= count else { return skipNearTheEnd(tag) }
                let word = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: position, as: UInt64.self))
                let mask: UInt64 = tag.length == 8 ? .max : (1 &<< UInt64(tag.length &* 8)) &- 1
                guard word & mask == tag.first else { return false }
            } else {
                guard position + tag.length <= count,
                    UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: position, as: UInt64.self)) == tag.first,
                    UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: position + tag.length - 8, as: UInt64.self))
                        == tag.last
                else { return false }
            }
            position += tag.length
            return true
        }

        /// `skip(_:)` of a tag within eight bytes of the end, a byte at a time.
        @inline(never)
        mutating func skipNearTheEnd(_ tag: Tag) -> Bool {
            guard position + tag.length <= count else { return false }
            for index in 0..<tag.length
            where base[position + index] != UInt8(truncatingIfNeeded: tag.first >> UInt64(index * 8)) {
                return false
            }
            position += tag.length
            return true
        }

        /// Moves past the next occurrence of `terminator`.
        mutating func skip(through terminator: StaticString, what: String) throws(Malformed) {
            let start = position
            while position < count {
                if skip(terminator) { return }
                position += 1
            }
            throw error("\(what) is not closed", at: start)
        }

        /// Skips white space, comments and processing instructions.
        @inline(__always)
        mutating func skipMisc() throws(Malformed) {
            skipWhitespace()
            // Most of the time the next thing is a tag: only "<!" and "<?" need a closer look.
            if position + 1 < count, base[position] == UInt8(ascii: "<"),
                base[position + 1] == UInt8(ascii: "!") || base[position + 1] == UInt8(ascii: "?")
            {
                try skipCommentsAndInstructions()
            }
        }

        mutating func skipCommentsAndInstructions() throws(Malformed) {
            while true {
                skipWhitespace()
                guard position + 1 < count, base[position] == UInt8(ascii: "<"),
                    base[position + 1] == UInt8(ascii: "!") || base[position + 1] == UInt8(ascii: "?")
                else { return }
                if skip("<!--") {
                    try skip(through: "-->", what: "a comment")
                } else if skip("<?") {
                    try skip(through: "?>", what: "a processing instruction")
                } else {
                    return
                }
            }
        }

        mutating func document() throws(Malformed) -> PropertyListValue {
            try skipMisc()
            if skip("<!DOCTYPE") {
                while position < count, base[position] != UInt8(ascii: ">") {
                    if base[position] == UInt8(ascii: "[") {
                        throw error("internal DTD subsets (entity declarations) are not accepted")
                    }
                    position += 1
                }
                guard skip(">") else { throw error("the DOCTYPE is not closed") }
                try skipMisc()
            }
            var wrapped = false
            if skip("<plist") {
                guard position < count, Self.isSpace(base[position]) || base[position] == UInt8(ascii: ">") else {
                    throw error("expected <plist>")
                }
                try skip(through: ">", what: "the <plist> tag")
                wrapped = true
            }
            let value = try self.value(depth: 0)
            try skipMisc()
            if wrapped {
                guard skip("</plist>") else { throw error("expected </plist> after the top value") }
                try skipMisc()
            }
            guard atEnd else { throw error("unexpected content after the property list") }
            return value
        }

        /// The plist elements, recognised from their bytes without making a String.
        enum Element {
            case `true`, `false`, string, integer, real, date, data, array, dict, key, other

            var name: StaticString {
                switch self {
                case .true: "true"
                case .false: "false"
                case .string: "string"
                case .integer: "integer"
                case .real: "real"
                case .date: "date"
                case .data: "data"
                case .array: "array"
                case .dict: "dict"
                case .key: "key"
                case .other: ""
                }
            }
        }

        @inline(__always)
        func element(at start: Int, length: Int) -> Element {
            @inline(__always)
            func named(_ name: StaticString) -> Bool {
                let pointer = name.utf8Start
                for index in 0..<length where base[start + index] != pointer[index] { return false }
                return true
            }
            switch length {
            case 3: return named("key") ? .key : .other
            case 4:
                switch base[start] {
                case UInt8(ascii: "t"): return named("true") ? .true : .other
                case UInt8(ascii: "r"): return named("real") ? .real : .other
                case UInt8(ascii: "d"):
                    return named("date") ? .date : named("data") ? .data : named("dict") ? .dict : .other
                default: return .other
                }
            case 5: return named("false") ? .false : named("array") ? .array : .other
            case 6: return named("string") ? .string : .other
            case 7: return named("integer") ? .integer : .other
            default: return .other
            }
        }

        /// Reads `<name` up to `>` or `/>`: which element, whether it closed itself (`<true/>`), and
        /// where it starts. `name` is the element's name as text only when it is not a plist
        /// element (for a message).
        /// (Not inlined: it is the general path, and the containers' frames, one a level of nesting,
        /// stay small without it.)
        @inline(never)
        mutating func openTag() throws(Malformed) -> (element: Element, name: String, empty: Bool, start: Int) {
            try skipMisc()
            let start = position
            // The usual tags, written plainly, recognised whole.
            if position + 1 < count, base[position] == UInt8(ascii: "<") {
                let element: Element?
                switch base[position + 1] {
                case UInt8(ascii: "k"): element = skip(Tag.key) ? .key : nil
                case UInt8(ascii: "s"): element = skip(Tag.string) ? .string : nil
                case UInt8(ascii: "i"): element = skip(Tag.integer) ? .integer : nil
                case UInt8(ascii: "r"): element = skip(Tag.real) ? .real : nil
                case UInt8(ascii: "d"):
                    element = skip(Tag.dict) ? .dict : skip(Tag.date) ? .date : skip(Tag.data) ? .data : nil
                case UInt8(ascii: "a"): element = skip(Tag.array) ? .array : nil
                case UInt8(ascii: "t"):
                    if skip(Tag.trueEmpty) { return (.true, "", true, start) } else { element = nil }
                case UInt8(ascii: "f"):
                    if skip(Tag.falseEmpty) { return (.false, "", true, start) } else { element = nil }
                default: element = nil
                }
                if let element { return (element, "", false, start) }
            }
            guard skip(UInt8(ascii: "<")) else {
                throw error(atEnd ? "the file ends where a value was expected" : "expected a tag")
            }
            if position < count, base[position] == UInt8(ascii: "/") {
                var end = position + 1
                while end < count, Self.isNameByte(base[end]) { end += 1 }
                let name = String(
                    decoding: UnsafeBufferPointer(start: base + position + 1, count: end - position - 1), as: UTF8.self)
                throw error("expected a value, found </\(name)>", at: start)
            }
            let nameStart = position
            while position < count, Self.isNameByte(base[position]) { position += 1 }
            let element = element(at: nameStart, length: position - nameStart)
            // The name as text only when it is needed for a message.
            let name =
                element == .other
                ? String(
                    decoding: UnsafeBufferPointer(start: base + nameStart, count: position - nameStart), as: UTF8.self)
                : ""
            if position < count, base[position] == UInt8(ascii: ">") {
                position += 1
                return (element, name, false, start)
            }
            skipWhitespace()
            if skip("/>") { return (element, name, true, start) }
            guard skip(UInt8(ascii: ">")) else { throw error("the <\(name)> tag is malformed", at: start) }
            return (element, name, false, start)
        }

        /// Whether `byte` is XML white space (space, tab, line feed, carriage return), with one test
        /// of a bit in a mask.
        @inline(__always)
        static func isSpace(_ byte: UInt8) -> Bool {
            byte <= 0x20 && (UInt64(1) &<< UInt64(byte)) & 0x1_0000_2600 != 0
        }

        static func isNameByte(_ byte: UInt8) -> Bool {
            (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z")
        }

        /// Reads `</name>` for `expected`.
        @inline(__always)
        mutating func closeTag(_ expected: Element) throws(Malformed) {
            // The usual closing tags, written plainly, recognised whole.
            let plain: Bool
            switch expected {
            case .key: plain = skip(Tag.keyEnd)
            case .string: plain = skip(Tag.stringEnd)
            case .integer: plain = skip(Tag.integerEnd)
            case .real: plain = skip(Tag.realEnd)
            case .array: plain = skip(Tag.arrayEnd)
            case .dict: plain = skip(Tag.dictEnd)
            default: plain = false
            }
            if plain { return }
            let start = position
            if position + 1 < count, base[position] == UInt8(ascii: "<"), base[position + 1] == UInt8(ascii: "/") {
                position += 2
                let nameStart = position
                while position < count, Self.isNameByte(base[position]) { position += 1 }
                if element(at: nameStart, length: position - nameStart) == expected {
                    if skip(UInt8(ascii: ">")) { return }
                    skipWhitespace()
                    if skip(UInt8(ascii: ">")) { return }
                    throw error("expected > to close </\(expected.name)>")
                }
            }
            position = start
            throw error("expected </\(expected.name)>")
        }

        /// The next value. The usual scalars, written plainly (`<string>`, `<integer>`, `<real>`,
        /// `<true/>`, `<false/>` right after white space), are recognised here without the general
        /// tag reader; everything else goes through ``openTag()``.
        @inline(__always)
        mutating func value(depth: Int) throws(Malformed) -> PropertyListValue {
            skipWhitespace()
            let start = position
            if position + 1 < count, base[position] == UInt8(ascii: "<") {
                switch base[position + 1] {
                case UInt8(ascii: "s"):
                    if skip(Tag.string) { return .string(try plainText(closing: .string, Tag.stringEnd)) }
                case UInt8(ascii: "i"):
                    if skip(Tag.integer) {
                        if let value = plainInteger() { return value }
                        return try integer(Self.trimmed(try text(closing: .integer)), at: start)
                    }
                case UInt8(ascii: "r"):
                    if skip(Tag.real) {
                        if let value = plainReal() { return value }
                        return try real(Self.trimmed(try text(closing: .real)), at: start)
                    }
                case UInt8(ascii: "a"):
                    if depth < XMLPropertyListReader.maximumDepth, skip(Tag.array) {
                        return .array(try arrayContents(depth: depth))
                    }
                case UInt8(ascii: "d"):
                    if depth < XMLPropertyListReader.maximumDepth, skip(Tag.dict) {
                        return .dictionary(try dictionaryContents(depth: depth))
                    }
                case UInt8(ascii: "t"): if skip(Tag.trueEmpty) { return .bool(true) }
                case UInt8(ascii: "f"): if skip(Tag.falseEmpty) { return .bool(false) }
                default: break
                }
            }
            return try taggedValue(depth: depth)
        }

        /// The value after any tag, read by ``openTag()``. Containers are read from here, scalars in
        /// ``scalar(_:)``, so that this frame, one a level of nesting, stays small.
        mutating func taggedValue(depth: Int) throws(Malformed) -> PropertyListValue {
            let tag = try openTag()
            switch tag.element {
            case .array:
                guard depth < XMLPropertyListReader.maximumDepth else {
                    throw error("nesting deeper than \(XMLPropertyListReader.maximumDepth) levels", at: tag.start)
                }
                if tag.empty { return .array([]) }
                return .array(try arrayContents(depth: depth))
            case .dict:
                guard depth < XMLPropertyListReader.maximumDepth else {
                    throw error("nesting deeper than \(XMLPropertyListReader.maximumDepth) levels", at: tag.start)
                }
                if tag.empty { return .dictionary([:]) }
                return .dictionary(try dictionaryContents(depth: depth))
            default:
                return try scalar(tag)
            }
        }

        /// The scalar value of `tag`, read by ``openTag()``.
        @inline(never)
        mutating func scalar(
            _ tag: (element: Element, name: String, empty: Bool, start: Int)
        ) throws(Malformed) -> PropertyListValue {
            switch tag.element {
            case .true:
                if !tag.empty { try closeTag(.true) }
                return .bool(true)
            case .false:
                if !tag.empty { try closeTag(.false) }
                return .bool(false)
            case .string:
                return .string(tag.empty ? "" : try text(closing: .string))
            case .integer:
                if !tag.empty, let value = plainInteger() { return value }
                let text = tag.empty ? "" : try self.text(closing: .integer)
                return try integer(Self.trimmed(text), at: tag.start)
            case .real:
                if !tag.empty, let value = plainReal() { return value }
                return try real(Self.trimmed(tag.empty ? "" : try self.text(closing: .real)), at: tag.start)
            case .date:
                let text = Self.trimmed(tag.empty ? "" : try self.text(closing: .date))
                guard let date = Self.parseDate(text) else { throw error("\"\(text)\" is not a date", at: tag.start) }
                return .date(date)
            case .data:
                let text = tag.empty ? "" : try self.text(closing: .data)
                let compact = text.filter { !$0.isWhitespace }
                guard let data = Data(base64Encoded: compact) else {
                    throw error("the data is not valid base64", at: tag.start)
                }
                return .data(data)
            case .array, .dict, .key, .other:
                throw error("<\(tag.element == .key ? "key" : tag.name)> is not a property-list element", at: tag.start)
            }
        }

        /// The elements of an array up to its `</array>`, its `<array>` read.
        mutating func arrayContents(depth: Int) throws(Malformed) -> [PropertyListValue] {
            // Collected first, like a dictionary's entries, so the array is made once at its size.
            let start = elementCount
            while true {
                skipWhitespace()
                if skip(Tag.arrayEnd) { return takeArray(from: start) }
                try skipMisc()
                if peek("</") {
                    try closeTag(.array)
                    return takeArray(from: start)
                }
                let element = try value(depth: depth + 1)
                pushElement(element)
            }
        }

        /// The entries of a dictionary up to its `</dict>`, its `<dict>` read.
        mutating func dictionaryContents(depth: Int) throws(Malformed) -> [String: PropertyListValue] {
            // Collected first, so the dictionary is built once at its final size.
            let start = entryCount
            while true {
                skipWhitespace()
                let key: String
                // The usual entry starts with a plain <key>; anything else takes the general path.
                if skip(Tag.key) {
                    key = try plainText(closing: .key, Tag.keyEnd)
                } else if skip(Tag.dictEnd) {
                    return takeDictionary(from: start)
                } else if let general = try generalKey() {
                    key = general
                } else {
                    return takeDictionary(from: start)
                }
                let value = try value(depth: depth + 1)
                pushEntry(key, value)
            }
        }

        /// The next key of a dictionary, read by the general path, or nil at its `</dict>` (read).
        /// (Not inlined, so that the dictionaries' frames, one a level of nesting, stay small.)
        @inline(never)
        mutating func generalKey() throws(Malformed) -> String? {
            try skipMisc()
            if peek("</") {
                try closeTag(.dict)
                return nil
            }
            let keyTag = try openTag()
            guard keyTag.element == .key else {
                throw error("expected <key> in a dictionary, found another element", at: keyTag.start)
            }
            return keyTag.empty ? "" : try text(closing: .key)
        }

        /// The common integer, an optional sign and 1 to 18 decimal digits (which always fit in an
        /// `Int64`) up to a plainly written `</integer>`, read from the bytes; nil (having read
        /// nothing) for anything else, which the general path reads.
        @inline(__always)
        mutating func plainInteger() -> PropertyListValue? {
            var index = position
            let negative = index < count && base[index] == UInt8(ascii: "-")
            if negative || (index < count && base[index] == UInt8(ascii: "+")) { index += 1 }
            let digitsStart = index
            var value: UInt64 = 0
            while index < count, index - digitsStart < 18, base[index] &- UInt8(ascii: "0") < 10 {
                value = value &* 10 &+ UInt64(base[index] &- UInt8(ascii: "0"))
                index += 1
            }
            // (A nineteenth digit stops here too: it is not the `<`.)
            guard index > digitsStart, index < count, base[index] == UInt8(ascii: "<") else { return nil }
            let start = position
            position = index
            guard skip(Tag.integerEnd) else {
                position = start
                return nil
            }
            return .integer(negative ? -Int64(value) : Int64(value))
        }

        /// The common real, read from the bytes: an optional sign, decimal digits with at most one
        /// point, an optional exponent, up to `</real>`, with at most 19 significant digits (they
        /// fit in a UInt64). ``DecimalReal`` rounds it as `Double(_:)` would. nil (having read
        /// nothing) for anything else and whatever `DecimalReal` cannot decide: the general path
        /// reads those.
        @inline(__always)
        mutating func plainReal() -> PropertyListValue? {
            var index = position
            let negative = index < count && base[index] == UInt8(ascii: "-")
            if negative || (index < count && base[index] == UInt8(ascii: "+")) { index += 1 }
            // Leading zeros (before and just after the point) are not significant; at most 19 digits
            // follow them (19 cannot overflow a UInt64).
            let digitsStart = index
            while index < count, base[index] == UInt8(ascii: "0") { index += 1 }
            var digits: UInt64 = 0
            let significantStart = index
            while index < count, base[index] &- UInt8(ascii: "0") < 10 {
                digits = digits &* 10 &+ UInt64(base[index] &- UInt8(ascii: "0"))
                index += 1
            }
            var significant = index - significantStart
            var fractionDigits = 0
            var sawDigit = index > digitsStart
            if index < count, base[index] == UInt8(ascii: ".") {
                index += 1
                let fractionStart = index
                if digits == 0 {  // still leading zeros
                    while index < count, base[index] == UInt8(ascii: "0") { index += 1 }
                }
                let beforeDigits = index
                while index < count, base[index] &- UInt8(ascii: "0") < 10 {
                    digits = digits &* 10 &+ UInt64(base[index] &- UInt8(ascii: "0"))
                    index += 1
                }
                fractionDigits = index - fractionStart
                significant += index - beforeDigits
                sawDigit = sawDigit || index > fractionStart
            }
            guard sawDigit, significant <= 19 else { return nil }
            var exponent = 0
            if index < count, base[index] | 0x20 == UInt8(ascii: "e") {
                index += 1
                let negativeExponent = index < count && base[index] == UInt8(ascii: "-")
                if negativeExponent || (index < count && base[index] == UInt8(ascii: "+")) { index += 1 }
                let exponentStart = index
                while index < count, index - exponentStart < 4, base[index] &- UInt8(ascii: "0") < 10 {
                    exponent = exponent * 10 + Int(base[index] &- UInt8(ascii: "0"))
                    index += 1
                }
                guard index > exponentStart else { return nil }
                if negativeExponent { exponent = -exponent }
            }
            guard index < count, base[index] == UInt8(ascii: "<"),
                let value = DecimalReal.double(
                    significand: digits, exponent: exponent - fractionDigits, negative: negative)
            else { return nil }
            let start = position
            position = index
            guard skip(Tag.realEnd) else {
                position = start
                return nil
            }
            return .real(value)
        }

        /// ``text(closing:)`` for `<key>` and `<string>`, inlined where they are read: ASCII text
        /// up to the plainly written `closing` tag is made a String at once; anything else (other
        /// bytes, entities, CDATA, comments, a tag written with spaces) goes the general way.
        @inline(__always)
        mutating func plainText(closing name: Element, _ closing: Tag) throws(Malformed) -> String {
            let start = position
            let (end, isASCII) = markup(from: position)
            if isASCII {
                position = end
                if skip(closing) { return PropertyListText.string(ascii: base + start, count: end - start) }
                position = start
            }
            return try text(closing: name)
        }

        /// Reads character data up to `</name>`, resolving entities and CDATA sections.
        @inline(never)
        mutating func text(closing name: Element) throws(Malformed) -> String {
            let start = position
            // The common case: plain text up to the closing tag, made into a String in one step.
            let (end, isASCII) = markup(from: position)
            if end + 1 < count, base[end] == UInt8(ascii: "<"), base[end + 1] == UInt8(ascii: "/") {
                let text =
                    isASCII
                    ? PropertyListText.string(ascii: base + start, count: end - start)
                    : String(validating: UnsafeBufferPointer(start: base + start, count: end - start), as: UTF8.self)
                guard let string = text else { throw error("the text is not valid UTF-8", at: start) }
                position = end
                try closeTag(name)
                return string
            }
            return try textWithMarkup(closing: name)
        }

        /// Where the first `<` or `&` at or after `start` is (`count` if none), eight bytes at a time,
        /// and whether the bytes before it are all ASCII (`false` may also mean a byte after it in
        /// the same eight was not: a hint for the fast path, never a verdict).
        @inline(__always)
        func markup(from start: Int) -> (end: Int, isASCII: Bool) {
            var index = start
            let raw = UnsafeRawPointer(base)
            var high: UInt64 = 0
            while index + 8 <= count {
                let word = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: index, as: UInt64.self))
                high |= word
                // A byte of `word ^ pattern` is zero where `word` holds the pattern's byte; the
                // lowest flagged byte is exact (a borrow can only flag bytes above a zero one).
                let lessThan = word ^ 0x3C3C_3C3C_3C3C_3C3C
                let ampersand = word ^ 0x2626_2626_2626_2626
                let flags =
                    ((lessThan &- 0x0101_0101_0101_0101) & ~lessThan | (ampersand &- 0x0101_0101_0101_0101) & ~ampersand)
                    & 0x8080_8080_8080_8080
                if flags != 0 { return (index + flags.trailingZeroBitCount / 8, high & 0x8080_8080_8080_8080 == 0) }
                index += 8
            }
            while index < count, base[index] != UInt8(ascii: "<"), base[index] != UInt8(ascii: "&") {
                high |= UInt64(base[index])
                index += 1
            }
            return (index, high & 0x8080_8080_8080_8080 == 0)
        }

        /// Reads character data holding entities, CDATA sections or comments up to `</name>`.
        mutating func textWithMarkup(closing name: Element) throws(Malformed) -> String {
            let start = position
            var buffer: [UInt8] = []
            var plainStart = position
            func flush(_ end: Int) {
                buffer.append(contentsOf: UnsafeBufferPointer(start: base + plainStart, count: end - plainStart))
            }
            while position < count {
                let byte = base[position]
                if byte == UInt8(ascii: "<") {
                    if skip("<![CDATA[") {
                        flush(position - 9)
                        let contentStart = position
                        try skip(through: "]]>", what: "a CDATA section")
                        buffer.append(
                            contentsOf: UnsafeBufferPointer(
                                start: base + contentStart, count: position - 3 - contentStart))
                        plainStart = position
                        continue
                    }
                    if skip("<!--") {
                        flush(position - 4)
                        try skip(through: "-->", what: "a comment")
                        plainStart = position
                        continue
                    }
                    flush(position)
                    try closeTag(name)
                    guard
                        let string = buffer.withUnsafeBufferPointer({
                            PropertyListText.string(validatingUTF8: $0.baseAddress ?? base, count: $0.count)
                        })
                    else {
                        throw error("the text is not valid UTF-8", at: start)
                    }
                    return string
                } else if byte == UInt8(ascii: "&") {
                    flush(position)
                    let entityStart = position
                    var end = position + 1
                    while end < min(position + 12, count), base[end] != UInt8(ascii: ";") { end += 1 }
                    guard end < min(position + 12, count) else {
                        throw error("an & is not the start of an entity", at: entityStart)
                    }
                    let entity = String(
                        decoding: UnsafeBufferPointer(start: base + position + 1, count: end - position - 1),
                        as: UTF8.self)
                    let scalar: Unicode.Scalar?
                    switch entity {
                    case "lt": scalar = "<"
                    case "gt": scalar = ">"
                    case "amp": scalar = "&"
                    case "quot": scalar = "\""
                    case "apos": scalar = "'"
                    default:
                        if entity.hasPrefix("#x") || entity.hasPrefix("#X") {
                            scalar = UInt32(entity.dropFirst(2), radix: 16).flatMap(Unicode.Scalar.init)
                        } else if entity.hasPrefix("#") {
                            scalar = UInt32(entity.dropFirst()).flatMap(Unicode.Scalar.init)
                        } else {
                            throw error("the entity &\(entity); is not defined", at: entityStart)
                        }
                    }
                    guard let scalar else { throw error("&\(entity); is not a valid character", at: entityStart) }
                    buffer.append(contentsOf: Array(String(scalar).utf8))
                    position = end + 1
                    plainStart = position
                } else {
                    position += 1
                }
            }
            throw error("the <\(name.name)> element is not closed", at: start)
        }

        /// `text` without leading and trailing XML white space.
        static func trimmed(_ text: String) -> String {
            var text = text
            let trimmed: String? = text.withUTF8 { utf8 in
                var start = 0
                var end = utf8.count
                while start < end, isSpace(utf8[start]) { start += 1 }
                while end > start, isSpace(utf8[end - 1]) { end -= 1 }
                if start == 0 && end == utf8.count { return nil }  // the usual case: nothing to trim
                return String(decoding: UnsafeBufferPointer(rebasing: utf8[start..<end]), as: UTF8.self)
            }
            return trimmed ?? text
        }

        func integer(_ text: String, at offset: Int) throws(Malformed) -> PropertyListValue {
            if let value = Int64(text) { return .integer(value) }
            if let value = UInt64(text.hasPrefix("+") ? String(text.dropFirst()) : text) {
                return PropertyListValue(integer: value)
            }
            let lowered = text.lowercased()
            if lowered.hasPrefix("0x"), let value = UInt64(lowered.dropFirst(2), radix: 16) {
                return PropertyListValue(integer: value)
            }
            throw error("\"\(text)\" is not an integer that fits in 64 bits", at: offset)
        }

        /// The real in `text` (trimmed), in any spelling `Double(_:)` reads or Foundation writes
        /// for the infinities and NaN.
        func real(_ text: String, at offset: Int) throws(Malformed) -> PropertyListValue {
            if let number = Double(text) { return .real(number) }
            switch text.lowercased() {
            case "nan": return .real(.nan)
            case "+infinity", "infinity", "inf", "+inf": return .real(.infinity)
            case "-infinity", "-inf": return .real(-.infinity)
            default: throw error("\"\(text)\" is not a real number", at: offset)
            }
        }

        /// Parses `YYYY-MM-DDTHH:MM:SSZ` (the form plists use), without a formatter, as Foundation's
        /// `PropertyListSerialization` does: the year may have a `-` and other than four digits
        /// (up to nine here), each other field has two digits, and a field past its range rolls
        /// over (February 31st, a 60th second: ``CalendarArithmetic``), so that a file Foundation
        /// reads is read here too, to the same moment.
        static func parseDate(_ text: String) -> Date? {
            let utf8 = Array(text.utf8)
            let negative = utf8.first == UInt8(ascii: "-")
            let yearStart = negative ? 1 : 0
            let yearEnd = utf8.count - 16  // "-MM-DDTHH:MM:SSZ" follows the year
            guard (1...9).contains(yearEnd - yearStart), utf8[yearEnd] == UInt8(ascii: "-"),
                utf8[yearEnd + 3] == UInt8(ascii: "-"), utf8[yearEnd + 6] == UInt8(ascii: "T"),
                utf8[yearEnd + 9] == UInt8(ascii: ":"), utf8[yearEnd + 12] == UInt8(ascii: ":"),
                utf8[yearEnd + 15] == UInt8(ascii: "Z")
            else { return nil }
            func number(_ range: Range<Int>) -> Int64? {
                var value: Int64 = 0
                for index in range {
                    let digit = Int64(utf8[index]) - 48
                    guard (0...9).contains(digit) else { return nil }
                    value = value * 10 + digit
                }
                return value
            }
            func field(_ start: Int) -> Int64? { number(yearEnd + start..<yearEnd + start + 2) }
            guard let year = number(yearStart..<yearEnd), let month = field(1), let day = field(4),
                let hour = field(7), let minute = field(10), let second = field(13)
            else { return nil }
            let seconds = CalendarArithmetic.secondsSince1970(
                year: negative ? -year : year, month: month, day: day, hour: hour, minute: minute, second: second)
            return Date(timeIntervalSince1970: Double(seconds))
        }
    }
}
