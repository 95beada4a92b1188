import Foundation

/// Reads Apple's binary property-list format (`bplist00`).
///
/// Hostile input is a thrown error naming the byte offset, in time and memory bounded by the
/// file's size: every offset and reference is checked, a container's declared count must fit in
/// the bytes that remain, reference cycles are refused, and nesting deeper than
/// ``maximumDepth`` is refused.
package enum BinaryPropertyListReader {
    /// The deepest nesting of arrays and dictionaries accepted.
    package static let maximumDepth = 512

    /// Decodes a whole binary property list.
    package static func decode(_ data: Data) throws(PropertyListError) -> PropertyListValue {
        let result: Result<PropertyListValue, Malformed> = data.withUnsafeBytes { buffer in
            do throws(Malformed) {
                return .success(try Reader(buffer).decodeTop())
            } catch {
                return .failure(error)
            }
        }
        return try result.decoded()
    }

    private typealias Malformed = MalformedPropertyList

    /// A class, so that its methods share one reader rather than copies of it.
    private final class Reader {
        /// The file's bytes (at least 40 of them: the header and the trailer).
        let base: UnsafePointer<UInt8>
        let offsetSize: Int
        let referenceSize: Int
        let objectCount: Int
        let topObject: Int
        let offsetTable: Int
        /// Per object: ``seen``, ``inProgress`` and ``remembered``.
        let state: UnsafeMutablePointer<UInt8>
        /// Objects met more than once, decoded and kept (those whose state says ``remembered``);
        /// allocated the first time an object is met again.
        var remembered: UnsafeMutablePointer<PropertyListValue>?

        /// The object was decoded before.
        static let seen: UInt8 = 1
        /// The container is being decoded now: meeting it again is a reference cycle.
        static let inProgress: UInt8 = 2
        /// The object's value is kept in ``remembered``.
        static let isRemembered: UInt8 = 4

        init(_ bytes: UnsafeRawBufferPointer) throws(Malformed) {
            guard bytes.count >= 8 + 32, let address = bytes.baseAddress, bytes.starts(with: "bplist0".utf8) else {
                throw Self.error("the file is too short or lacks the bplist00 header", at: 0)
            }
            base = address.assumingMemoryBound(to: UInt8.self)
            let trailer = bytes.count - 32
            offsetSize = Int(bytes[trailer + 6])
            referenceSize = Int(bytes[trailer + 7])
            let count = Self.bigEndian(base, at: trailer + 8, size: 8)
            let top = Self.bigEndian(base, at: trailer + 16, size: 8)
            let table = Self.bigEndian(base, at: trailer + 24, size: 8)
            guard (1...8).contains(offsetSize), (1...8).contains(referenceSize) else {
                throw Self.error(
                    "the trailer declares offsets of \(offsetSize) and references of \(referenceSize) bytes",
                    at: trailer)
            }
            guard count >= 1, count <= UInt64(bytes.count), top < count else {
                throw Self.error("the trailer declares \(count) objects with the top object \(top)", at: trailer)
            }
            objectCount = Int(count)
            topObject = Int(top)
            let (tableBytes, overflow) = objectCount.multipliedReportingOverflow(by: offsetSize)
            guard !overflow, table >= 8, table <= UInt64(trailer), Int(table) + tableBytes <= trailer else {
                throw Self.error(
                    "the offset table (at \(table), \(objectCount) entries) lies outside the file", at: trailer)
            }
            offsetTable = Int(table)
            state = .allocate(capacity: objectCount)
            state.initialize(repeating: 0, count: objectCount)
        }

        deinit {
            if let remembered {
                for index in 0..<objectCount where state[index] & Self.isRemembered != 0 {
                    (remembered + index).deinitialize(count: 1)
                }
                remembered.deallocate()
            }
            state.deallocate()
        }

        @inline(__always)
        static func bigEndian(_ base: UnsafePointer<UInt8>, at offset: Int, size: Int) -> UInt64 {
            let raw = UnsafeRawPointer(base + offset)
            switch size {
            case 1: return UInt64(base[offset])
            case 2: return UInt64(UInt16(bigEndian: raw.loadUnaligned(as: UInt16.self)))
            case 4: return UInt64(UInt32(bigEndian: raw.loadUnaligned(as: UInt32.self)))
            case 8: return UInt64(bigEndian: raw.loadUnaligned(as: UInt64.self))
            default:
                var value: UInt64 = 0
                for index in offset..<offset + size { value = value << 8 | UInt64(base[index]) }
                return value
            }
        }

        /// The error for `problem` at `offset`: out of line, so that the message is built only on
        /// this cold path and the decoding functions stay small.
        @inline(never)
        static func error(_ problem: @autoclosure () -> String, at offset: Int) -> Malformed {
            Malformed(message: "binary property list, byte offset \(offset): \(problem())")
        }

        func decodeTop() throws(Malformed) -> PropertyListValue {
            try object(topObject, depth: 0)
        }

        @inline(__always)
        func offset(of object: Int) throws(Malformed) -> Int {
            let offset = Self.bigEndian(base, at: offsetTable + object * offsetSize, size: offsetSize)
            guard offset >= 8, offset < UInt64(offsetTable) else {
                throw Self.error(
                    "object \(object) is said to start at \(offset), outside the object area", at: offsetTable)
            }
            return Int(offset)
        }

        @inline(__always)
        func reference(at position: Int) throws(Malformed) -> Int {
            let reference = Self.bigEndian(base, at: position, size: referenceSize)
            let objectCount = objectCount  // (the message captures this, not the whole reader)
            guard reference < UInt64(objectCount) else {
                throw Self.error("reference \(reference) is outside the \(objectCount) objects", at: position)
            }
            return Int(reference)
        }

        /// The length of an object whose marker's low nibble is `nibble` (0xF: an integer follows).
        /// Returns the length and where the content starts.
        @inline(__always)
        func length(nibble: UInt8, after marker: Int) throws(Malformed) -> (Int, Int) {
            if nibble != 0xF { return (Int(nibble), marker + 1) }
            return try longLength(after: marker)
        }

        func longLength(after marker: Int) throws(Malformed) -> (Int, Int) {
            let position = marker + 1
            guard position < offsetTable else { throw Self.error("a length is cut off", at: position) }
            let intMarker = base[position]
            guard intMarker >> 4 == 0x1, intMarker & 0xF <= 3 else {
                throw Self.error("a length marker 0x\(String(intMarker, radix: 16)) is not an integer", at: position)
            }
            let size = 1 << Int(intMarker & 0xF)
            guard position + 1 + size <= offsetTable else { throw Self.error("a length is cut off", at: position) }
            let value = Self.bigEndian(base, at: position + 1, size: size)
            guard value <= UInt64(offsetTable) else {
                throw Self.error("a declared length of \(value) is larger than the file", at: position)
            }
            return (Int(value), position + 1 + size)
        }

        @inline(__always)
        func checkRange(_ start: Int, _ count: Int, unit: Int, at marker: Int) throws(Malformed) {
            let (bytesNeeded, overflow) = count.multipliedReportingOverflow(by: unit)
            guard !overflow, start + bytesNeeded <= offsetTable else {
                throw Self.error("an object of \(count) elements runs past the object area", at: marker)
            }
        }

        /// Decodes object `index`.
        ///
        /// Sharing is bounded without a memo of every object: an object met for the first time is
        /// decoded and marked seen; met again, it is decoded once more and that value is kept for
        /// every later reference. So each object is decoded at most twice, whatever the sharing
        /// (a hostile file referring to one container many times, at every level, costs time
        /// linear in its size, not exponential in its depth), and a file without sharing (the
        /// usual case) keeps nothing. Numbers are cheaper to read again than to keep.
        func object(_ index: Int, depth: Int) throws(Malformed) -> PropertyListValue {
            let flags = state[index]
            if flags & Self.isRemembered != 0 { return remembered.unsafelyUnwrapped[index] }
            let marker = try offset(of: index)
            let byte = base[marker]
            let nibble = byte & 0xF
            let value: PropertyListValue
            switch byte >> 4 {
            case 0x0:
                switch nibble {
                case 0x8: return .bool(false)
                case 0x9: return .bool(true)
                default:
                    throw Self.error(
                        "the marker 0x0\(String(nibble, radix: 16)) is not a property-list value", at: marker)
                }
            case 0x1:
                return try integer(nibble: nibble, at: marker)
            case 0x2:
                guard nibble == 2 || nibble == 3 else { throw Self.error("a real of 2^\(nibble) bytes", at: marker) }
                let size = 1 << Int(nibble)
                guard marker + 1 + size <= offsetTable else { throw Self.error("a real is cut off", at: marker) }
                let raw = Self.bigEndian(base, at: marker + 1, size: size)
                return size == 4
                    ? .float(Float(bitPattern: UInt32(truncatingIfNeeded: raw))) : .real(Double(bitPattern: raw))
            case 0x3:
                guard nibble == 3, marker + 9 <= offsetTable else { throw Self.error("a malformed date", at: marker) }
                let seconds = Double(bitPattern: Self.bigEndian(base, at: marker + 1, size: 8))
                return .date(Date(timeIntervalSinceReferenceDate: seconds))
            case 0x4:
                let (count, start) = try length(nibble: nibble, after: marker)
                try checkRange(start, count, unit: 1, at: marker)
                value = .data(Data(bytes: base + start, count: count))
            case 0x5:
                let (count, start) = try length(nibble: nibble, after: marker)
                try checkRange(start, count, unit: 1, at: marker)
                guard PropertyListText.isASCII(base + start, count: count) else {
                    throw Self.error("an ASCII string holds a byte above 0x7F", at: marker)
                }
                value = .string(PropertyListText.string(ascii: base + start, count: count))
            case 0x6:
                let (count, start) = try length(nibble: nibble, after: marker)
                try checkRange(start, count, unit: 2, at: marker)
                value = .string(try utf16String(start: start, count: count, at: marker))
            case 0xA:
                let (count, start) = try length(nibble: nibble, after: marker)
                try checkRange(start, count, unit: referenceSize, at: marker)
                try enter(index, flags: flags, depth: depth, at: marker)
                var elements: [PropertyListValue] = []
                elements.reserveCapacity(count)
                for element in 0..<count {
                    elements.append(try object(try reference(at: start + element * referenceSize), depth: depth + 1))
                }
                value = .array(elements)
            case 0xD:
                let (count, start) = try length(nibble: nibble, after: marker)
                try checkRange(start, count, unit: 2 * referenceSize, at: marker)
                try enter(index, flags: flags, depth: depth, at: marker)
                var entries: [String: PropertyListValue] = [:]
                entries.reserveCapacity(count)
                let valuesStart = start + count * referenceSize
                for entry in 0..<count {
                    let keyPosition = start + entry * referenceSize
                    let key = try key(try reference(at: keyPosition), depth: depth + 1, at: keyPosition)
                    entries[key] = try object(try reference(at: valuesStart + entry * referenceSize), depth: depth + 1)
                }
                value = .dictionary(entries)
            default:
                throw Self.error(
                    "the marker 0x\(String(byte, radix: 16)) is not a supported property-list type", at: marker)
            }
            // Strings, data and containers: seen now, kept if seen before (see above). A container
            // is no longer in progress.
            if flags & Self.seen != 0 {
                remember(value, at: index)
            } else {
                state[index] = flags | Self.seen
            }
            return value
        }

        /// Decodes object `index` as a dictionary key, which must be a string.
        @inline(__always)
        func key(_ index: Int, depth: Int, at position: Int) throws(Malformed) -> String {
            // The usual key, a short ASCII string met for the first time, without the general path.
            if state[index] == 0 {
                let marker = try offset(of: index)
                let byte = base[marker]
                let count = Int(byte & 0xF)
                if byte >> 4 == 0x5, count != 0xF, marker + 1 + count <= offsetTable,
                    PropertyListText.isASCII(base + marker + 1, count: count)
                {
                    state[index] = Self.seen
                    return PropertyListText.string(ascii: base + marker + 1, count: count)
                }
            }
            guard case .string(let key) = try object(index, depth: depth) else {
                throw Self.error("a dictionary key is not a string", at: position)
            }
            return key
        }

        func remember(_ value: PropertyListValue, at index: Int) {
            if remembered == nil { remembered = .allocate(capacity: objectCount) }
            (remembered.unsafelyUnwrapped + index).initialize(to: value)
            state[index] = Self.seen | Self.isRemembered
        }

        @inline(__always)
        func enter(_ index: Int, flags: UInt8, depth: Int, at marker: Int) throws(Malformed) {
            guard flags & Self.inProgress == 0 else {
                throw Self.error("object \(index) contains itself (a reference cycle)", at: marker)
            }
            guard depth < BinaryPropertyListReader.maximumDepth else {
                throw Self.error("nesting deeper than \(BinaryPropertyListReader.maximumDepth) levels", at: marker)
            }
            state[index] = flags | Self.inProgress
        }

        @inline(__always)
        func integer(nibble: UInt8, at marker: Int) throws(Malformed) -> PropertyListValue {
            guard nibble <= 4 else { throw Self.error("an integer of 2^\(nibble) bytes", at: marker) }
            let size = 1 << Int(nibble)
            guard marker + 1 + size <= offsetTable else { throw Self.error("an integer is cut off", at: marker) }
            switch size {
            case 1, 2, 4:  // unsigned
                return .integer(Int64(Self.bigEndian(base, at: marker + 1, size: size)))
            case 8:  // signed
                return .integer(Int64(bitPattern: Self.bigEndian(base, at: marker + 1, size: 8)))
            default:  // 16 bytes: a 128-bit integer; values beyond 64 bits are refused
                let high = Self.bigEndian(base, at: marker + 1, size: 8)
                let low = Self.bigEndian(base, at: marker + 9, size: 8)
                if high == 0 { return PropertyListValue(integer: low) }
                if high == .max, Int64(bitPattern: low) < 0 { return .integer(Int64(bitPattern: low)) }
                throw Self.error("an integer does not fit in 64 bits", at: marker)
            }
        }

        /// `count` big-endian UTF-16 code units at `start` as a String; an unpaired surrogate is an error.
        func utf16String(start: Int, count: Int, at marker: Int) throws(Malformed) -> String {
            let units = [UInt16](unsafeUninitializedCapacity: count) { buffer, initialized in
                let raw = UnsafeRawPointer(base + start)
                for index in 0..<count {
                    buffer[index] = UInt16(bigEndian: raw.loadUnaligned(fromByteOffset: 2 * index, as: UInt16.self))
                }
                initialized = count
            }
            var index = 0
            while index < count {
                let unit = units[index]
                if unit & 0xF800 == 0xD800 {  // a surrogate: a high one followed by a low one
                    guard unit < 0xDC00, index + 1 < count, units[index + 1] & 0xFC00 == 0xDC00 else {
                        throw Self.error("a UTF-16 string holds an unpaired surrogate", at: marker)
                    }
                    index += 2
                } else {
                    index += 1
                }
            }
            return String(decoding: units, as: UTF16.self)
        }
    }
}
