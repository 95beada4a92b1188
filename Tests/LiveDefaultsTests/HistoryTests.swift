import Foundation
import LiveDefaultsPropertyList
import TestSupport
import Testing

@testable import LiveDefaults

/// The suite's history (docs/design.md, "History"): what a flush records, the log's bounds and
/// torn tail, outside changes, and rollback.
@Suite(.serialized) struct HistoryTests {
    static func open(_ directory: borrowing TemporaryDirectory, watching: Bool = false) throws -> Defaults {
        try Defaults(suiteName: "com.example.history", directory: directory.url, watchesFiles: watching)
    }

    /// Keeps the log of `defaults`' suite within `retention` (its own log's bounds: the process's
    /// ``Defaults/historyRetention`` is shared by the tests running side by side).
    static func setRetention(_ retention: DefaultsHistoryRetention, of defaults: Defaults) throws {
        let backend = try #require(defaults.suite.backend as? FileBackend<SystemFileOperations>)
        backend.historyLog.retentionOverride.withLock { $0 = retention }
    }

    static func logPath(_ directory: borrowing TemporaryDirectory) -> String {
        HistoryLog.path(forSuiteFile: directory.url.path + "/com.example.history.plist")
    }

    @Test func eachFlushRecordsItsChangesWithTheirWriterAndOldValues() throws {
        let directory = try TemporaryDirectory()
        let defaults = try Self.open(directory)
        defaults.set(.integer(12), forKey: "fontSize")
        try defaults.synchronize()
        defaults.set(.integer(14), forKey: "fontSize")
        defaults.set(.string("dark"), forKey: "theme")
        try defaults.synchronize()
        defaults.removeObject(forKey: "theme")
        try defaults.synchronize()
        let entries = try defaults.history()
        #expect(entries.map(\.key) == ["fontSize", "fontSize", "theme", "theme"])
        #expect(entries.map(\.id) == [1, 2, 3, 4])
        #expect(entries[1].oldValue == .integer(12) && entries[1].newValue == .integer(14))
        #expect(entries[3].oldValue == .string("dark") && entries[3].newValue == nil)
        let writer = try #require(entries[0].writer)
        #expect(writer.processID == getpid() && writer.userID == geteuid())
        #expect(writer.machineID == Defaults.Host.current.identifier && !writer.executable.isEmpty)
        #expect(entries.allSatisfy { $0.origin == .program })
        #expect(try defaults.history(forKey: "fontSize", limit: 1).map(\.newValue) == [.integer(14)])
        var info = stat()
        #expect(stat(Self.logPath(directory), &info) == 0 && info.st_mode & 0o777 == 0o600)
    }

    @Test func aReplacedDomainRecordsEachKeyThatDiffersWithItsOldAndNewValue() throws {
        let directory = try TemporaryDirectory()
        let defaults = try Self.open(directory)
        defaults.set(.integer(12), forKey: "fontSize")
        defaults.set(.string("dark"), forKey: "theme")
        try defaults.synchronize()
        try defaults.setPersistentDomain(["fontSize": 14, "language": "fr"], forName: "com.example.history")
        try defaults.synchronize()
        let replaced = try defaults.history().dropFirst(2)
        #expect(replaced.map(\.key) == ["fontSize", "language", "theme"])
        #expect(replaced.map(\.oldValue) == [.integer(12), nil, .string("dark")])
        #expect(replaced.map(\.newValue) == [.integer(14), .string("fr"), nil])
    }

    @Test func theRetentionBoundsHold() throws {
        let directory = try TemporaryDirectory()
        let defaults = try Self.open(directory)
        try Self.setRetention(DefaultsHistoryRetention(maxEntries: 40, maxBytes: 1 << 20), of: defaults)
        for round in 0..<120 {
            defaults.set(.integer(Int64(round)), forKey: "counter")
            try defaults.synchronize()
        }
        let entries = try defaults.history()
        #expect(entries.count >= 40 && entries.count <= 50, "\(entries.count)")
        #expect(entries.last?.newValue == .integer(119) && entries.last?.id == 120)
        #expect(zip(entries, entries.dropFirst()).allSatisfy { $0.id + 1 == $1.id })
        // By bytes: entries of 2 KiB each, at most 16 KiB kept (a quarter over before pruning).
        try Self.setRetention(DefaultsHistoryRetention(maxEntries: 10_000, maxBytes: 16 * 1024), of: defaults)
        for round in 0..<60 {
            defaults.set(.string(String(repeating: "x", count: 1000) + "\(round)"), forKey: "text")
            try defaults.synchronize()
        }
        var info = stat()
        #expect(stat(Self.logPath(directory), &info) == 0 && info.st_size <= 16 * 1024 * 5 / 4 + 4096)
        #expect(try defaults.history(forKey: "text").last?.newValue?.stringValue?.hasSuffix("59") == true)
    }

    /// The log stays open between flushes (docs/design.md, "History: the log"): two appenders of
    /// one log, as two processes hold it, each see the other's records and the file the other's
    /// prune renamed over the log.
    @Test func twoWritersThatKeepTheLogOpenSeeEachOthersAppendsAndPrunes() throws {
        let directory = try TemporaryDirectory()
        let suitePath = directory.url.path + "/com.example.history.plist"
        let logs = [HistoryLog(suitePath: suitePath, suite: "s"), HistoryLog(suitePath: suitePath, suite: "s")]
        let retention = DefaultsHistoryRetention(maxEntries: 8, maxBytes: 1 << 20)
        // How often the log's path named a new file (a prune); a freed inode may be reused later.
        var previous: UInt64 = 0
        var replacements = 0
        for round in 0..<40 {
            let appender = try #require(logs[round % 2].openForAppending())
            let change = HistoryChange(
                key: "n", oldValue: round == 0 ? nil : .integer(Int64(round - 1)), newValue: .integer(Int64(round)),
                origin: .program)
            appender.append(
                [HistoryBatch(time: Int64(round), writer: HistoryIdentity.current, marker: nil, changes: [change])],
                retention: retention)
            var info = stat()
            #expect(stat(logs[0].path, &info) == 0)
            if previous != 0, UInt64(info.st_ino) != previous { replacements += 1 }
            previous = UInt64(info.st_ino)
        }
        #expect(replacements >= 2, "the log was not pruned by both writers")
        let entries = logs[0].read().entries(suite: "s")
        #expect(entries.count >= 8 && entries.count <= 10, "\(entries.count)")
        #expect(entries.map(\.id) == Array(UInt64(41 - entries.count)...40))
        #expect(entries.map(\.newValue) == ((40 - entries.count)..<40).map { .integer(Int64($0)) })
    }

    @Test func aLogRemovedBetweenFlushesIsMadeAgain() throws {
        let directory = try TemporaryDirectory()
        let defaults = try Self.open(directory)
        defaults.set(.integer(1), forKey: "n")
        try defaults.synchronize()
        #expect(unlink(Self.logPath(directory)) == 0)
        defaults.set(.integer(2), forKey: "n")
        try defaults.synchronize()
        let entries = try defaults.history()
        #expect(entries.map(\.newValue) == [.integer(2)])
        var info = stat()
        #expect(stat(Self.logPath(directory), &info) == 0 && info.st_mode & 0o777 == 0o600)
    }

    @Test func aTornTailIsIgnoredAndTheNextAppendKeepsEveryWholeEntry() throws {
        let directory = try TemporaryDirectory()
        let defaults = try Self.open(directory)
        for round in 0..<5 {
            defaults.set(.integer(Int64(round)), forKey: "n")
            try defaults.synchronize()
        }
        let path = Self.logPath(directory)
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        // Half of another record: its length says more than is there.
        bytes.append(contentsOf: [200, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7])
        try bytes.write(to: URL(fileURLWithPath: path))
        #expect(try defaults.history().map(\.newValue) == (0..<5).map { PropertyListValue.integer(Int64($0)) })
        defaults.set(.integer(5), forKey: "n")
        try defaults.synchronize()
        #expect(try defaults.history().map(\.newValue) == (0..<6).map { PropertyListValue.integer(Int64($0)) })
    }

    @Test func aRollbackRestoresValueAndTypeAsANewChange() throws {
        let directory = try TemporaryDirectory()
        let defaults = try Self.open(directory)
        defaults.set(.real(1.5), forKey: "ratio")
        defaults.set(.array([.string("a")]), forKey: "list")
        try defaults.synchronize()
        let point = try #require(try defaults.history().last?.id)
        defaults.set(.string("oops"), forKey: "ratio")
        defaults.removeObject(forKey: "list")
        defaults.set(.bool(true), forKey: "added")
        try defaults.synchronize()
        let changed = try defaults.rollBack(to: .entry(point))
        #expect(Set(changed) == ["ratio", "list", "added"])
        #expect(defaults.propertyList(forKey: "ratio") == .real(1.5))
        #expect(defaults.propertyList(forKey: "list") == .array([.string("a")]))
        #expect(defaults.propertyList(forKey: "added") == nil)
        let reread = try Self.open(directory)
        #expect(reread.persistentValues()["ratio"] == .real(1.5))
        let last = try defaults.history().suffix(3)
        #expect(last.allSatisfy { $0.origin == .rollback })
        #expect(last.first { $0.key == "ratio" }?.oldValue == .string("oops"))
        // One key, to a moment.
        defaults.set(.integer(3), forKey: "ratio")
        try defaults.synchronize()
        let before = Date()
        defaults.set(.integer(4), forKey: "ratio")
        try defaults.synchronize()
        try defaults.rollBack("ratio", to: .date(before))
        #expect(defaults.propertyList(forKey: "ratio") == .integer(3))
    }

    @Test func aRollbackPastWhatWasPrunedIsRefusedAndChangesNothing() throws {
        let directory = try TemporaryDirectory()
        let defaults = try Self.open(directory)
        try Self.setRetention(DefaultsHistoryRetention(maxEntries: 4, maxBytes: 1 << 20), of: defaults)
        for round in 0..<12 {
            defaults.set(.integer(Int64(round)), forKey: "n")
            try defaults.synchronize()
        }
        #expect(throws: DefaultsError.self) { try defaults.rollBack(to: .entry(1)) }
        do {
            try defaults.rollBack(to: .entry(1))
        } catch let error as DefaultsError {
            #expect(error.code == .historyUnavailable && error.message.contains("pruned"), "\(error.message)")
        }
        #expect(defaults.propertyList(forKey: "n") == .integer(11))
        #expect(throws: DefaultsError.self) { try defaults.rollBack(to: .entry(99)) }
    }

    @Test func aRollbackTheSchemaRefusesChangesNothing() throws {
        let directory = try TemporaryDirectory()
        let defaults = try Self.open(directory)
        defaults.set(.string("big"), forKey: "size")
        try defaults.synchronize()
        let point = try #require(try defaults.history().last?.id)
        defaults.set(.integer(3), forKey: "size")
        try defaults.synchronize()
        let schema = DefaultsSchema(suite: "com.example.history", entries: [.init(name: "size", type: .integer)])
        #expect(throws: DefaultsError.self) { try defaults.rollBack(to: .entry(point), schema: schema) }
        #expect(defaults.propertyList(forKey: "size") == .integer(3))
    }

    @Test func anOutsideEditIsRecordedOnceWithNoWriter() async throws {
        let directory = try TemporaryDirectory()
        let first = try Self.open(directory, watching: true)
        first.set(.integer(1), forKey: "a")
        first.set(.integer(2), forKey: "b")
        try first.synchronize()
        // A second process's view, watching too (one store per file per process: another directory
        // name for the same files is the same file, so a second watcher here is the same store).
        let path = directory.url.path + "/com.example.history.plist"
        let edited = try PropertyListCodec.encode(
            .dictionary(["a": .integer(1), "b": .integer(5), "c": .bool(true)]), format: .xml)
        try edited.write(to: URL(fileURLWithPath: path + ".new"))
        #expect(rename(path + ".new", path) == 0)
        #expect(await eventually { first.propertyList(forKey: "b") == .integer(5) })
        #expect(await eventually { ((try? first.history()) ?? []).count == 4 })
        let outside = try first.history().suffix(2)
        #expect(outside.map(\.key) == ["b", "c"])
        #expect(outside.allSatisfy { $0.origin == .outside && $0.writer == nil })
        #expect(outside.first?.oldValue == .integer(2) && outside.first?.newValue == .integer(5))
        // The next flush does not record it again.
        first.set(.integer(9), forKey: "a")
        try first.synchronize()
        #expect(try first.history().filter { $0.origin == .outside }.count == 2)
    }
}

@Suite struct HistoryMigrationTests {
    @Test func aMigrationsChangesAreRecordedAsSuchAndTheNextFlushSeesNoOutsideChange() throws {
        let directory = try TemporaryDirectory()
        let defaults = try HistoryTests.open(directory)
        defaults.set(.integer(1), forKey: "old")
        try defaults.synchronize()
        try defaults.migrate(to: 1) { step in step.rename("old", to: "new") }
        defaults.set(.integer(2), forKey: "other")
        try defaults.synchronize()
        let entries = try defaults.history()
        #expect(entries.filter { $0.origin == .outside }.isEmpty, "\(entries.map { "\($0.key) \($0.origin)" })")
        let migrated = entries.filter { $0.origin == .migration }
        #expect(migrated.contains { $0.key == "old" && $0.oldValue == .integer(1) && $0.newValue == nil })
        #expect(migrated.contains { $0.key == "new" && $0.newValue == .integer(1) })
    }
}

@Suite struct HistoryFormatTests {
    /// The CRC-32 of records and journal entries, eight bytes a step: zlib's check value, and the
    /// one-byte-at-a-time table's result for every length and alignment up to 40 bytes.
    @Test func theChecksumIsZlibsCRC32() {
        #expect(Array("123456789".utf8).withUnsafeBytes { CRC32.checksum($0) } == 0xCBF4_3926)
        func reference(_ bytes: ArraySlice<UInt8>) -> UInt32 {
            var crc: UInt32 = 0xFFFF_FFFF
            for byte in bytes {
                crc ^= UInt32(byte)
                for _ in 0..<8 { crc = crc & 1 == 1 ? 0xEDB8_8320 ^ (crc >> 1) : crc >> 1 }
            }
            return ~crc
        }
        let bytes = (0..<48).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        for start in 0..<8 {
            for count in 0...40 {
                let slice = bytes[start..<(start + count)]
                #expect(slice.withUnsafeBytes { CRC32.checksum($0) } == reference(slice), "at \(start), \(count) bytes")
            }
        }
    }

    @Test(arguments: [
        PropertyListValue.bool(true), .bool(false), .integer(0), .integer(200), .integer(70_000),
        .integer(5_000_000_000),
        .integer(-1), .integer(.min), .integer(.max), .real(1.5), .real(-0.0), .string(""), .string("short"),
        .string(String(repeating: "long ", count: 100)), .string("é non-ASCII"),
        .string(String(repeating: "a", count: 14)), .string(String(repeating: "b", count: 15)),
        .string(String(repeating: "c", count: 255)), .string(String(repeating: "d", count: 256)),
        .string(String(repeating: "e", count: 70_000)), .array([.integer(1)]),
        .dictionary(["a": .string("b")]), .data(Data([1, 2])), .date(Date(timeIntervalSince1970: 1_700_000_000)),
    ])
    func aValueReadsBackAsWritten(value: PropertyListValue) throws {
        var bytes = HistoryBytes()
        bytes.value(value)
        let read = bytes.bytes.withUnsafeBytes { buffer -> PropertyListValue?? in
            var reader = HistoryReader(buffer)
            return reader.value()
        }
        #expect(read == .some(value))
        // A value with no references is its one binary-plist object, byte for byte as the binary
        // writer makes it (the fast path for Booleans and integers included).
        if let object = BinaryPropertyListWriter.objectBytes(value) {
            var expected = HistoryBytes()
            expected.u8(2)
            expected.data(object)
            #expect(bytes.bytes == expected.bytes)
        }
    }
}
