import Foundation
import LiveDefaultsPropertyList

/// One change read back from a journal.
package struct JournalRecord: Sendable, Equatable {
    package enum Kind: UInt8, Sendable {
        /// The key was set to the value.
        case set = 1
        /// The key was removed.
        case remove = 2
        /// Every key was removed (a replacement of the whole suite: its values follow as sets).
        case clear = 3
        /// The key was set to a value that holds no references (a number, a string…), given as the
        /// one object of a binary property list, without the file's header, offset table and trailer.
        case setObject = 4
        /// The next change of the key comes from this origin (a rollback, a migration), not the
        /// process's own (docs/design.md, "History: origins"): the code is the payload's second byte.
        case origin = 5

        /// The kind of a change to `value` (nil: a removal). A match, not `value == nil`: that
        /// comparison copied the value out and destroyed it twice (outlined, about 40 instructions
        /// of every `set`).
        @inline(__always)
        package init(change value: PropertyListValue?) {
            if case .some = value { self = .set } else { self = .remove }
        }
    }

    package var kind: Kind
    package var key: String
    package var value: PropertyListValue?
    /// For an ``Kind/origin`` record: the origin's code (``HistoryFormat/origin(_:)`` reads it). A
    /// code, not the history's type, so that the journal's format stands alone (the journal fuzzer
    /// compiles it with the codec only).
    package var originCode: UInt8? = nil
}

/// The journal's file format (docs/design.md, "The journal"). All integers little-endian.
///
/// Header (32 bytes): magic `LDJOURNL` (8), version (4), reserved (4), state word (8: generation in
/// the high half, start offset in the low half), reserved (8).
/// Record (8-byte aligned): head word (8: payload length in the low half, generation in the high
/// half; stored last), CRC-32 of the rest of the record (4), reserved (4), payload: kind (1), reserved (3),
/// key length (4), key (UTF-8), value (binary property list; none for removals and clears).
package enum JournalFormat {
    package static let magic: [UInt8] = Array("LDJOURNL".utf8)
    package static let version: UInt32 = 1
    package static let headerSize = 32
    package static let recordHeaderSize = 16
    /// How much the file grows by.
    package static let chunk = 64 * 1024
    private static let stateOffset = 16

    static func writeHeader(_ base: UnsafeMutableRawPointer, generation: UInt32, start: Int) {
        for (index, byte) in magic.enumerated() { base.storeBytes(of: byte, toByteOffset: index, as: UInt8.self) }
        base.storeBytes(of: version.littleEndian, toByteOffset: 8, as: UInt32.self)
        writeState(base, generation: generation, start: start)
    }

    static func writeState(_ base: UnsafeMutableRawPointer, generation: UInt32, start: Int) {
        let word = UInt64(generation) << 32 | UInt64(UInt32(start))
        // One aligned 8-byte store: a process dying here leaves the old word or the new one.
        (base + stateOffset).assumingMemoryBound(to: UInt64.self).pointee = word.littleEndian
    }

    static func readState(_ base: UnsafeRawPointer) -> (generation: UInt32, start: Int) {
        let word = UInt64(littleEndian: base.load(fromByteOffset: stateOffset, as: UInt64.self))
        return (UInt32(word >> 32), Int(UInt32(truncatingIfNeeded: word)))
    }

    static func recordSize(payloadCount: Int) -> Int {
        (recordHeaderSize + payloadCount + 7) & ~7
    }

    /// The payload of a record: kind, key and the value's binary property list.
    /// A value that holds no references is written as its one binary object (``JournalRecord/Kind/setObject``),
    /// a container as a whole binary property list.
    static func payload(_ kind: JournalRecord.Kind, key: String, value: PropertyListValue?) -> [UInt8] {
        var key = key
        var kind = kind
        var object: [UInt8]?
        var whole: Data?
        if kind == .set, let value {
            object = BinaryPropertyListWriter.objectBytes(value)
            if object != nil { kind = .setObject } else { whole = BinaryPropertyListWriter.encode(value) }
        }
        return key.withUTF8 { keyBytes in
            var payload = [UInt8]()
            payload.reserveCapacity(8 + keyBytes.count + (object?.count ?? whole?.count ?? 0))
            payload.append(kind.rawValue)
            payload.append(0)
            payload.append(0)
            payload.append(0)
            withUnsafeBytes(of: UInt32(keyBytes.count).littleEndian) { payload.append(contentsOf: $0) }
            payload.append(contentsOf: keyBytes)
            if let object { payload.append(contentsOf: object) }
            if let whole { payload.append(contentsOf: whole) }
            return payload
        }
    }

    /// A binary property list whose one object is `object` (a ``JournalRecord/Kind/setObject`` record's value).
    static func wrap(object: some Collection<UInt8>) -> Data {
        var file = Data("bplist00".utf8)
        file.append(contentsOf: object)
        let tableOffset = UInt64(file.count)
        file.append(8)  // the offset table: the object is at byte 8
        file.append(contentsOf: [0, 0, 0, 0, 0, 0, 1, 1])  // unused, offset size 1, reference size 1
        for number: UInt64 in [1, 0, tableOffset] {
            withUnsafeBytes(of: number.bigEndian) { file.append(contentsOf: $0) }
        }
        return file
    }

    /// Finishes the record at `destination` whose payload is in place: the checksum, then the head
    /// word in one aligned store, so that a record is whole or absent.
    static func sealRecord(at destination: UnsafeMutableRawPointer, payloadCount: Int, generation: UInt32) {
        destination.storeBytes(of: UInt32(0), toByteOffset: 12, as: UInt32.self)
        // The checksum covers the reserved word and the payload: every byte after the head word but its own.
        let checksum = CRC32.checksum(UnsafeRawBufferPointer(start: destination + 12, count: 4 + payloadCount))
        destination.storeBytes(of: checksum.littleEndian, toByteOffset: 8, as: UInt32.self)
        let head = UInt64(generation) << 32 | UInt64(UInt32(payloadCount))
        destination.assumingMemoryBound(to: UInt64.self).pointee = head.littleEndian
    }

    /// Writes a payload: kind, key, then the value's bytes (`value` and `text`, one after the other).
    @inline(__always)
    static func writePayload(
        at destination: UnsafeMutableRawPointer, kind: JournalRecord.Kind, key: UnsafeBufferPointer<UInt8>,
        value: UnsafeRawBufferPointer, _ text: UnsafeRawBufferPointer
    ) {
        destination.storeBytes(of: UInt32(kind.rawValue).littleEndian, as: UInt32.self)
        destination.storeBytes(of: UInt32(key.count).littleEndian, toByteOffset: 4, as: UInt32.self)
        var target = destination + 8
        if let source = key.baseAddress { target.copyMemory(from: source, byteCount: key.count) }
        target += key.count
        if let source = value.baseAddress { target.copyMemory(from: source, byteCount: value.count) }
        target += value.count
        if let source = text.baseAddress { target.copyMemory(from: source, byteCount: text.count) }
    }

    /// A value's one binary-plist object, made without the codec for the common values: a boolean,
    /// an integer, a double, an ASCII string (the same bytes the codec writes for them).
    struct InlineObject {
        /// The marker and any number after it (at most 10 bytes).
        private var prefix: (UInt64, UInt64) = (0, 0)
        private var prefixCount = 0
        private var text: String?

        init?(_ value: PropertyListValue) {
            switch value {
            case .bool(let flag):
                put(flag ? 0x09 : 0x08)
            case .integer(let number):
                if number < 0 {
                    put(0x13)
                    put(UInt64(bitPattern: number), size: 8)
                } else {
                    putInteger(UInt64(number))
                }
            case .real(let number):
                put(0x23)
                put(number.bitPattern, size: 8)
            case .string(var string):
                let isASCII = string.withUTF8 { bytes in bytes.allSatisfy { $0 < 0x80 } }
                guard isASCII else { return nil }
                let count = string.utf8.count
                if count < 15 {
                    put(0x50 | UInt8(count))
                } else {
                    put(0x5F)
                    putInteger(UInt64(count))
                }
                text = string
            default:
                return nil
            }
        }

        private mutating func putInteger(_ number: UInt64) {
            let size = BinaryPropertyListWriter.byteCount(for: number)
            put(0x10 | UInt8(truncatingIfNeeded: size.trailingZeroBitCount))
            put(number, size: size)
        }

        private mutating func put(_ byte: UInt8) {
            let offset = prefixCount
            withUnsafeMutableBytes(of: &prefix) { $0[offset] = byte }
            prefixCount += 1
        }

        private mutating func put(_ number: UInt64, size: Int) {
            for index in (0..<size).reversed() { put(UInt8(truncatingIfNeeded: number >> (8 * UInt64(index)))) }
        }

        /// Calls `body` with the marker bytes and the string's bytes (empty when none).
        mutating func withBytes<Result>(_ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) -> Result) -> Result {
            let count = prefixCount
            let prefix = self.prefix
            return withUnsafeBytes(of: prefix) { prefixBytes in
                let head = UnsafeRawBufferPointer(rebasing: prefixBytes[0..<count])
                guard var text else { return body(head, UnsafeRawBufferPointer(start: nil, count: 0)) }
                return text.withUTF8 { body(head, UnsafeRawBufferPointer($0)) }
            }
        }
    }

    /// What reading a journal found.
    package struct Contents: Sendable {
        /// The records not yet released, in the order written.
        package var records: [JournalRecord] = []
        /// Why the journal cannot be trusted past `records` (a newer format, a bad magic, a checksum
        /// that does not match): the journal is kept aside. Nil when it ended cleanly or torn.
        package var problem: String?
    }

    /// Reads the records of a journal's bytes. A last record cut short (the file truncated) is
    /// dropped; a record whose checksum does not match, or a header this version does not know,
    /// stops the reading with a problem.
    package static func read(_ bytes: UnsafeRawBufferPointer) -> Contents {
        var contents = Contents()
        guard bytes.count >= headerSize else {
            // A journal is created at its full first chunk: shorter than a header is a torn creation.
            return contents
        }
        guard Array(bytes[0..<8]) == magic else {
            contents.problem = "does not start with the journal's magic bytes"
            return contents
        }
        let fileVersion = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt32.self))
        guard fileVersion == version else {
            contents.problem = "is journal format \(fileVersion); this version of LiveDefaults reads format \(version)"
            return contents
        }
        guard let base = bytes.baseAddress else { return contents }
        let state = readState(base)
        var offset = headerSize
        while offset + recordHeaderSize <= bytes.count {
            let head = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            let count = Int(UInt32(truncatingIfNeeded: head))
            let generation = UInt32(head >> 32)
            // A zero word or an older generation: the end of what was written.
            if count == 0 || generation != state.generation { break }
            let size = recordSize(payloadCount: count)
            // Cut short: a torn last record, dropped.
            if offset + recordHeaderSize + count > bytes.count { break }
            let payload = UnsafeRawBufferPointer(
                rebasing: bytes[(offset + recordHeaderSize)..<(offset + recordHeaderSize + count)])
            let checksum = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self))
            let covered = UnsafeRawBufferPointer(rebasing: bytes[(offset + 12)..<(offset + recordHeaderSize + count)])
            guard CRC32.checksum(covered) == checksum else {
                contents.problem = "has a record at byte \(offset) whose checksum does not match"
                return contents
            }
            guard let record = decodePayload(payload) else {
                contents.problem = "has a record at byte \(offset) that does not decode"
                return contents
            }
            if offset >= state.start { contents.records.append(record) }
            offset += size
        }
        return contents
    }

    private static func decodePayload(_ payload: UnsafeRawBufferPointer) -> JournalRecord? {
        guard payload.count >= 8, let kind = JournalRecord.Kind(rawValue: payload[0]) else { return nil }
        let keyCount = Int(UInt32(littleEndian: payload.loadUnaligned(fromByteOffset: 4, as: UInt32.self)))
        guard 8 + keyCount <= payload.count else { return nil }
        let key = String(decoding: payload[8..<(8 + keyCount)], as: UTF8.self)
        let rest = payload[(8 + keyCount)...]
        switch kind {
        case .set:
            guard let value = try? PropertyListCodec.decode(Data(rest)).value else { return nil }
            return JournalRecord(kind: .set, key: key, value: value)
        case .setObject:
            guard let value = try? PropertyListCodec.decode(wrap(object: rest)).value else { return nil }
            return JournalRecord(kind: .set, key: key, value: value)
        case .remove, .clear:
            return JournalRecord(kind: kind, key: key, value: nil)
        case .origin:
            return JournalRecord(kind: .origin, key: key, value: nil, originCode: payload[1])
        }
    }
}

/// CRC-32 (IEEE 802.3, as zlib computes it).
package enum CRC32 {
    /// Eight tables of 256 (slicing by 8): `tables[k][b]` is the CRC of byte `b` followed by `k`
    /// zero bytes, so eight bytes are folded in with eight lookups and no loop-carried shift.
    private static let tables: [UInt32] = {
        var tables = [UInt32](repeating: 0, count: 8 * 256)
        for index in 0..<256 {
            var value = UInt32(index)
            for _ in 0..<8 { value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
            tables[index] = value
        }
        for index in 0..<256 {
            for slice in 1..<8 {
                let previous = tables[(slice - 1) * 256 + index]
                tables[slice * 256 + index] = tables[Int(previous & 0xFF)] ^ (previous >> 8)
            }
        }
        return tables
    }()

    /// The CRC-32 (IEEE 802.3, as zlib's) of `bytes`: eight bytes a step, the rest one at a time.
    package static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        guard let base = bytes.baseAddress else { return 0 }
        let count = bytes.count
        tables.withUnsafeBufferPointer { table in
            var offset = 0
            while offset + 8 <= count {
                let word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
                let low = UInt32(truncatingIfNeeded: word) ^ crc
                let high = UInt32(truncatingIfNeeded: word >> 32)
                crc =
                    table[7 * 256 + Int(low & 0xFF)] ^ table[6 * 256 + Int((low >> 8) & 0xFF)]
                    ^ table[5 * 256 + Int((low >> 16) & 0xFF)] ^ table[4 * 256 + Int(low >> 24)]
                    ^ table[3 * 256 + Int(high & 0xFF)] ^ table[2 * 256 + Int((high >> 8) & 0xFF)]
                    ^ table[256 + Int((high >> 16) & 0xFF)] ^ table[Int(high >> 24)]
                offset += 8
            }
            while offset < count {
                let byte = base.load(fromByteOffset: offset, as: UInt8.self)
                crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8)
                offset += 1
            }
        }
        return ~crc
    }
}
