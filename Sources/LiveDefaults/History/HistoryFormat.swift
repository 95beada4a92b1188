import Foundation
import LiveDefaultsPropertyList

/// One change as a flush records it, before it has its number.
package struct HistoryChange: Sendable, Equatable {
    package var key: String
    package var oldValue: PropertyListValue?
    package var newValue: PropertyListValue?
    package var origin: DefaultsHistoryEntry.Origin

    package init(
        key: String, oldValue: PropertyListValue?, newValue: PropertyListValue?, origin: DefaultsHistoryEntry.Origin
    ) {
        self.key = key
        self.oldValue = oldValue
        self.newValue = newValue
        self.origin = origin
    }
}

/// The changes one write made, by one writer: one record of the log (docs/design.md, "History:
/// the log").
package struct HistoryBatch: Sendable, Equatable {
    /// When, in nanoseconds since 1970.
    package var time: Int64
    /// Who; nil for an outside change.
    package var writer: DefaultsHistoryEntry.Writer?
    /// The suite file as this write left it (nil: not known): the next writer that finds another
    /// file there knows someone outside LiveDefaults changed it.
    package var marker: FileIdentity?
    package var changes: [HistoryChange]
    /// The number of the first change (set when appended).
    package var firstSequence: UInt64 = 0

    package init(
        time: Int64, writer: DefaultsHistoryEntry.Writer?, marker: FileIdentity?, changes: [HistoryChange]
    ) {
        self.time = time
        self.writer = writer
        self.marker = marker
        self.changes = changes
    }

    static func now() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }
}

/// Little-endian encoding of the history's records and the journal's writer block.
struct HistoryBytes {
    var bytes: [UInt8] = []

    /// Zeros to grow `bytes` by with one copy (``span(_:_:)``).
    static let zeros = [UInt8](repeating: 0, count: 128)

    mutating func u8(_ value: UInt8) { bytes.append(value) }
    // A number's bytes as one copy of its little-endian form (docs/design.md, "History: the log",
    // cost): byte by byte was eight appends for a `u64`, each with its capacity check.
    mutating func u32(_ value: UInt32) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }
    mutating func u64(_ value: UInt64) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }
    mutating func i64(_ value: Int64) { u64(UInt64(bitPattern: value)) }
    mutating func string(_ value: String) {
        var value = value
        value.withUTF8 { text in
            u32(UInt32(text.count))
            bytes.append(contentsOf: UnsafeRawBufferPointer(text))
        }
    }
    mutating func data(_ value: [UInt8]) {
        u32(UInt32(value.count))
        bytes.append(contentsOf: value)
    }

    /// Appends `count` (at most 128) zero bytes and lets `fill` store fixed fields into them: a
    /// record's or a header's fixed part as one span, not a field at a time.
    mutating func span(_ count: Int, _ fill: (UnsafeMutableRawBufferPointer) -> Void) {
        let start = bytes.count
        bytes.append(contentsOf: Self.zeros[0..<count])
        bytes.withUnsafeMutableBytes { fill(UnsafeMutableRawBufferPointer(rebasing: $0[start..<(start + count)])) }
    }

    /// Stores the suite file's identity as five words (zeros for none) at `offset` of `span`.
    static func store(marker identity: FileIdentity?, in span: UnsafeMutableRawBufferPointer, at offset: Int) {
        guard let identity else { return }  // (the span is zeros)
        span.storeBytes(of: identity.device.littleEndian, toByteOffset: offset, as: UInt64.self)
        span.storeBytes(of: identity.inode.littleEndian, toByteOffset: offset + 8, as: UInt64.self)
        span.storeBytes(of: UInt64(bitPattern: identity.size).littleEndian, toByteOffset: offset + 16, as: UInt64.self)
        let modified = Int64(identity.modified.tv_sec) * 1_000_000_000 + Int64(identity.modified.tv_nsec)
        let changed = Int64(identity.changed.tv_sec) * 1_000_000_000 + Int64(identity.changed.tv_nsec)
        span.storeBytes(of: modified.littleEndian, toByteOffset: offset + 24, as: Int64.self)
        span.storeBytes(of: changed.littleEndian, toByteOffset: offset + 32, as: Int64.self)
    }

    mutating func writer(_ writer: DefaultsHistoryEntry.Writer) {
        u32(writer.userID)
        u32(UInt32(bitPattern: writer.processID))
        string(writer.userName)
        string(writer.machineID)
        string(writer.hostName)
        string(writer.executable)
        u32(UInt32(writer.command.count))
        for argument in writer.command { string(argument) }
    }

    mutating func value(_ value: PropertyListValue?) {
        guard let value else {
            u8(0)
            return
        }
        // A value that holds no references as its one binary object (as the journal keeps it), a
        // container as a whole binary property list. A Boolean and an integer are written here as
        // the binary writer writes them, without a buffer of their own.
        switch value {
        case .bool(let flag):
            u8(2)
            u32(1)
            u8(flag ? 0x09 : 0x08)
            return
        case .integer(let number):
            u8(2)
            let size = number < 0 ? 8 : BinaryPropertyListWriter.byteCount(for: UInt64(number))
            u32(UInt32(1 + size))
            u8(number < 0 ? 0x13 : 0x10 | UInt8(truncatingIfNeeded: size.trailingZeroBitCount))
            let bits = UInt64(bitPattern: number)
            for index in stride(from: size - 1, through: 0, by: -1) {
                u8(UInt8(truncatingIfNeeded: bits >> (8 * index)))
            }
            return
        case .string(let text):
            if ascii(text) { return }
        default: break
        }
        if let object = BinaryPropertyListWriter.objectBytes(value) {
            u8(2)
            data(object)
        } else {
            u8(1)
            data(Array(BinaryPropertyListWriter.encode(value)))
        }
    }
}

extension HistoryBytes {
    /// An ASCII string's value as the binary writer writes its one object (marker, length, bytes),
    /// without a buffer of its own; false (nothing written) when the string is not ASCII.
    fileprivate mutating func ascii(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { utf8 -> Bool in
            var high: UInt8 = 0
            for byte in utf8 { high |= byte }
            guard high < 0x80 else { return false }
            let count = utf8.count
            u8(2)
            if count < 15 {
                u32(UInt32(1 + count))
                u8(0x50 | UInt8(truncatingIfNeeded: count))
            } else {
                let size = BinaryPropertyListWriter.byteCount(for: UInt64(count))
                u32(UInt32(2 + size + count))
                u8(0x5F)
                u8(0x10 | UInt8(truncatingIfNeeded: size.trailingZeroBitCount))
                for index in stride(from: size - 1, through: 0, by: -1) {
                    u8(UInt8(truncatingIfNeeded: count >> (8 * index)))
                }
            }
            if count > 0 { bytes.append(contentsOf: UnsafeRawBufferPointer(utf8)) }
            return true
        }
    }
}

/// Reads what ``HistoryBytes`` wrote; nil from any read past the end.
struct HistoryReader {
    let bytes: UnsafeRawBufferPointer
    var offset: Int

    init(_ bytes: UnsafeRawBufferPointer, at offset: Int = 0) {
        self.bytes = bytes
        self.offset = offset
    }

    mutating func u8() -> UInt8? {
        guard offset + 1 <= bytes.count else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }
    mutating func u32() -> UInt32? {
        guard offset + 4 <= bytes.count else { return nil }
        defer { offset += 4 }
        return UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }
    mutating func u64() -> UInt64? {
        guard offset + 8 <= bytes.count else { return nil }
        defer { offset += 8 }
        return UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }
    mutating func i64() -> Int64? { u64().map { Int64(bitPattern: $0) } }
    mutating func slice() -> UnsafeRawBufferPointer? {
        guard let count = u32().map(Int.init), offset + count <= bytes.count else { return nil }
        defer { offset += count }
        return UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)])
    }
    mutating func string() -> String? {
        slice().map { String(decoding: $0, as: UTF8.self) }
    }

    mutating func writer() -> DefaultsHistoryEntry.Writer? {
        guard let user = u32(), let process = u32(), let userName = string(), let machine = string(),
            let host = string(), let executable = string(), let count = u32(), count <= 65_536
        else { return nil }
        var command: [String] = []
        for _ in 0..<count {
            guard let argument = string() else { return nil }
            command.append(argument)
        }
        return DefaultsHistoryEntry.Writer(
            userID: user, userName: userName, machineID: machine, hostName: host,
            processID: Int32(bitPattern: process), executable: executable, command: command)
    }

    /// A value (the outer optional: whether it read; the inner: none).
    mutating func value() -> PropertyListValue?? {
        guard let present = u8() else { return nil }
        if present == 0 { return .some(nil) }
        guard let encoded = slice() else { return nil }
        if present == 2 {
            if let scalar = Self.scalar(object: encoded) { return .some(scalar) }
            guard let value = try? PropertyListCodec.decode(JournalFormat.wrap(object: encoded)).value else {
                return nil
            }
            return .some(value)
        }
        guard let value = try? PropertyListCodec.decode(Data(encoded)).value else { return nil }
        return .some(value)
    }

    /// The common values read straight from one binary-plist object (a Boolean, an integer, a
    /// real, an ASCII string): `defaults history` reads thousands (docs/design.md, "History: the
    /// log"). Nil for anything else: the codec reads it.
    static func scalar(object bytes: UnsafeRawBufferPointer) -> PropertyListValue? {
        guard let marker = bytes.first else { return nil }
        let end = bytes.count
        func number(_ offset: Int, _ size: Int) -> UInt64 {
            var value: UInt64 = 0
            for index in 0..<size { value = value << 8 | UInt64(bytes[offset + index]) }
            return value
        }
        switch marker {
        case 0x08: return .bool(false)
        case 0x09: return .bool(true)
        case 0x10, 0x11, 0x12, 0x13:
            let size = 1 << Int(marker & 0x0F)
            guard 1 + size <= end else { return nil }
            let raw = number(1, size)
            return .integer(size == 8 ? Int64(bitPattern: raw) : Int64(raw))
        case 0x23:
            guard 1 + 8 <= end else { return nil }
            return .real(Double(bitPattern: number(1, 8)))
        case 0x50...0x5F:
            var count = Int(marker & 0x0F)
            var start = 1
            if count == 0x0F {
                guard 2 <= end, bytes[1] & 0xF0 == 0x10 else { return nil }
                let size = 1 << Int(bytes[1] & 0x0F)
                guard 2 + size <= end else { return nil }
                count = Int(number(2, size))
                start = 2 + size
            }
            guard start + count <= end else { return nil }
            return .string(String(decoding: bytes[start..<(start + count)], as: UTF8.self))
        default:
            return nil
        }
    }
}

extension FileIdentity {
    init?(words: [UInt64]) {
        guard words.count == 5, words.contains(where: { $0 != 0 }) else { return nil }
        var info = stat()
        info.st_dev = __dev_t(words[0])
        info.st_ino = __ino_t(words[1])
        info.st_size = Int(Int64(bitPattern: words[2]))
        func time(_ word: UInt64) -> timespec {
            let nanoseconds = Int64(bitPattern: word)
            return timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
        }
        info.st_mtim = time(words[3])
        info.st_ctim = time(words[4])
        self.init(info)
    }

    /// The modification time, in nanoseconds since 1970.
    var modifiedNanoseconds: Int64 { Int64(modified.tv_sec) * 1_000_000_000 + Int64(modified.tv_nsec) }
}

/// The log's file format (docs/design.md, "History: the log"). All integers little-endian.
///
/// Header (96 bytes): magic `LDHISTRY` (8), version (4), reserved (4), the end of the last record
/// whose header update finished (8), entries (8), the next entry's number (8), the suite file's
/// identity as the last record left it (40), reserved (16). The header is a hint: readers trust
/// the records, and a writer adopts whole records past the end it names.
/// Record (8-byte aligned): payload length (4), CRC-32 of the payload (4), payload: the number of
/// the first entry (8), time (8), the suite file's identity after the write (40), a writer flag
/// (1) and the writer, the count of entries (4), then each entry: origin (1), key, old value, new
/// value (each value a flag and a binary property list).
package enum HistoryFormat {
    static let magic: [UInt8] = Array("LDHISTRY".utf8)
    static let version: UInt32 = 1
    static let headerSize = 96

    package struct Header: Equatable {
        var end = HistoryFormat.headerSize
        var entries: UInt64 = 0
        var nextSequence: UInt64 = 1
        var marker: FileIdentity?
    }

    static func encodeHeader(_ header: Header) -> [UInt8] {
        var bytes = HistoryBytes()
        bytes.bytes.reserveCapacity(headerSize)
        encodeHeader(header, into: &bytes)
        return bytes.bytes
    }

    /// Appends the header's 96 bytes to `bytes`.
    static func encodeHeader(_ header: Header, into bytes: inout HistoryBytes) {
        bytes.span(headerSize) { encodeHeader(header, in: $0) }
    }

    /// Stores the header's 96 bytes into `span` (of that size).
    static func encodeHeader(_ header: Header, in span: UnsafeMutableRawBufferPointer) {
        // The magic, "LDHISTRY", as one little-endian word.
        span.storeBytes(of: (0x5952_5453_4948_444C as UInt64).littleEndian, toByteOffset: 0, as: UInt64.self)
        span.storeBytes(of: version.littleEndian, toByteOffset: 8, as: UInt32.self)
        span.storeBytes(of: 0, toByteOffset: 12, as: UInt32.self)
        span.storeBytes(of: UInt64(header.end).littleEndian, toByteOffset: 16, as: UInt64.self)
        span.storeBytes(of: header.entries.littleEndian, toByteOffset: 24, as: UInt64.self)
        span.storeBytes(of: header.nextSequence.littleEndian, toByteOffset: 32, as: UInt64.self)
        for offset in stride(from: 40, to: headerSize, by: 8) {
            span.storeBytes(of: 0, toByteOffset: offset, as: UInt64.self)
        }
        HistoryBytes.store(marker: header.marker, in: span, at: 40)
    }

    /// The header; nil when the bytes are not a header of this format.
    static func decodeHeader(_ bytes: UnsafeRawBufferPointer) -> Header? {
        guard bytes.count >= headerSize, Array(bytes[0..<8]) == magic else { return nil }
        var reader = HistoryReader(bytes, at: 8)
        guard reader.u32() == version, reader.u32() != nil, let end = reader.u64(), let entries = reader.u64(),
            let next = reader.u64()
        else { return nil }
        var words: [UInt64] = []
        for _ in 0..<5 { words.append(reader.u64() ?? 0) }
        return Header(end: Int(end), entries: entries, nextSequence: next, marker: FileIdentity(words: words))
    }

    /// The last writer encoded, and its bytes: a process's records mostly have one writer.
    private static let encodedWriter = Locked<(writer: DefaultsHistoryEntry.Writer, bytes: [UInt8])?>(nil)

    private static func writerBytes(_ writer: DefaultsHistoryEntry.Writer) -> [UInt8] {
        encodedWriter.withLock { cached in
            if let cached, cached.writer == writer { return cached.bytes }
            var bytes = HistoryBytes()
            bytes.writer(writer)
            cached = (writer, bytes.bytes)
            return bytes.bytes
        }
    }

    static func encode(_ batch: HistoryBatch) -> [UInt8] {
        var record = HistoryBytes()
        record.bytes.reserveCapacity(136 + batch.changes.count * 64)
        encode(batch, into: &record)
        return record.bytes
    }

    /// Appends the record of `batch` to `record`: its payload written in place after room for the
    /// length and the CRC, which are filled in after (one buffer, no copy of the payload).
    static func encode(_ batch: HistoryBatch, into record: inout HistoryBytes) {
        encode(batch, numbered: batch.firstSequence, into: &record)
    }

    /// Appends the record of `batch` whose first entry is number `firstSequence`.
    static func encode(_ batch: HistoryBatch, numbered firstSequence: UInt64, into record: inout HistoryBytes) {
        let start = record.bytes.count
        // Length and CRC (filled in last), first entry, time, the suite file, the writer flag.
        record.span(65) { span in
            span.storeBytes(of: firstSequence.littleEndian, toByteOffset: 8, as: UInt64.self)
            span.storeBytes(of: batch.time.littleEndian, toByteOffset: 16, as: Int64.self)
            HistoryBytes.store(marker: batch.marker, in: span, at: 24)
            span.storeBytes(of: batch.writer == nil ? 0 : 1, toByteOffset: 64, as: UInt8.self)
        }
        if let writer = batch.writer { record.bytes.append(contentsOf: writerBytes(writer)) }
        record.u32(UInt32(batch.changes.count))
        for change in batch.changes {
            record.u8(originCode(change.origin))
            record.string(change.key)
            record.value(change.oldValue)
            record.value(change.newValue)
        }
        let length = record.bytes.count - start - 8
        record.bytes.withUnsafeMutableBytes { bytes in
            let checksum = CRC32.checksum(UnsafeRawBufferPointer(rebasing: bytes[(start + 8)...]))
            bytes.storeBytes(of: UInt32(length).littleEndian, toByteOffset: start, as: UInt32.self)
            bytes.storeBytes(of: checksum.littleEndian, toByteOffset: start + 4, as: UInt32.self)
        }
        let padding = (8 - (record.bytes.count - start) % 8) % 8
        if padding > 0 { record.bytes.append(contentsOf: HistoryBytes.zeros[0..<padding]) }
    }

    /// The record at `offset`: the batch and the offset after it; nil when there is no whole record
    /// there (the end, or a torn tail).
    static func decode(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> (batch: HistoryBatch, next: Int)? {
        var head = HistoryReader(bytes, at: offset)
        guard let count = head.u32().map(Int.init), count > 0, let checksum = head.u32(),
            offset + 8 + count <= bytes.count
        else { return nil }
        let payload = UnsafeRawBufferPointer(rebasing: bytes[(offset + 8)..<(offset + 8 + count)])
        guard CRC32.checksum(payload) == checksum else { return nil }
        var reader = HistoryReader(payload)
        guard let first = reader.u64(), let time = reader.i64() else { return nil }
        var words: [UInt64] = []
        for _ in 0..<5 { words.append(reader.u64() ?? 0) }
        guard let hasWriter = reader.u8() else { return nil }
        var writer: DefaultsHistoryEntry.Writer?
        if hasWriter == 1 {
            guard let decoded = reader.writer() else { return nil }
            writer = decoded
        }
        guard let entries = reader.u32() else { return nil }
        var changes: [HistoryChange] = []
        changes.reserveCapacity(Int(min(entries, 100_000)))
        for _ in 0..<entries {
            guard let code = reader.u8(), let key = reader.string(), let old = reader.value(), let new = reader.value()
            else { return nil }
            changes.append(HistoryChange(key: key, oldValue: old, newValue: new, origin: origin(code)))
        }
        var batch = HistoryBatch(time: time, writer: writer, marker: FileIdentity(words: words), changes: changes)
        batch.firstSequence = first
        return (batch, offset + ((8 + count + 7) & ~7))
    }

    static func originCode(_ origin: DefaultsHistoryEntry.Origin) -> UInt8 {
        switch origin {
        case .program: 1
        case .command: 2
        case .migration: 3
        case .rollback: 4
        case .outside: 5
        }
    }

    static func origin(_ code: UInt8) -> DefaultsHistoryEntry.Origin {
        switch code {
        case 2: .command
        case 3: .migration
        case 4: .rollback
        case 5: .outside
        default: .program
        }
    }
}
