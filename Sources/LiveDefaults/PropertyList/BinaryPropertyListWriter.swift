import Foundation

/// Writes Apple's binary property-list format (`bplist00`).
///
/// One pass writes every object after the objects it refers to (so a container's references are
/// known when it is written) and the top object last; a counting pass before it fixes the
/// reference size. Integers take the fewest bytes; strings are not shared between places (the
/// format allows both, and sharing would cost a hash table on every write).
package enum BinaryPropertyListWriter {
    package static func encode(_ value: PropertyListValue) -> Data {
        let objectCount = count(value)
        var writer = Writer(referenceSize: byteCount(for: UInt64(objectCount)), capacity: objectCount * 16 + 64)
        let top = writer.write(value)
        return writer.finish(top: top)
    }

    /// The number of objects `value` is written as (one per value and per dictionary key).
    static func count(_ value: PropertyListValue) -> Int {
        switch value {
        case .array(let elements):
            var total = 1
            for element in elements { total += count(element) }
            return total
        case .dictionary(let entries):
            var total = 1 + entries.count
            for element in entries.values { total += count(element) }
            return total
        default:
            return 1
        }
    }

    static func byteCount(for value: UInt64) -> Int {
        value <= 0xFF ? 1 : value <= 0xFFFF ? 2 : value <= 0xFFFF_FFFF ? 4 : 8
    }

    private struct Writer {
        let referenceSize: Int
        var output: [UInt8]
        var offsets: [Int] = []

        init(referenceSize: Int, capacity: Int) {
            self.referenceSize = referenceSize
            output = Array("bplist00".utf8)
            output.reserveCapacity(capacity)
        }

        @inline(__always)
        mutating func append(_ value: UInt64, size: Int) {
            switch size {
            case 1: output.append(UInt8(truncatingIfNeeded: value))
            case 2: withUnsafeBytes(of: UInt16(truncatingIfNeeded: value).bigEndian) { output.append(contentsOf: $0) }
            case 4: withUnsafeBytes(of: UInt32(truncatingIfNeeded: value).bigEndian) { output.append(contentsOf: $0) }
            default: withUnsafeBytes(of: value.bigEndian) { output.append(contentsOf: $0) }
            }
        }

        mutating func appendMarker(_ type: UInt8, count: Int) {
            if count < 15 {
                output.append(type << 4 | UInt8(count))
            } else {
                output.append(type << 4 | 0xF)
                let size = BinaryPropertyListWriter.byteCount(for: UInt64(count))
                output.append(0x10 | UInt8(size.trailingZeroBitCount))
                append(UInt64(count), size: size)
            }
        }

        /// Starts a new object: records where it begins and returns its index.
        mutating func begin() -> Int {
            offsets.append(output.count)
            return offsets.count - 1
        }

        mutating func write(string: String) -> Int {
            let index = begin()
            var text = string
            let isASCII = text.withUTF8 { utf8 in
                for byte in utf8 where byte >= 0x80 { return false }
                appendMarker(0x5, count: utf8.count)
                output.append(contentsOf: utf8)
                return true
            }
            if !isASCII {
                let units = Array(string.utf16)
                appendMarker(0x6, count: units.count)
                for unit in units {
                    output.append(UInt8(unit >> 8))
                    output.append(UInt8(truncatingIfNeeded: unit))
                }
            }
            return index
        }

        /// Writes `value` (children first) and returns its object index.
        mutating func write(_ value: PropertyListValue) -> Int {
            switch value {
            case .string(let string):
                return write(string: string)
            case .array(let elements):
                var references: [Int] = []
                references.reserveCapacity(elements.count)
                for element in elements { references.append(write(element)) }
                let index = begin()
                appendMarker(0xA, count: references.count)
                for reference in references { append(UInt64(reference), size: referenceSize) }
                return index
            case .dictionary(let entries):
                var keys: [Int] = []
                var values: [Int] = []
                keys.reserveCapacity(entries.count)
                values.reserveCapacity(entries.count)
                for (key, element) in entries {
                    keys.append(write(string: key))
                    values.append(write(element))
                }
                let index = begin()
                appendMarker(0xD, count: keys.count)
                for reference in keys { append(UInt64(reference), size: referenceSize) }
                for reference in values { append(UInt64(reference), size: referenceSize) }
                return index
            case .bool(let flag):
                let index = begin()
                output.append(flag ? 0x09 : 0x08)
                return index
            case .integer(let number):
                let index = begin()
                if number < 0 {
                    output.append(0x13)
                    append(UInt64(bitPattern: number), size: 8)
                } else {
                    let size = BinaryPropertyListWriter.byteCount(for: UInt64(number))
                    output.append(0x10 | UInt8(size.trailingZeroBitCount))
                    append(UInt64(number), size: size)
                }
                return index
            case .unsignedInteger(let number):
                let index = begin()
                output.append(0x14)  // 128-bit, as CoreFoundation writes values above Int64.max
                append(0, size: 8)
                append(number, size: 8)
                return index
            case .real(let number):
                let index = begin()
                output.append(0x23)
                append(number.bitPattern, size: 8)
                return index
            case .date(let date):
                let index = begin()
                output.append(0x33)
                append(date.timeIntervalSinceReferenceDate.bitPattern, size: 8)
                return index
            case .data(let data):
                let index = begin()
                appendMarker(0x4, count: data.count)
                output.append(contentsOf: data)
                return index
            }
        }

        mutating func finish(top: Int) -> Data {
            let offsetTable = output.count
            let offsetSize = BinaryPropertyListWriter.byteCount(for: UInt64(offsetTable))
            for offset in offsets { append(UInt64(offset), size: offsetSize) }
            output.append(contentsOf: [0, 0, 0, 0, 0, 0])  // unused, sort version
            output.append(UInt8(offsetSize))
            output.append(UInt8(referenceSize))
            append(UInt64(offsets.count), size: 8)
            append(UInt64(top), size: 8)
            append(UInt64(offsetTable), size: 8)
            return Data(output)
        }
    }
}
