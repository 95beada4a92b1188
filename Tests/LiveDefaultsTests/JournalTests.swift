import Foundation
import LiveDefaultsPropertyList
import TestSupport
import Testing

@testable import LiveDefaults

/// The journal's format, its replay and its fallbacks (docs/design.md, "The journal").
@Suite(.serialized) struct JournalTests {
    static let suite = "com.example.journal"

    static func location(_ directory: borrowing TemporaryDirectory) throws -> SuiteLocation {
        try SuiteLocation(suiteName: suite, directory: directory.path)
    }

    /// A journal left by a process that died: made here, then closed with its records unreleased
    /// (closing lets go of its lock, as death does).
    static func deadJournal(
        _ directory: borrowing TemporaryDirectory, _ changes: [(String, PropertyListValue?)]
    ) throws -> String {
        let journal = try SuiteJournal(suitePath: try location(directory).path)
        for (key, value) in changes {
            #expect(journal.append(value == nil ? .remove : .set, key: key, value: value) == nil)
        }
        return journal.path
    }

    static func journalBytes(_ path: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// The journal's records as written, and where the last one starts and ends.
    static func recordBounds(_ bytes: [UInt8]) -> [Range<Int>] {
        var bounds: [Range<Int>] = []
        var offset = JournalFormat.headerSize
        while offset + 8 <= bytes.count {
            let count = Int(bytes[offset]) | Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2]) << 16
            if count == 0 { break }
            let size = (JournalFormat.recordHeaderSize + count + 7) & ~7
            bounds.append(offset..<(offset + JournalFormat.recordHeaderSize + count))
            offset += size
        }
        return bounds
    }

    static func read(_ bytes: some Collection<UInt8>) -> JournalFormat.Contents {
        Array(bytes).withUnsafeBytes { JournalFormat.read($0) }
    }

    @Test func aJournalCutAnywhereInItsLastRecordGivesTheRecordsBefore() throws {
        let directory = try TemporaryDirectory()
        let path = try Self.deadJournal(
            directory,
            [("a", .integer(1)), ("b", .string("two")), ("a", nil), ("c", .array([.bool(true), .real(2.5)]))])
        let bytes = try Self.journalBytes(path)
        let bounds = Self.recordBounds(bytes)
        #expect(bounds.count == 4)
        let whole = Self.read(bytes)
        #expect(whole.problem == nil)
        #expect(
            whole.records == [
                JournalRecord(kind: .set, key: "a", value: .integer(1)),
                JournalRecord(kind: .set, key: "b", value: .string("two")),
                JournalRecord(kind: .remove, key: "a", value: nil),
                JournalRecord(kind: .set, key: "c", value: .array([.bool(true), .real(2.5)])),
            ])
        let last = try #require(bounds.last)
        for cut in last.lowerBound..<last.upperBound {
            let contents = Self.read(bytes[..<cut])
            #expect(contents.problem == nil, "cut at \(cut): a torn last record is dropped, not reported")
            #expect(contents.records == Array(whole.records.prefix(3)), "cut at \(cut): the complete records apply")
        }
        #expect(Self.read(bytes[..<last.upperBound]).records == whole.records)
    }

    @Test func everyKindOfValueReadsBackAsWritten() throws {
        let directory = try TemporaryDirectory()
        let values: [PropertyListValue] = [
            .bool(true), .bool(false), .integer(0), .integer(255), .integer(256), .integer(65_536),
            .integer(1 << 40), .integer(-1), .integer(.min), .integer(.max), .real(-2.5), .real(.infinity),
            .string(""), .string("short"), .string(String(repeating: "a", count: 15)),
            .string(String(repeating: "b", count: 300)), .string("non-ASCII: é ✓"), .unsignedInteger(.max),
            .float(1.5), .date(Date(timeIntervalSinceReferenceDate: 12.5)), .data(Data([0, 1, 2])),
            .array([.integer(1), .string("x")]), .dictionary(["k": .bool(true)]),
        ]
        let path = try Self.deadJournal(directory, values.enumerated().map { ("key-\($0.offset)", $0.element) })
        let contents = Self.read(try Self.journalBytes(path))
        #expect(contents.problem == nil)
        #expect(contents.records.map(\.value) == values)
        #expect(contents.records.map(\.key) == values.indices.map { "key-\($0)" })
    }

    @Test func aFlippedByteIsCaughtByTheChecksum() throws {
        let directory = try TemporaryDirectory()
        let path = try Self.deadJournal(directory, (0..<5).map { ("key-\($0)", .string("value \($0)")) })
        let bytes = try Self.journalBytes(path)
        let bounds = Self.recordBounds(bytes)
        for (index, record) in bounds.enumerated() {
            // Every byte after the head word: the checksum and the payload.
            for position in (record.lowerBound + 8)..<record.upperBound {
                var flipped = bytes
                flipped[position] ^= UInt8(1 << (position % 8))
                let contents = Self.read(flipped)
                #expect(contents.problem?.contains("checksum") == true, "flip at \(position) is caught")
                #expect(contents.records.count == index, "the records before the bad one still apply")
            }
        }
    }

    @Test func openingTheSuiteReplaysADeadJournalAndRemovesIt() throws {
        let directory = try TemporaryDirectory()
        let location = try Self.location(directory)
        let path = try Self.deadJournal(directory, [("kept", .string("old")), ("gone", .integer(1)), ("gone", nil)])
        let load = FileBackend(location: location, operations: SystemFileOperations()).load()
        #expect(load.error == nil)
        #expect(load.snapshot.values == ["kept": .string("old")])
        #expect(!FileManager.default.fileExists(atPath: path), "the replayed journal is removed")
        // The suite file holds the values, for Foundation and editors.
        let values =
            try PropertyListSerialization.propertyList(
                from: Data(contentsOf: URL(fileURLWithPath: location.path)), format: nil) as? [String: String]
        #expect(values == ["kept": "old"])
    }

    @Test func aJournalWhosePIDIsAnotherLiveProcessButWhoseLockIsFreeIsDead() throws {
        let directory = try TemporaryDirectory()
        let location = try Self.location(directory)
        let path = try Self.deadJournal(directory, [("k", .string("from the dead"))])
        // The writer's PID now belongs to a live, unrelated process (init, PID 1).
        let reused = SuiteJournal.directory(forSuiteFile: location.path) + "/1-12345"
        #expect(rename(path, reused) == 0)
        #expect(kill(1, 0) == 0 || errno == EPERM, "PID 1 is alive")
        let load = FileBackend(location: location, operations: SystemFileOperations()).load()
        #expect(load.snapshot.values == ["k": .string("from the dead")])
        #expect(!FileManager.default.fileExists(atPath: reused))
    }

    @Test func aLiveProcesssJournalIsNotReplayed() throws {
        let directory = try TemporaryDirectory()
        let location = try Self.location(directory)
        let live = try SuiteJournal(suitePath: location.path)
        #expect(live.append(.set, key: "k", value: .string("pending")) == nil)
        let load = FileBackend(location: location, operations: SystemFileOperations()).load()
        #expect(load.snapshot.values.isEmpty, "its lock is held: its writer flushes it")
        #expect(FileManager.default.fileExists(atPath: live.path))
    }

    @Test(arguments: ["checksum", "version"])
    func aCorruptOrNewerJournalIsKeptAsideWithAReport(damage: String) throws {
        let directory = try TemporaryDirectory()
        let location = try Self.location(directory)
        let path = try Self.deadJournal(directory, [("first", .integer(1)), ("second", .integer(2))])
        var bytes = try Self.journalBytes(path)
        let bounds = Self.recordBounds(bytes)
        if damage == "checksum" { bytes[bounds[1].upperBound - 1] ^= 0xFF } else { bytes[8] = 2 }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let reported = Locked<[DefaultsError]>([])
        let root = directory.path
        DefaultsErrorReporting.setHandler { error in
            if error.path?.hasPrefix(root) == true { reported.withLock { $0.append(error) } }
        }
        defer { DefaultsErrorReporting.setHandler(nil) }
        let load = FileBackend(location: location, operations: SystemFileOperations()).load()
        #expect(load.snapshot.values == (damage == "checksum" ? ["first": .integer(1)] : [:]))
        let reports = reported.withLock { $0 }
        #expect(reports.count == 1)
        #expect(reports.first?.code == .corruptFile)
        #expect(reports.first?.message.contains(damage == "checksum" ? "checksum" : "format 2") == true)
        let kept = try #require(reports.first?.path)
        #expect(kept.contains(".journal-corrupt-") && FileManager.default.fileExists(atPath: kept))
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func replayingTwiceIsHarmless() throws {
        let directory = try TemporaryDirectory()
        let location = try Self.location(directory)
        let path = try Self.deadJournal(directory, [("k", .integer(1)), ("j", .integer(2))])
        let copy = try Data(contentsOf: URL(fileURLWithPath: path))
        _ = FileBackend(location: location, operations: SystemFileOperations()).load()
        // A replayer that died after writing the suite file and before removing the journal.
        try copy.write(to: URL(fileURLWithPath: path))
        let load = FileBackend(location: location, operations: SystemFileOperations()).load()
        #expect(load.snapshot.values == ["k": .integer(1), "j": .integer(2)])
    }

    /// A store on `location`'s file with its own journal, as another process has.
    static func store(_ location: SuiteLocation) -> SuiteStore {
        let store = SuiteStore(
            location: location, backend: FileBackend(location: location, operations: SystemFileOperations()))
        _ = store.load()
        return store
    }

    @Test func aDeadWritersChangesCountAsItsFlushAtItsDeath() throws {
        let directory = try TemporaryDirectory()
        let location = try Self.location(directory)
        let first = Self.store(location)
        let second = Self.store(location)
        // The dead process sets k and j, and dies before its flush.
        let dead = try SuiteJournal(suitePath: location.path)
        _ = dead.append(.set, key: "k", value: .string("dead"))
        _ = dead.append(.set, key: "j", value: .string("dead"))
        _ = dead.append(.set, key: "m", value: .string("dead"))
        // Before its death, a live writer wrote m: the dead one's later flush would have won.
        first.set(.string("first, before the death"), forKey: "m")
        try first.flush()
        let deadPath = dead.path
        _ = consume dead  // the process dies (its lock goes)
        // After its death: live writers' changes are later, and win, whoever flushes first.
        first.set(.string("first, after the death"), forKey: "k")
        second.set(.string("second, after the death"), forKey: "j")
        try second.flush()  // replays the dead journal, then writes its own change
        #expect(!FileManager.default.fileExists(atPath: deadPath))
        try first.flush()
        let final = FileBackend(location: location, operations: SystemFileOperations()).load().snapshot.values
        #expect(
            final == [
                "m": .string("dead"), "k": .string("first, after the death"), "j": .string("second, after the death"),
            ])
        #expect(first.values() == final && second.value(forKey: "m") == .string("dead"))
    }

    @Test func aWatchingProcessSeesADeadProcesssWritesOnceTheNextProcessOpensTheSuite() async throws {
        let directory = try TemporaryDirectory()
        let location = try Self.location(directory)
        let watching = try Defaults(suiteName: Self.suite, directory: directory.url, watchesFiles: true)
        watching.set("here", forKey: "other")
        try watching.synchronize()
        _ = try Self.deadJournal(directory, [("k", .string("from the dead"))])
        #expect(watching.string(forKey: "k") == nil, "not before a replay")
        // The next process to open the suite (here, a backend of its own) replays the journal.
        _ = FileBackend(location: location, operations: SystemFileOperations()).load()
        #expect(await eventually { watching.string(forKey: "k") == "from the dead" }, "the watcher delivers it")
        #expect(watching.string(forKey: "other") == "here")
    }

    @Test func aFlushReleasesTheJournalAndKeepsRecordsAppendedDuringIt() throws {
        let directory = try TemporaryDirectory()
        let location = try Self.location(directory)
        let backend = FileBackend(location: location, operations: SystemFileOperations())
        backend.journal(.integer(1), forKey: "written")
        backend.journalMark()
        backend.journal(.integer(2), forKey: "during the write")
        var known = SuiteSnapshot()
        _ = try backend.write(.changes(["written": .init(value: .integer(1), generation: 1)]), over: &known)
        let path = try #require(backend.ownJournalPath)
        let contents = Self.read(try Self.journalBytes(path))
        #expect(contents.records == [JournalRecord(kind: .set, key: "during the write", value: .integer(2))])
        backend.journalMark()
        _ = try backend.write(.changes(["during the write": .init(value: .integer(2), generation: 2)]), over: &known)
        #expect(Self.read(try Self.journalBytes(path)).records.isEmpty, "all released: the journal starts over")
        backend.journal(.integer(3), forKey: "next")
        #expect(Self.read(try Self.journalBytes(path)).records.map(\.key) == ["next"])
    }

    @Test func aJournalThatCannotBeMappedFallsBackWithOneReport() throws {
        let directory = try TemporaryDirectory()
        let location = try Self.location(directory)
        JournalHooks.unmappableDirectories.withLock { _ = $0.insert(directory.path) }
        defer { JournalHooks.unmappableDirectories.withLock { _ = $0.remove(directory.path) } }
        try Self.fallsBackWithOneReport(location, directory.path, mentioning: "map")
    }

    @Test func aJournalThatCannotBeCreatedFallsBackWithOneReport() throws {
        let directory = try TemporaryDirectory()
        let location = try Self.location(directory)
        // Something else holds the journals' place (as a read-only directory refuses it).
        #expect(
            FileManager.default.createFile(
                atPath: SuiteJournal.directory(forSuiteFile: location.path), contents: Data()))
        try Self.fallsBackWithOneReport(location, directory.path, mentioning: "create")
    }

    static func fallsBackWithOneReport(_ location: SuiteLocation, _ directory: String, mentioning: String) throws {
        let reported = Locked<[DefaultsError]>([])
        let done = DispatchSemaphore(value: 0)
        DefaultsErrorReporting.setHandler { error in
            guard error.path?.hasPrefix(directory) == true else { return }
            reported.withLock { $0.append(error) }
            done.signal()
        }
        defer { DefaultsErrorReporting.setHandler(nil) }
        let store = Self.store(location)
        for index in 0..<100 { store.set(.integer(Int64(index)), forKey: "k\(index % 3)") }
        #expect(done.wait(timeout: .now() + 5) == .success, "reported")
        #expect(store.value(forKey: "k0") == .integer(99), "the value stays in memory")
        try store.flush()
        #expect(
            FileBackend(location: location, operations: SystemFileOperations()).load().snapshot.values["k0"]
                == .integer(99))
        let reports = reported.withLock { $0 }
        #expect(reports.count == 1, "\(reports)")
        #expect(
            reports.first?.message.contains(mentioning) == true && reports.first?.path?.contains(".journals") == true)
    }
}
