import Foundation

/// Writes Apple's binary property-list format (`bplist00`).
///
/// One walk over the value, no sizing pass (docs/design.md, "The codec: the binary
/// encoder"). The walk writes every object that holds no references (strings, numbers, data…) as it
/// meets it, into one growing buffer, and numbers them in that order. A container (array,
/// dictionary) only takes a place among the containers and a run of reference slots, filled as its
/// children are written. When the walk ends the objects are counted, which fixes the reference
/// size; the containers are written after the other objects, numbered after them, then the offset
/// table and the trailer. The format lets objects come in any order; Foundation's reader and ours
/// only follow the offsets. Integers take the fewest bytes; strings are ASCII when they are, else
/// UTF-16, and are not shared between places (the format allows both, and sharing would cost a
/// hash table on every write).
package enum BinaryPropertyListWriter {
    package static func encode(_ value: PropertyListValue) -> Data {
        var writer = Writer(estimatedObjects: estimatedObjects(value))
        let top = writer.write(value)
        return writer.finish(top: top)
    }

    /// The bytes of the one object `value` encodes to, as they would lie in a file, when it holds
    /// no references (nil for an array or a dictionary).
    package static func objectBytes(_ value: PropertyListValue) -> [UInt8]? {
        switch value {
        case .array, .dictionary: return nil
        default: break
        }
        var writer = Writer(estimatedObjects: 1)
        defer { writer.discard() }
        _ = writer.write(value)
        return Array(UnsafeRawBufferPointer(start: writer.bytes + 8, count: writer.position - 8))
    }

    /// A first guess at the number of objects, for the buffers' first sizes (they grow as needed).
    static func estimatedObjects(_ value: PropertyListValue) -> Int {
        switch value {
        case .dictionary(let entries): 2 * entries.count + 1
        case .array(let elements): elements.count + 1
        default: 1
        }
    }

    package static func byteCount(for value: UInt64) -> Int {
        value <= 0xFF ? 1 : value <= 0xFFFF ? 2 : value <= 0xFFFF_FFFF ? 4 : 8
    }

    /// Whether `bytes` are all ASCII: checked eight at a time, the last (partial) group by loads
    /// that overlap the ones before rather than byte by byte.
    @inline(__always)
    static func isASCII(_ raw: UnsafeRawPointer, count: Int) -> Bool {
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
        } else if count == 1 {
            bits = UInt64(raw.load(as: UInt8.self))
        } else {
            return true
        }
        return bits & 0x8080_8080_8080_8080 == 0
    }

    /// Stores `count` integers (each through `transform`) big-endian in `size` (1, 2, 4 or 8) bytes
    /// each, from `target` on: the references and the offset table, whose room the caller made.
    /// Wrapping arithmetic: the loop is the hot part of writing them.
    @inline(__always)
    static func storeBigEndian(
        _ values: UnsafeMutablePointer<Int>, count: Int, size: Int, at target: UnsafeMutableRawPointer,
        _ transform: (Int) -> Int
    ) {
        var index = 0
        switch size {
        case 1:
            while index < count {
                target.storeBytes(
                    of: UInt8(truncatingIfNeeded: transform(values[index])), toByteOffset: index, as: UInt8.self)
                index &+= 1
            }
        case 2:
            while index < count {
                target.storeBytes(
                    of: UInt16(truncatingIfNeeded: transform(values[index])).bigEndian, toByteOffset: index &* 2,
                    as: UInt16.self)
                index &+= 1
            }
        case 4:
            while index < count {
                target.storeBytes(
                    of: UInt32(truncatingIfNeeded: transform(values[index])).bigEndian, toByteOffset: index &* 4,
                    as: UInt32.self)
                index &+= 1
            }
        default:
            while index < count {
                target.storeBytes(
                    of: UInt64(truncatingIfNeeded: transform(values[index])).bigEndian, toByteOffset: index &* 8,
                    as: UInt64.self)
                index &+= 1
            }
        }
    }

    /// A container met in the walk, written when the walk ends.
    struct Container {
        /// The object type's high nibble: 0xA (array) or 0xD (dictionary).
        var type: UInt8
        /// Its entries (a dictionary's references are twice as many: the keys', then the values').
        var count: Int
        /// Where its references start in ``Writer/references``.
        var firstReference: Int
    }

    /// Grows `pointer` (holding `count` elements, room for `capacity`) to room for at least `needed`.
    @inline(never)
    static func grow<Element>(
        _ pointer: inout UnsafeMutablePointer<Element>, count: Int, capacity: inout Int, needed: Int
    ) {
        let newCapacity = max(needed, 2 * capacity)
        let larger = UnsafeMutablePointer<Element>.allocate(capacity: newCapacity)
        larger.moveInitialize(from: pointer, count: count)
        pointer.deallocate()
        pointer = larger
        capacity = newCapacity
    }

    /// The walk's state: the file's bytes so far, the offsets of the objects written, the
    /// containers and their references. Every store is preceded by a capacity check of its own.
    struct Writer {
        /// The file: "bplist00", then the objects (malloc'd, handed to the returned `Data`).
        var bytes: UnsafeMutableRawPointer
        var byteCapacity: Int
        var position = 8
        /// Where each object written so far begins, by object number.
        var offsets: UnsafeMutablePointer<Int>
        var offsetCapacity: Int
        var objectCount = 0
        /// The containers, in the order met (the root first when it is one).
        var containers: UnsafeMutablePointer<Container>
        var containerCapacity: Int
        var containerCount = 0
        /// Every container's references: an object's number, or for a container `~` its place in
        /// ``containers`` (negative), turned into its number when the containers are written.
        var references: UnsafeMutablePointer<Int>
        var referenceCapacity: Int
        var referenceCount = 0

        init(estimatedObjects: Int, estimatedBytes: Int = 0) {
            // About 12 bytes an object in a typical suite; growth doubles when it is more.
            byteCapacity = max(256, 16 * estimatedObjects, estimatedBytes)
            guard let bytes = malloc(byteCapacity) else {
                fatalError("out of memory for a \(byteCapacity)-byte property list")
            }
            self.bytes = bytes
            bytes.storeBytes(of: (0x6270_6C69_7374_3030 as UInt64).bigEndian, as: UInt64.self)  // "bplist00"
            offsetCapacity = max(16, 2 * estimatedObjects)
            offsets = .allocate(capacity: offsetCapacity)
            containerCapacity = 16
            containers = .allocate(capacity: containerCapacity)
            referenceCapacity = max(16, 2 * estimatedObjects)
            references = .allocate(capacity: referenceCapacity)
        }

        // MARK: Room

        /// Makes room for `count` more bytes at `position`.
        @inline(__always)
        mutating func reserve(_ count: Int) {
            if position + count > byteCapacity { growBytes(position + count) }
        }

        @inline(never)
        mutating func growBytes(_ needed: Int) {
            let newCapacity = max(needed, 2 * byteCapacity)
            guard let larger = realloc(bytes, newCapacity) else {
                fatalError("out of memory for a \(newCapacity)-byte property list")
            }
            bytes = larger
            byteCapacity = newCapacity
        }

        /// Starts an object that holds no references, at least `size` bytes long: notes its offset,
        /// makes room for its first `size` bytes and returns its number.
        @inline(__always)
        mutating func begin(size: Int) -> Int {
            let index = note(objectAt: position)
            reserve(size)
            return index
        }

        /// Numbers an object that holds no references, written (or being written) at `offset`.
        @inline(__always)
        mutating func note(objectAt offset: Int) -> Int {
            if objectCount == offsetCapacity {
                BinaryPropertyListWriter.grow(
                    &offsets, count: objectCount, capacity: &offsetCapacity, needed: objectCount + 1)
            }
            offsets[objectCount] = offset
            objectCount += 1
            return objectCount - 1
        }

        // MARK: Stores (room already made)

        @inline(__always)
        mutating func put(_ byte: UInt8) {
            bytes.storeBytes(of: byte, toByteOffset: position, as: UInt8.self)
            position += 1
        }

        /// Stores `value` big-endian in `size` (1, 2, 4 or 8) bytes.
        @inline(__always)
        mutating func put(_ value: UInt64, size: Int) {
            switch size {
            case 1: bytes.storeBytes(of: UInt8(truncatingIfNeeded: value), toByteOffset: position, as: UInt8.self)
            case 2:
                bytes.storeBytes(
                    of: UInt16(truncatingIfNeeded: value).bigEndian, toByteOffset: position, as: UInt16.self)
            case 4:
                bytes.storeBytes(
                    of: UInt32(truncatingIfNeeded: value).bigEndian, toByteOffset: position, as: UInt32.self)
            default: bytes.storeBytes(of: value.bigEndian, toByteOffset: position, as: UInt64.self)
            }
            position += size
        }

        /// A marker holding `count`: in its own low nibble below 15, else in an integer object
        /// after it. Takes at most 10 bytes.
        @inline(__always)
        mutating func putMarker(_ type: UInt8, count: Int) {
            if count < 15 {
                put(type << 4 | UInt8(truncatingIfNeeded: count))
            } else {
                put(type << 4 | 0xF)
                let size = BinaryPropertyListWriter.byteCount(for: UInt64(count))
                put(0x10 | UInt8(truncatingIfNeeded: size.trailingZeroBitCount))
                put(UInt64(count), size: size)
            }
        }

        /// Copies `count` (more than 0) bytes from `source`, room already made: up to 16 bytes by
        /// two loads and stores that overlap, which is most strings, without a call.
        @inline(__always)
        mutating func putShort(_ source: UnsafeRawPointer, count: Int) {
            let target = bytes + position
            if count >= 8 {
                if count > 16 { return put(source, count: count) }
                target.storeBytes(of: source.loadUnaligned(as: UInt64.self), as: UInt64.self)
                target.storeBytes(
                    of: source.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self), toByteOffset: count - 8,
                    as: UInt64.self)
            } else if count >= 4 {
                target.storeBytes(of: source.loadUnaligned(as: UInt32.self), as: UInt32.self)
                target.storeBytes(
                    of: source.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self), toByteOffset: count - 4,
                    as: UInt32.self)
            } else {
                target.storeBytes(of: source.load(as: UInt8.self), as: UInt8.self)
                target.storeBytes(
                    of: source.load(fromByteOffset: count / 2, as: UInt8.self), toByteOffset: count / 2, as: UInt8.self)
                target.storeBytes(
                    of: source.load(fromByteOffset: count - 1, as: UInt8.self), toByteOffset: count - 1, as: UInt8.self)
            }
            position += count
        }

        /// Copies `count` bytes from `source`, room already made.
        @inline(__always)
        mutating func put(_ source: UnsafeRawPointer, count: Int) {
            (bytes + position).copyMemory(from: source, byteCount: count)
            position += count
        }

        // MARK: Objects

        mutating func write(string: borrowing String) -> Int {
            // Native strings (all but a few bridged ones) are contiguous UTF-8: ASCII is copied as is.
            let index = string.utf8.withContiguousStorageIfAvailable { utf8 -> Int in
                let count = utf8.count
                guard let start = utf8.baseAddress, count > 0 else {
                    let index = begin(size: 1)
                    put(0x50)
                    return index
                }
                guard BinaryPropertyListWriter.isASCII(start, count: count) else { return -1 }
                let index = begin(size: 10 + count)
                putMarker(0x5, count: count)
                putShort(start, count: count)
                return index
            }
            if let index, index >= 0 { return index }
            return write(utf16: copy string)
        }

        /// Writes `string` as UTF-16 (big-endian), the form of strings that are not ASCII.
        @inline(never)
        mutating func write(utf16 string: String) -> Int {
            let count = string.utf16.count
            let index = begin(size: 10 + 2 * count)
            putMarker(0x6, count: count)
            for unit in string.utf16 { put(UInt64(unit), size: 2) }
            return index
        }

        /// Takes a place among the containers and `slots` reference slots; returns the place and
        /// where its slots start.
        @inline(__always)
        mutating func beginContainer(_ type: UInt8, count: Int, slots: Int) -> (place: Int, first: Int) {
            if containerCount == containerCapacity {
                BinaryPropertyListWriter.grow(
                    &containers, count: containerCount, capacity: &containerCapacity, needed: containerCount + 1)
            }
            if referenceCount + slots > referenceCapacity {
                BinaryPropertyListWriter.grow(
                    &references, count: referenceCount, capacity: &referenceCapacity, needed: referenceCount + slots)
            }
            let first = referenceCount
            (containers + containerCount).initialize(to: Container(type: type, count: count, firstReference: first))
            containerCount += 1
            referenceCount += slots
            return (containerCount - 1, first)
        }

        /// Writes `value` (a container: its children, the container itself when the walk ends) and
        /// returns its reference: an object number, or `~` its place among the containers.
        mutating func write(_ value: PropertyListValue) -> Int {
            switch value {
            case .string(let string):
                return write(string: string)
            case .dictionary(let entries):
                let count = entries.count
                let (place, first) = beginContainer(0xD, count: count, slots: 2 * count)
                var slot = first
                for (key, element) in entries {
                    let keyReference = write(string: key)
                    let valueReference = write(element)
                    references[slot] = keyReference
                    references[slot + count] = valueReference
                    slot += 1
                }
                return ~place
            case .array(let elements):
                let count = elements.count
                let (place, first) = beginContainer(0xA, count: count, slots: count)
                var slot = first
                for element in elements {
                    let reference = write(element)
                    references[slot] = reference
                    slot += 1
                }
                return ~place
            case .bool(let flag):
                let index = begin(size: 1)
                put(flag ? 0x09 : 0x08)
                return index
            case .integer(let number):
                let index = begin(size: 9)
                if number < 0 {
                    put(0x13)
                    put(UInt64(bitPattern: number), size: 8)
                } else {
                    let size = BinaryPropertyListWriter.byteCount(for: UInt64(number))
                    put(0x10 | UInt8(truncatingIfNeeded: size.trailingZeroBitCount))
                    put(UInt64(number), size: size)
                }
                return index
            case .unsignedInteger(let number):
                let index = begin(size: 17)
                put(0x14)  // 128-bit, as CoreFoundation writes values above Int64.max
                put(0, size: 8)
                put(number, size: 8)
                return index
            case .real(let number):
                let index = begin(size: 9)
                put(0x23)
                put(number.bitPattern, size: 8)
                return index
            case .float(let number):
                let index = begin(size: 5)
                put(0x22)  // a 4-byte real, as CoreFoundation writes a Float
                put(UInt64(number.bitPattern), size: 4)
                return index
            case .date(let date):
                let index = begin(size: 9)
                put(0x33)
                put(date.timeIntervalSinceReferenceDate.bitPattern, size: 8)
                return index
            case .data(let data):
                let count = data.count
                let index = begin(size: 10 + count)
                putMarker(0x4, count: count)
                data.withUnsafeBytes { buffer in
                    if let start = buffer.baseAddress { put(start, count: count) }
                }
                return index
            }
        }

        // MARK: The end

        /// Frees the walk's buffers without making a file.
        mutating func discard() {
            free(bytes)
            offsets.deallocate()
            containers.deallocate()
            references.deallocate()
        }

        /// Writes the containers, the offset table and the trailer, frees the walk's buffers and
        /// returns the file.
        mutating func finish(top: Int) -> Data {
            let others = objectCount
            let objects = others + containerCount
            let referenceSize = BinaryPropertyListWriter.byteCount(for: UInt64(objects))
            // A container's number: after every other object, in the order the containers were met.
            @inline(__always) func number(_ reference: Int) -> Int { reference < 0 ? others &+ ~reference : reference }
            if objects > offsetCapacity {
                BinaryPropertyListWriter.grow(&offsets, count: objectCount, capacity: &offsetCapacity, needed: objects)
            }
            for place in 0..<containerCount {
                let container = containers[place]
                let slots = container.type == 0xD ? 2 * container.count : container.count
                offsets[others + place] = position
                reserve(10 + slots * referenceSize)
                putMarker(container.type, count: container.count)
                BinaryPropertyListWriter.storeBigEndian(
                    references + container.firstReference, count: slots, size: referenceSize, at: bytes + position,
                    number)
                position += slots * referenceSize
            }
            let offsetTable = position
            let offsetSize = BinaryPropertyListWriter.byteCount(for: UInt64(offsetTable))
            reserve(objects * offsetSize + 32)
            BinaryPropertyListWriter.storeBigEndian(offsets, count: objects, size: offsetSize, at: bytes + position) {
                $0
            }
            position += objects * offsetSize
            for _ in 0..<6 { put(0) }  // unused, sort version
            put(UInt8(offsetSize))
            put(UInt8(referenceSize))
            put(UInt64(objects), size: 8)
            put(UInt64(number(top)), size: 8)
            put(UInt64(offsetTable), size: 8)
            offsets.deallocate()
            containers.deallocate()
            references.deallocate()
            return Data(bytesNoCopy: bytes, count: position, deallocator: .free)
        }
    }
}
