import Foundation
import LiveDefaultsPropertyList

// A libFuzzer target for the journal's reader and replay (docs/design.md, "The journal"), built
// by Fuzz/run.sh with the library's JournalFormat*.swift in this module. Its corpus starts from
// journals the real writer made (TestHelper journal-seeds): whole, cut short, flipped, other formats.
//
// For every input: reading and replaying never crash; no record whose checksum fails is applied
// (checked against a walk of the bytes here, with a CRC-32 computed bit by bit, not by the
// library's table); a bad checksum is reported; every record that checks is applied when nothing
// is reported; and the records read, written again by the writer's own encoding, read back the same.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: count == 0 ? nil : start, count: count)
    let contents = JournalFormat.read(bytes)
    let walk = Walk(bytes)
    guard contents.records.count <= walk.checkedRecords else {
        fatalError("\(contents.records.count) records read, but only \(walk.checkedRecords) have a matching checksum")
    }
    if walk.foundBadChecksum, contents.problem == nil {
        fatalError("a record whose checksum does not match was not reported")
    }
    if !walk.foundBadChecksum, contents.problem == nil, contents.records.count != walk.checkedRecords {
        fatalError("\(walk.checkedRecords) records check, but \(contents.records.count) were read, with no problem")
    }
    // The replay.
    var values: [String: PropertyListValue] = ["before": .integer(1)]
    var changed: [(key: String, value: PropertyListValue?)] = []
    contents.apply(to: &values, changed: &changed)
    // Written again as the writer writes them, they read back the same.
    if !contents.records.contains(where: { $0.value.map(containsNaN) ?? false }) {
        let again = rewritten(contents.records)
        let back = again.withUnsafeBytes { JournalFormat.read($0) }
        guard back.problem == nil, back.records == contents.records else {
            fatalError("records written again read back as \(back.records) (\(back.problem ?? "no problem"))")
        }
    }
    return 0
}

/// The input walked as the format says (docs/design.md, "The journal"), checking each record's checksum.
struct Walk {
    /// Records at or after the state word's start whose checksum matches, before the first that does not.
    var checkedRecords = 0
    var foundBadChecksum = false

    init(_ bytes: UnsafeRawBufferPointer) {
        func word<T: FixedWidthInteger>(_ offset: Int, _: T.Type) -> T {
            var value: T = 0
            for index in 0..<MemoryLayout<T>.size { value |= T(bytes[offset + index]) << (8 * index) }
            return value
        }
        guard bytes.count >= 32, Array(bytes[0..<8]) == Array("LDJOURNL".utf8), word(8, UInt32.self) == 1 else {
            return
        }
        let generation = word(20, UInt32.self)
        let start = Int(word(16, UInt32.self))
        var offset = 32
        while offset + 16 <= bytes.count {
            let length = Int(word(offset, UInt32.self))
            if length == 0 || word(offset + 4, UInt32.self) != generation { break }
            if offset + 16 + length > bytes.count { break }
            if crc32(bytes[(offset + 12)..<(offset + 16 + length)]) != word(offset + 8, UInt32.self) {
                foundBadChecksum = true
                break
            }
            if offset >= start { checkedRecords += 1 }
            offset += (16 + length + 7) & ~7
        }
    }
}

/// CRC-32 (IEEE), bit by bit.
func crc32(_ bytes: Slice<UnsafeRawBufferPointer>) -> UInt32 {
    var crc: UInt32 = 0xFFFF_FFFF
    for byte in bytes {
        crc ^= UInt32(byte)
        for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
    }
    return ~crc
}

/// A journal holding `records`, encoded as `SuiteJournal.append` encodes them.
func rewritten(_ records: [JournalRecord]) -> [UInt8] {
    var journal = [UInt8](repeating: 0, count: JournalFormat.headerSize)
    journal.withUnsafeMutableBytes { buffer in
        guard let base = buffer.baseAddress else { fatalError("a header has bytes") }
        JournalFormat.writeHeader(base, generation: 7, start: 32)
    }
    for record in records {
        var key = record.key
        var payload: [UInt8]
        if record.kind == .set, let value = record.value, var inline = JournalFormat.InlineObject(value) {
            payload = key.withUTF8 { keyBytes in
                inline.withBytes { prefix, text in
                    var payload = [UInt8](repeating: 0, count: 8 + keyBytes.count + prefix.count + text.count)
                    payload.withUnsafeMutableBytes { destination in
                        guard let base = destination.baseAddress else { fatalError("a payload has bytes") }
                        JournalFormat.writePayload(at: base, kind: .setObject, key: keyBytes, value: prefix, text)
                    }
                    return payload
                }
            }
        } else {
            payload = JournalFormat.payload(record.kind, key: key, value: record.value)
        }
        let offset = journal.count
        journal += [UInt8](repeating: 0, count: JournalFormat.recordSize(payloadCount: payload.count))
        journal.withUnsafeMutableBytes { buffer in
            guard let base = buffer.baseAddress else { fatalError("a record has bytes") }
            let record = base + offset
            (record + JournalFormat.recordHeaderSize).copyMemory(from: payload, byteCount: payload.count)
            JournalFormat.sealRecord(at: record, payloadCount: payload.count, generation: 7)
        }
    }
    return journal
}
