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
    package static func decode(_ data: Data) throws(DefaultsError) -> PropertyListValue {
        let result: Result<PropertyListValue, DefaultsError> = data.withUnsafeBytes { buffer in
            do throws(DefaultsError) {
                var reader = try Reader(buffer)
                return .success(try reader.decodeTop())
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    private struct Reader {
        let bytes: UnsafeRawBufferPointer
        let offsetSize: Int
        let referenceSize: Int
        let objectCount: Int
        let topObject: Int
        let offsetTable: Int
        /// Objects decoded so far: a shared object is decoded once.
        var decoded: [PropertyListValue?]
        /// Containers being decoded now: meeting one again is a reference cycle.
        var inProgress: [Bool]

        init(_ bytes: UnsafeRawBufferPointer) throws(DefaultsError) {
            self.bytes = bytes
            guard bytes.count >= 8 + 32, bytes.starts(with: "bplist0".utf8) else {
                throw Self.error("the file is too short or lacks the bplist00 header", at: 0)
            }
            let trailer = bytes.count - 32
            offsetSize = Int(bytes[trailer + 6])
            referenceSize = Int(bytes[trailer + 7])
            let count = Self.bigEndian(bytes, at: trailer + 8, size: 8)
            let top = Self.bigEndian(bytes, at: trailer + 16, size: 8)
            let table = Self.bigEndian(bytes, at: trailer + 24, size: 8)
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
            decoded = Array(repeating: nil, count: objectCount)
            inProgress = Array(repeating: false, count: objectCount)
        }

        @inline(__always)
        static func bigEndian(_ bytes: UnsafeRawBufferPointer, at offset: Int, size: Int) -> UInt64 {
            switch size {
            case 1: return UInt64(bytes[offset])
            case 2: return UInt64(UInt16(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt16.self)))
            case 4: return UInt64(UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
            case 8: return UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            default:
                var value: UInt64 = 0
                for index in offset..<offset + size { value = value << 8 | UInt64(bytes[index]) }
                return value
            }
        }

        static func error(_ problem: String, at offset: Int) -> DefaultsError {
            DefaultsError(.malformedPropertyList, "binary property list, byte offset \(offset): \(problem)")
        }

        mutating func decodeTop() throws(DefaultsError) -> PropertyListValue {
            try object(topObject, depth: 0)
        }

        func offset(of object: Int) throws(DefaultsError) -> Int {
            let offset = Self.bigEndian(bytes, at: offsetTable + object * offsetSize, size: offsetSize)
            guard offset >= 8, offset < UInt64(offsetTable) else {
                throw Self.error(
                    "object \(object) is said to start at \(offset), outside the object area", at: offsetTable)
            }
            return Int(offset)
        }

        func reference(at position: Int) throws(DefaultsError) -> Int {
            let reference = Self.bigEndian(bytes, at: position, size: referenceSize)
            guard reference < UInt64(objectCount) else {
                throw Self.error("reference \(reference) is outside the \(objectCount) objects", at: position)
            }
            return Int(reference)
        }

        /// The length of an object whose marker's low nibble is `nibble` (0xF: an integer follows).
        /// Returns the length and where the content starts.
        func length(nibble: UInt8, after marker: Int) throws(DefaultsError) -> (Int, Int) {
            if nibble != 0xF { return (Int(nibble), marker + 1) }
            let position = marker + 1
            guard position < offsetTable else { throw Self.error("a length is cut off", at: position) }
            let intMarker = bytes[position]
            guard intMarker >> 4 == 0x1, intMarker & 0xF <= 3 else {
                throw Self.error("a length marker 0x\(String(intMarker, radix: 16)) is not an integer", at: position)
            }
            let size = 1 << Int(intMarker & 0xF)
            guard position + 1 + size <= offsetTable else { throw Self.error("a length is cut off", at: position) }
            let value = Self.bigEndian(bytes, at: position + 1, size: size)
            guard value <= UInt64(offsetTable) else {
                throw Self.error("a declared length of \(value) is larger than the file", at: position)
            }
            return (Int(value), position + 1 + size)
        }

        func checkRange(_ start: Int, _ count: Int, unit: Int, at marker: Int) throws(DefaultsError) {
            let (bytesNeeded, overflow) = count.multipliedReportingOverflow(by: unit)
            guard !overflow, start + bytesNeeded <= offsetTable else {
                throw Self.error("an object of \(count) elements runs past the object area", at: marker)
            }
        }

        mutating func object(_ index: Int, depth: Int) throws(DefaultsError) -> PropertyListValue {
            if let value = decoded[index] { return value }
            let marker = try offset(of: index)
            let type = bytes[marker] >> 4
            let nibble = bytes[marker] & 0xF
            let value: PropertyListValue
            switch type {
            case 0x0:
                switch nibble {
                case 0x8: value = .bool(false)
                case 0x9: value = .bool(true)
                default:
                    throw Self.error(
                        "the marker 0x0\(String(nibble, radix: 16)) is not a property-list value", at: marker)
                }
            case 0x1:
                value = try integer(nibble: nibble, at: marker)
            case 0x2:
                guard nibble == 2 || nibble == 3 else { throw Self.error("a real of 2^\(nibble) bytes", at: marker) }
                let size = 1 << Int(nibble)
                guard marker + 1 + size <= offsetTable else { throw Self.error("a real is cut off", at: marker) }
                let raw = Self.bigEndian(bytes, at: marker + 1, size: size)
                value = .real(size == 4 ? Double(Float(bitPattern: UInt32(raw))) : Double(bitPattern: raw))
            case 0x3:
                guard nibble == 3, marker + 9 <= offsetTable else { throw Self.error("a malformed date", at: marker) }
                let seconds = Double(bitPattern: Self.bigEndian(bytes, at: marker + 1, size: 8))
                value = .date(Date(timeIntervalSinceReferenceDate: seconds))
            case 0x4:
                let (count, start) = try length(nibble: nibble, after: marker)
                try checkRange(start, count, unit: 1, at: marker)
                value = .data(Data(bytes[start..<start + count]))
            case 0x5:
                let (count, start) = try length(nibble: nibble, after: marker)
                try checkRange(start, count, unit: 1, at: marker)
                let slice = UnsafeRawBufferPointer(rebasing: bytes[start..<start + count])
                for byte in slice where byte >= 0x80 {
                    throw Self.error("an ASCII string holds a byte above 0x7F", at: marker)
                }
                value = .string(String(decoding: slice, as: UTF8.self))
            case 0x6:
                let (count, start) = try length(nibble: nibble, after: marker)
                try checkRange(start, count, unit: 2, at: marker)
                value = .string(try utf16String(start: start, count: count, at: marker))
            case 0xA:
                let (count, start) = try length(nibble: nibble, after: marker)
                try checkRange(start, count, unit: referenceSize, at: marker)
                try enter(index, depth: depth, at: marker)
                var elements: [PropertyListValue] = []
                elements.reserveCapacity(count)
                for element in 0..<count {
                    elements.append(try object(try reference(at: start + element * referenceSize), depth: depth + 1))
                }
                inProgress[index] = false
                value = .array(elements)
            case 0xD:
                let (count, start) = try length(nibble: nibble, after: marker)
                try checkRange(start, count, unit: 2 * referenceSize, at: marker)
                try enter(index, depth: depth, at: marker)
                var entries: [String: PropertyListValue] = [:]
                entries.reserveCapacity(count)
                let valuesStart = start + count * referenceSize
                for entry in 0..<count {
                    let keyPosition = start + entry * referenceSize
                    guard case .string(let key) = try object(try reference(at: keyPosition), depth: depth + 1) else {
                        throw Self.error("a dictionary key is not a string", at: keyPosition)
                    }
                    entries[key] = try object(try reference(at: valuesStart + entry * referenceSize), depth: depth + 1)
                }
                inProgress[index] = false
                value = .dictionary(entries)
            default:
                throw Self.error(
                    "the marker 0x\(String(bytes[marker], radix: 16)) is not a supported property-list type", at: marker
                )
            }
            // Remember what is costly to build again: strings (writers share dictionary keys) and
            // containers (a hostile file may refer to one container many times, at every level, and
            // would otherwise cost time exponential in its depth). Numbers are cheaper to re-read.
            switch value {
            case .string, .array, .dictionary, .data: decoded[index] = value
            default: break
            }
            return value
        }

        mutating func enter(_ index: Int, depth: Int, at marker: Int) throws(DefaultsError) {
            guard !inProgress[index] else {
                throw Self.error("object \(index) contains itself (a reference cycle)", at: marker)
            }
            guard depth < BinaryPropertyListReader.maximumDepth else {
                throw Self.error("nesting deeper than \(BinaryPropertyListReader.maximumDepth) levels", at: marker)
            }
            inProgress[index] = true
        }

        func integer(nibble: UInt8, at marker: Int) throws(DefaultsError) -> PropertyListValue {
            guard nibble <= 4 else { throw Self.error("an integer of 2^\(nibble) bytes", at: marker) }
            let size = 1 << Int(nibble)
            guard marker + 1 + size <= offsetTable else { throw Self.error("an integer is cut off", at: marker) }
            switch size {
            case 1, 2, 4:  // unsigned
                return .integer(Int64(Self.bigEndian(bytes, at: marker + 1, size: size)))
            case 8:  // signed
                return .integer(Int64(bitPattern: Self.bigEndian(bytes, at: marker + 1, size: 8)))
            default:  // 16 bytes: a 128-bit integer; values beyond 64 bits are refused
                let high = Self.bigEndian(bytes, at: marker + 1, size: 8)
                let low = Self.bigEndian(bytes, at: marker + 9, size: 8)
                if high == 0 { return PropertyListValue(integer: low) }
                if high == .max, Int64(bitPattern: low) < 0 { return .integer(Int64(bitPattern: low)) }
                throw Self.error("an integer does not fit in 64 bits", at: marker)
            }
        }

        func utf16String(start: Int, count: Int, at marker: Int) throws(DefaultsError) -> String {
            var units: [UInt16] = []
            units.reserveCapacity(count)
            for index in 0..<count {
                units.append(UInt16(bytes[start + 2 * index]) << 8 | UInt16(bytes[start + 2 * index + 1]))
            }
            var scalars = String.UnicodeScalarView()
            var decoder = UTF16()
            var iterator = units.makeIterator()
            loop: while true {
                switch decoder.decode(&iterator) {
                case .scalarValue(let scalar): scalars.append(scalar)
                case .emptyInput: break loop
                case .error: throw Self.error("a UTF-16 string holds an unpaired surrogate", at: marker)
                }
            }
            return String(scalars)
        }
    }
}
