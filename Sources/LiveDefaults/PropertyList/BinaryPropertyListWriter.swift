import Foundation

/// Writes Apple's binary property-list format (`bplist00`), as CoreFoundation lays it out:
/// the top object first, equal strings stored once, integers in the fewest bytes.
package enum BinaryPropertyListWriter {
    package static func encode(_ value: PropertyListValue) -> Data {
        var writer = Writer()
        let top = writer.flatten(value)
        return writer.serialize(top: top)
    }

    private enum Object {
        case scalar(PropertyListValue)
        case array([Int])
        case dictionary(keys: [Int], values: [Int])
    }

    private struct Writer {
        var objects: [Object] = []
        var strings: [String: Int] = [:]

        mutating func flatten(_ value: PropertyListValue) -> Int {
            switch value {
            case .string(let string):
                if let index = strings[string] { return index }
                objects.append(.scalar(value))
                strings[string] = objects.count - 1
                return objects.count - 1
            case .array(let elements):
                let index = objects.count
                objects.append(.array([]))
                var references: [Int] = []
                references.reserveCapacity(elements.count)
                for element in elements { references.append(flatten(element)) }
                objects[index] = .array(references)
                return index
            case .dictionary(let entries):
                let index = objects.count
                objects.append(.array([]))
                var keys: [Int] = []
                var values: [Int] = []
                keys.reserveCapacity(entries.count)
                values.reserveCapacity(entries.count)
                for (key, element) in entries {
                    keys.append(flatten(.string(key)))
                    values.append(flatten(element))
                }
                objects[index] = .dictionary(keys: keys, values: values)
                return index
            default:
                objects.append(.scalar(value))
                return objects.count - 1
            }
        }

        static func byteCount(for value: UInt64) -> Int {
            value <= 0xFF ? 1 : value <= 0xFFFF ? 2 : value <= 0xFFFF_FFFF ? 4 : 8
        }

        func serialize(top: Int) -> Data {
            let referenceSize = Self.byteCount(for: UInt64(objects.count))
            var output: [UInt8] = []
            output.reserveCapacity(objects.count * 12 + 64)
            output.append(contentsOf: "bplist00".utf8)
            var offsets: [Int] = []
            offsets.reserveCapacity(objects.count)

            func append(_ value: UInt64, size: Int) {
                var shift = (size - 1) * 8
                while shift >= 0 {
                    output.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
                    shift -= 8
                }
            }
            func appendMarker(_ type: UInt8, count: Int) {
                if count < 15 {
                    output.append(type << 4 | UInt8(count))
                } else {
                    output.append(type << 4 | 0xF)
                    let size = Self.byteCount(for: UInt64(count))
                    output.append(0x10 | UInt8(size.trailingZeroBitCount))
                    append(UInt64(count), size: size)
                }
            }

            for object in objects {
                offsets.append(output.count)
                switch object {
                case .scalar(let value):
                    switch value {
                    case .bool(let flag): output.append(flag ? 0x09 : 0x08)
                    case .integer(let number):
                        if number < 0 {
                            output.append(0x13)
                            append(UInt64(bitPattern: number), size: 8)
                        } else {
                            let size = Self.byteCount(for: UInt64(number))
                            output.append(0x10 | UInt8(size.trailingZeroBitCount))
                            append(UInt64(number), size: size)
                        }
                    case .unsignedInteger(let number):
                        output.append(0x14)  // 128-bit, as CoreFoundation writes values above Int64.max
                        append(0, size: 8)
                        append(number, size: 8)
                    case .real(let number):
                        output.append(0x23)
                        append(number.bitPattern, size: 8)
                    case .date(let date):
                        output.append(0x33)
                        append(date.timeIntervalSinceReferenceDate.bitPattern, size: 8)
                    case .data(let data):
                        appendMarker(0x4, count: data.count)
                        output.append(contentsOf: data)
                    case .string(let string):
                        if string.utf8.allSatisfy({ $0 < 0x80 }) {
                            appendMarker(0x5, count: string.utf8.count)
                            output.append(contentsOf: string.utf8)
                        } else {
                            let units = Array(string.utf16)
                            appendMarker(0x6, count: units.count)
                            for unit in units {
                                output.append(UInt8(unit >> 8))
                                output.append(UInt8(truncatingIfNeeded: unit))
                            }
                        }
                    case .array, .dictionary:
                        preconditionFailure("containers are flattened")
                    }
                case .array(let references):
                    appendMarker(0xA, count: references.count)
                    for reference in references { append(UInt64(reference), size: referenceSize) }
                case .dictionary(let keys, let values):
                    appendMarker(0xD, count: keys.count)
                    for reference in keys { append(UInt64(reference), size: referenceSize) }
                    for reference in values { append(UInt64(reference), size: referenceSize) }
                }
            }

            let offsetTable = output.count
            let offsetSize = Self.byteCount(for: UInt64(offsetTable))
            for offset in offsets { append(UInt64(offset), size: offsetSize) }
            output.append(contentsOf: [0, 0, 0, 0, 0, 0])  // unused, sort version
            output.append(UInt8(offsetSize))
            output.append(UInt8(referenceSize))
            append(UInt64(objects.count), size: 8)
            append(UInt64(top), size: 8)
            append(UInt64(offsetTable), size: 8)
            return Data(output)
        }
    }
}
