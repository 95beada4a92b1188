import Foundation

/// Writes Apple's binary property-list format (`bplist00`).
///
/// A sizing pass counts the objects, their references and the exact bytes they take, which fixes
/// the reference size, the offset size and the length of the whole file. One pass then writes
/// every object after the objects it refers to (so a container's references are known when it is
/// written) and the top object last, straight into the one allocation the returned `Data` owns,
/// each object's offset going into the offset table as the object begins. Integers take the
/// fewest bytes; strings are not shared between places (the format allows both, and sharing would
/// cost a hash table on every write).
package enum BinaryPropertyListWriter {
    package static func encode(_ value: PropertyListValue) -> Data {
        var size = Size()
        size.add(value)
        let referenceSize = byteCount(for: UInt64(size.objects))
        let offsetTable = 8 + size.bytes + size.references * referenceSize
        let offsetSize = byteCount(for: UInt64(offsetTable))
        let total = offsetTable + size.objects * offsetSize + 32
        guard let base = malloc(total) else { fatalError("out of memory for a \(total)-byte property list") }
        let scratch = UnsafeMutablePointer<Int>.allocate(capacity: max(size.references, 1))
        defer { scratch.deallocate() }
        var writer = Writer(
            base: base, referenceSize: referenceSize, offsetTable: offsetTable, offsetSize: offsetSize,
            references: scratch, referenceCapacity: max(size.references, 1), objectLimit: size.objects)
        base.storeBytes(of: (0x6270_6C69_7374_3030 as UInt64).bigEndian, as: UInt64.self)  // "bplist00"
        let top = writer.write(value)
        // The sizing pass and the writing pass read the same immutable value the same way.
        precondition(writer.position == offsetTable && writer.objectIndex == size.objects)
        writer.finish(objects: size.objects, top: top)
        return Data(bytesNoCopy: base, count: total, deallocator: .free)
    }

    static func byteCount(for value: UInt64) -> Int {
        value <= 0xFF ? 1 : value <= 0xFFFF ? 2 : value <= 0xFFFF_FFFF ? 4 : 8
    }

    /// The bytes of a marker holding `count` (its own byte, and an integer object when 15 or more).
    @inline(__always)
    static func markerSize(count: Int) -> Int {
        count < 15 ? 1 : 2 + byteCount(for: UInt64(count))
    }

    /// Whether `bytes` are all ASCII: checked eight at a time, the last (partial) group by loads
    /// that overlap the ones before rather than byte by byte.
    @inline(__always)
    static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let count = bytes.count
        guard let start = bytes.baseAddress, count > 0 else { return true }
        let raw = UnsafeRawPointer(start)
        var bits: UInt64
        if count >= 8 {
            bits = raw.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
            var index = 0
            while index + 8 < count {
                bits |= raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                index += 8
            }
        } else if count >= 4 {
            bits = UInt64(
                raw.loadUnaligned(as: UInt32.self) | raw.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self))
        } else if count >= 2 {
            bits = UInt64(
                raw.loadUnaligned(as: UInt16.self) | raw.loadUnaligned(fromByteOffset: count - 2, as: UInt16.self))
        } else {
            bits = UInt64(start[0])
        }
        return bits & 0x8080_8080_8080_8080 == 0
    }

    /// How `string` is written: ASCII as its bytes, anything else as UTF-16 (big-endian).
    static func form(of string: String) -> (isASCII: Bool, count: Int) {
        // Every scalar beyond ASCII takes fewer UTF-16 units than UTF-8 bytes, so the counts are
        // equal exactly when the string is ASCII; and for a string known to be ASCII (the flag
        // every native String carries) both counts are its length, without a scan.
        let bytes = string.utf8.count
        let units = string.utf16.count
        return bytes == units ? (true, bytes) : (false, units)
    }

    /// What the objects of a value take: objects, bytes (without references) and references.
    private struct Size {
        var objects = 0
        var bytes = 0
        var references = 0

        mutating func add(string: String) {
            let (isASCII, count) = BinaryPropertyListWriter.form(of: string)
            objects += 1
            bytes += BinaryPropertyListWriter.markerSize(count: count) + (isASCII ? count : 2 * count)
        }

        mutating func add(_ value: PropertyListValue) {
            switch value {
            case .string(let string):
                add(string: string)
            case .array(let elements):
                objects += 1
                bytes += BinaryPropertyListWriter.markerSize(count: elements.count)
                references += elements.count
                for element in elements { add(element) }
            case .dictionary(let entries):
                objects += 1
                bytes += BinaryPropertyListWriter.markerSize(count: entries.count)
                references += 2 * entries.count
                for (key, element) in entries {
                    add(string: key)
                    add(element)
                }
            case .bool:
                objects += 1
                bytes += 1
            case .integer(let number):
                objects += 1
                bytes += number < 0 ? 9 : 1 + BinaryPropertyListWriter.byteCount(for: UInt64(number))
            case .unsignedInteger:
                objects += 1
                bytes += 17
            case .real, .date:
                objects += 1
                bytes += 9
            case .float:
                objects += 1
                bytes += 5
            case .data(let data):
                objects += 1
                bytes += BinaryPropertyListWriter.markerSize(count: data.count) + data.count
            }
        }
    }

    /// Writes objects into memory sized by ``Size``: no bounds or capacity checks per byte.
    private struct Writer {
        let base: UnsafeMutableRawPointer
        let referenceSize: Int
        let offsetTable: Int
        let offsetSize: Int
        /// Room for the references of the containers being written (children before their container).
        let references: UnsafeMutablePointer<Int>
        let referenceCapacity: Int
        let objectLimit: Int
        var referenceTop = 0
        var position = 8
        var objectIndex = 0

        /// Stops before `count` more bytes would run past the objects' area (see ``begin()``).
        @inline(__always)
        func reserve(_ count: Int) {
            precondition(position + count <= offsetTable, "binary writer: sizing disagrees")
        }

        /// Takes room for `count` references on the scratch stack.
        @inline(__always)
        mutating func pushReferences(_ count: Int) -> UnsafeMutablePointer<Int> {
            precondition(referenceTop + count <= referenceCapacity, "binary writer: sizing disagrees")
            defer { referenceTop += count }
            return references + referenceTop
        }

        /// Stores `value` big-endian in `size` bytes at `offset`.
        @inline(__always)
        func store(_ value: UInt64, size: Int, at offset: Int) {
            switch size {
            case 1: base.storeBytes(of: UInt8(truncatingIfNeeded: value), toByteOffset: offset, as: UInt8.self)
            case 2:
                base.storeBytes(of: UInt16(truncatingIfNeeded: value).bigEndian, toByteOffset: offset, as: UInt16.self)
            case 4:
                base.storeBytes(of: UInt32(truncatingIfNeeded: value).bigEndian, toByteOffset: offset, as: UInt32.self)
            default: base.storeBytes(of: value.bigEndian, toByteOffset: offset, as: UInt64.self)
            }
        }

        @inline(__always)
        mutating func put(_ byte: UInt8) {
            base.storeBytes(of: byte, toByteOffset: position, as: UInt8.self)
            position += 1
        }

        @inline(__always)
        mutating func put(_ value: UInt64, size: Int) {
            store(value, size: size, at: position)
            position += size
        }

        @inline(__always)
        mutating func putMarker(_ type: UInt8, count: Int) {
            if count < 15 {
                put(type << 4 | UInt8(count))
            } else {
                put(type << 4 | 0xF)
                let size = BinaryPropertyListWriter.byteCount(for: UInt64(count))
                put(0x10 | UInt8(size.trailingZeroBitCount))
                put(UInt64(count), size: size)
            }
        }

        mutating func putReferences(_ start: UnsafeMutablePointer<Int>, count: Int) {
            reserve(count * referenceSize)
            switch referenceSize {
            case 1:
                for index in 0..<count {
                    base.storeBytes(
                        of: UInt8(truncatingIfNeeded: start[index]), toByteOffset: position + index, as: UInt8.self)
                }
            case 2:
                for index in 0..<count {
                    base.storeBytes(
                        of: UInt16(truncatingIfNeeded: start[index]).bigEndian, toByteOffset: position + 2 * index,
                        as: UInt16.self)
                }
            default:
                for index in 0..<count {
                    store(UInt64(start[index]), size: referenceSize, at: position + referenceSize * index)
                }
            }
            position += count * referenceSize
        }

        /// Starts a new object: enters where it begins in the offset table and returns its index.
        @inline(__always)
        mutating func begin() -> Int {
            // The sizing pass decided where the objects end; stopping here if it were ever wrong
            // keeps every store inside the buffer (an object's fixed part is shorter than the
            // offset table and trailer that follow; its variable part is checked in `reserve`).
            precondition(position < offsetTable && objectIndex < objectLimit, "binary writer: sizing disagrees")
            store(UInt64(position), size: offsetSize, at: offsetTable + objectIndex * offsetSize)
            objectIndex += 1
            return objectIndex - 1
        }

        mutating func write(string: String) -> Int {
            let index = begin()
            // ASCII as its bytes (the common case: checked and copied from the string's own storage).
            let wroteASCII: Bool? = string.utf8.withContiguousStorageIfAvailable { utf8 in
                guard BinaryPropertyListWriter.isASCII(utf8) else { return false }
                putMarker(0x5, count: utf8.count)
                reserve(utf8.count)
                UnsafeMutableRawBufferPointer(start: base + position, count: utf8.count)
                    .copyMemory(from: UnsafeRawBufferPointer(utf8))
                position += utf8.count
                return true
            }
            switch wroteASCII {
            case true?:
                break
            case false?:
                putUTF16(string)
            case nil:  // not stored as contiguous UTF-8
                if string.utf8.allSatisfy({ $0 < 0x80 }) {
                    putMarker(0x5, count: string.utf8.count)
                    for byte in string.utf8 { put(byte) }
                } else {
                    putUTF16(string)
                }
            }
            return index
        }

        /// Writes `string` as UTF-16 (big-endian), the form of strings that are not ASCII.
        mutating func putUTF16(_ string: String) {
            putMarker(0x6, count: string.utf16.count)
            reserve(2 * string.utf16.count)
            for unit in string.utf16 { put(UInt64(unit), size: 2) }
        }

        /// Writes `value` (children first) and returns its object index.
        mutating func write(_ value: PropertyListValue) -> Int {
            switch value {
            case .string(let string):
                return write(string: string)
            case .array(let elements):
                let count = elements.count
                let children = pushReferences(count)
                for (offset, element) in elements.enumerated() { children[offset] = write(element) }
                referenceTop -= count
                let index = begin()
                putMarker(0xA, count: count)
                putReferences(children, count: count)
                return index
            case .dictionary(let entries):
                let count = entries.count
                let children = pushReferences(2 * count)  // the keys' references, then the values'
                var offset = 0
                for (key, element) in entries {
                    children[offset] = write(string: key)
                    children[count + offset] = write(element)
                    offset += 1
                }
                referenceTop -= 2 * count
                let index = begin()
                putMarker(0xD, count: count)
                putReferences(children, count: 2 * count)
                return index
            case .bool(let flag):
                let index = begin()
                put(flag ? 0x09 : 0x08)
                return index
            case .integer(let number):
                let index = begin()
                if number < 0 {
                    put(0x13)
                    put(UInt64(bitPattern: number), size: 8)
                } else {
                    let size = BinaryPropertyListWriter.byteCount(for: UInt64(number))
                    put(0x10 | UInt8(size.trailingZeroBitCount))
                    put(UInt64(number), size: size)
                }
                return index
            case .unsignedInteger(let number):
                let index = begin()
                put(0x14)  // 128-bit, as CoreFoundation writes values above Int64.max
                put(0, size: 8)
                put(number, size: 8)
                return index
            case .real(let number):
                let index = begin()
                put(0x23)
                put(number.bitPattern, size: 8)
                return index
            case .float(let number):
                let index = begin()
                put(0x22)  // a 4-byte real, as CoreFoundation writes a Float
                put(UInt64(number.bitPattern), size: 4)
                return index
            case .date(let date):
                let index = begin()
                put(0x33)
                put(date.timeIntervalSinceReferenceDate.bitPattern, size: 8)
                return index
            case .data(let data):
                let index = begin()
                putMarker(0x4, count: data.count)
                reserve(data.count)
                let target = UnsafeMutableRawBufferPointer(start: base + position, count: data.count)
                data.withUnsafeBytes { target.copyMemory(from: $0) }
                position += data.count
                return index
            }
        }

        /// Writes the trailer after the offset table (which `begin()` filled).
        func finish(objects: Int, top: Int) {
            var at = offsetTable + objects * offsetSize
            for _ in 0..<6 {  // unused, sort version
                base.storeBytes(of: 0 as UInt8, toByteOffset: at, as: UInt8.self)
                at += 1
            }
            base.storeBytes(of: UInt8(offsetSize), toByteOffset: at, as: UInt8.self)
            base.storeBytes(of: UInt8(referenceSize), toByteOffset: at + 1, as: UInt8.self)
            store(UInt64(objects), size: 8, at: at + 2)
            store(UInt64(top), size: 8, at: at + 10)
            store(UInt64(offsetTable), size: 8, at: at + 18)
        }
    }
}
