import Foundation

/// Which entries of a suite's history to read: one key's or all, from a point on, the newest few
/// (docs/design.md, "History: reading").
package struct HistoryQuery: Sendable, Hashable {
    /// The key; nil for every key.
    package var key: String?
    /// Only entries from this one on (`.entry`), or written at or after this moment (`.date`).
    package var since: DefaultsHistoryPoint?
    /// At most this many, the newest.
    package var limit: Int?

    package init(key: String? = nil, since: DefaultsHistoryPoint? = nil, limit: Int? = nil) {
        self.key = key
        self.since = since
        self.limit = limit
    }

    /// Whether an entry numbered `id`, written at `date`, is after the query's point.
    func admits(id: UInt64, date: @autoclosure () -> Date) -> Bool {
        switch since {
        case nil: true
        case .entry(let first)?: id >= first
        case .date(let moment)?: date() >= moment
        }
    }
}

extension SuiteHistorySource {
    /// The entries `query` selects, oldest first: the whole history, filtered.
    package func entries(_ query: HistoryQuery) throws(DefaultsError) -> [DefaultsHistoryEntry] {
        try readHistory().filtered(query)
    }
}

extension SuiteHistory {
    /// The entries of `key` (all when nil) written at or after `since`, the newest `limit`, oldest
    /// first.
    package func filtered(key: String?, since: Date?, limit: Int?) -> [DefaultsHistoryEntry] {
        filtered(HistoryQuery(key: key, since: since.map { .date($0) }, limit: limit))
    }

    /// The entries `query` selects, oldest first.
    package func filtered(_ query: HistoryQuery) -> [DefaultsHistoryEntry] {
        var found = entries.filter { entry in
            (query.key == nil || entry.key == query.key) && query.admits(id: entry.id, date: entry.date)
        }
        if let limit = query.limit, found.count > limit { found.removeFirst(found.count - max(0, limit)) }
        return found
    }
}

extension HistoryLog {
    /// The entries `query` selects, oldest first, from one read of the log: the records are walked
    /// without decoding, and only the entries selected are decoded (`defaults history` of a
    /// 10,000-entry log: docs/design.md, "History: reading").
    package func entries(_ query: HistoryQuery) -> [DefaultsHistoryEntry] {
        guard let bytes = Self.readWhole(path) else { return [] }
        return bytes.withUnsafeBytes { HistoryIndex(of: $0).entries(query, suite: suite) }
    }

    /// The whole file at `path`, read with `read(2)` into a buffer not zeroed first; nil when it
    /// cannot be opened. (Not mapped: a writer that cuts a torn tail would make reading the mapped
    /// tail a SIGBUS.)
    static func readWhole(_ path: String) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return nil }
        // Room for what an append adds meanwhile; what is read past it is left for the next read.
        let capacity = max(0, Int(info.st_size)) + 64 * 1024
        return [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count in
            count = 0
            guard let start = buffer.baseAddress else { return }
            while count < capacity {
                let read = Glibc.read(descriptor, start + count, capacity - count)
                if read < 0 && errno == EINTR { continue }
                guard read > 0 else { break }
                count += read
            }
        }
    }
}

/// A log's whole records, walked once: where each change's key and values are, nothing decoded.
struct HistoryIndex {
    struct Record {
        var time: Int64
        /// The writer's bytes (empty: none).
        var writer: Range<Int>
    }

    struct Change {
        var record: Int32
        var origin: UInt8
        var id: UInt64
        var key: Range<Int>
        /// Where the old value starts; the new one follows it.
        var values: Int
    }

    let bytes: UnsafeRawBufferPointer
    var records: [Record] = []
    var changes: [Change] = []

    init(of bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
        guard HistoryFormat.decodeHeader(bytes) != nil else { return }
        changes.reserveCapacity(min(bytes.count / 64, 1 << 20))
        var offset = HistoryFormat.headerSize
        while let next = walk(at: offset) { offset = next }
    }

    /// Walks the record at `offset`; the offset after it, nil when there is no whole record there.
    private mutating func walk(at offset: Int) -> Int? {
        var head = HistoryReader(bytes, at: offset)
        guard let count = head.u32().map(Int.init), count > 0, let checksum = head.u32(),
            offset + 8 + count <= bytes.count
        else { return nil }
        let start = offset + 8
        let payload = UnsafeRawBufferPointer(rebasing: bytes[start..<(start + count)])
        guard CRC32.checksum(payload) == checksum else { return nil }
        var reader = HistoryReader(payload)
        guard let first = reader.u64(), let time = reader.i64() else { return nil }
        reader.offset += 40
        guard let hasWriter = reader.u8() else { return nil }
        let writerStart = reader.offset
        if hasWriter == 1 {
            guard reader.u32() != nil, reader.u32() != nil else { return nil }
            for _ in 0..<4 { guard reader.slice() != nil else { return nil } }
            guard let arguments = reader.u32(), arguments <= 65_536 else { return nil }
            for _ in 0..<arguments { guard reader.slice() != nil else { return nil } }
        }
        let writer = (start + writerStart)..<(start + (hasWriter == 1 ? reader.offset : writerStart))
        guard let entries = reader.u32() else { return nil }
        let record = Int32(records.count)
        let kept = changes.count
        for index in 0..<UInt64(entries) {
            guard let origin = reader.u8(), let keyLength = reader.u32().map(Int.init),
                reader.offset + keyLength <= payload.count
            else {
                changes.removeSubrange(kept...)
                return nil
            }
            let key = (start + reader.offset)..<(start + reader.offset + keyLength)
            reader.offset += keyLength
            let values = start + reader.offset
            guard reader.skipValue(), reader.skipValue() else {
                changes.removeSubrange(kept...)
                return nil
            }
            changes.append(Change(record: record, origin: origin, id: first &+ index, key: key, values: values))
        }
        records.append(Record(time: time, writer: writer))
        return offset + ((8 + count + 7) & ~7)
    }

    private func date(_ record: Int32) -> Date {
        Date(timeIntervalSince1970: Double(records[Int(record)].time) / 1e9)
    }

    private func keyIs(_ change: Change, _ key: [UInt8]) -> Bool {
        guard change.key.count == key.count else { return false }
        return key.withUnsafeBytes { wanted in
            guard let base = bytes.baseAddress, let wanted = wanted.baseAddress else { return key.isEmpty }
            return memcmp(base + change.key.lowerBound, wanted, key.count) == 0
        }
    }

    /// Whether two ranges of the log hold the same bytes.
    private func same(_ one: Range<Int>, _ other: Range<Int>) -> Bool {
        guard one.count == other.count else { return false }
        guard let base = bytes.baseAddress else { return one.isEmpty }
        return memcmp(base + one.lowerBound, base + other.lowerBound, one.count) == 0
    }

    /// The entries `query` selects, decoded.
    func entries(_ query: HistoryQuery, suite: String) -> [DefaultsHistoryEntry] {
        let key = query.key.map { Array($0.utf8) }
        var selected: [Int] = []
        for index in changes.indices {
            let change = changes[index]
            if let key, !keyIs(change, key) { continue }
            guard query.admits(id: change.id, date: date(change.record)) else { continue }
            selected.append(index)
        }
        if let limit = query.limit, selected.count > limit { selected.removeFirst(selected.count - max(0, limit)) }
        var entries: [DefaultsHistoryEntry] = []
        entries.reserveCapacity(selected.count)
        // Records mostly repeat their writer: decoded once per run of the same bytes.
        var lastWriter: (bytes: Range<Int>, writer: DefaultsHistoryEntry.Writer?)?
        for index in selected {
            let change = changes[index]
            let record = records[Int(change.record)]
            let writer: DefaultsHistoryEntry.Writer?
            if let last = lastWriter, same(last.bytes, record.writer) {
                writer = last.writer
            } else {
                var reader = HistoryReader(bytes, at: record.writer.lowerBound)
                writer = record.writer.isEmpty ? nil : reader.writer()
                lastWriter = (record.writer, writer)
            }
            var reader = HistoryReader(bytes, at: change.values)
            let old = reader.value() ?? nil
            let new = reader.value() ?? nil
            entries.append(
                DefaultsHistoryEntry(
                    id: change.id, date: date(change.record), suite: suite,
                    key: String(decoding: UnsafeRawBufferPointer(rebasing: bytes[change.key]), as: UTF8.self),
                    oldValue: old, newValue: new, origin: HistoryFormat.origin(change.origin), writer: writer))
        }
        return entries
    }
}

extension HistoryReader {
    /// Steps over a value; false when it is not whole.
    mutating func skipValue() -> Bool {
        guard let present = u8() else { return false }
        return present == 0 || slice() != nil
    }
}
