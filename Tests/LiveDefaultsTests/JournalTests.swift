import Foundation
import LiveDefaultsPropertyList
import LiveDefaultsTestHelpers
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
        let path = try { () throws -> String in
            let journal = try SuiteJournal(suitePath: try location(directory).path)
            for (key, value) in changes {
                #expect(journal.append(value == nil ? .remove : .set, key: key, value: value) == nil)
            }
            return journal.path
        }()
        try #require(waitUntilUnlocked(path), "the journal's lock was freed")
        return path
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

    @Test(arguments: ["/home/u/.config/com.example.plist", "/top.plist", "relative.plist", "/d/é ✓.plist", "a/b"])
    func theJournalsDirectoryIsTheSuiteFilesHiddenSibling(suitePath: String) {
        #expect(
            SuiteJournal.directory(forSuiteFile: suitePath)
                == SuiteFile.directory(of: suitePath) + "/." + SuiteFile.name(of: suitePath) + ".journals")
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
        let token = DefaultsErrorReporting.listen { error in
            if error.path?.hasPrefix(root) == true { reported.withLock { $0.append(error) } }
        }
        defer { token.cancel() }
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
    /// A store that flushes only when the test says: with the real clock, the flush a `set` arms
    /// could run between the test's steps and replay the dead journal out of the order the test
    /// describes (it did, on a loaded machine).
    static func store(_ location: SuiteLocation) -> SuiteStore {
        let store = SuiteStore(
            location: location, backend: FileBackend(location: location, operations: SystemFileOperations()),
            clock: ManualStoreClock())
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
        try #require(waitUntilUnlocked(deadPath), "the journal's lock was freed")
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

    /// A flush lists the journals directory only when it may have changed (docs/design.md, "The
    /// journal"), yet still replays a journal whose writer died since, and one that appeared since.
    @Test func aFlushThatTrustsItsLastListingStillReplaysAWriterThatDiedSince() async throws {
        let directory = try TemporaryDirectory()
        let location = try Self.location(directory)
        let backend = FileBackend(location: location, operations: SystemFileOperations())
        let store = SuiteStore(location: location, backend: backend, clock: ManualStoreClock())
        _ = store.load()
        // Another process's journal, its writer alive.
        let other = try SuiteJournal(suitePath: location.path)
        #expect(other.append(.set, key: "theirs", value: .string("unwritten")) == nil)
        // Flushes until one trusts its listing: the directory's last change is old enough.
        var round: Int64 = 0
        let trusted = await eventually {
            round += 1
            store.set(.integer(round), forKey: "ours")
            #expect(throws: Never.self) { try store.flush() }
            return !backend.journaling.withLock { $0.listing.isStale }
        }
        #expect(trusted, "a listing made after the directory settled is trusted")
        #expect(store.value(forKey: "theirs") == nil, "a live writer's journal is not replayed")
        // The writer dies: its lock goes, and the directory does not change.
        let otherPath = other.path
        _ = consume other
        try #require(waitUntilUnlocked(otherPath), "the journal's lock was freed")
        store.set(.integer(0), forKey: "ours")
        try store.flush()
        #expect(store.value(forKey: "theirs") == .string("unwritten"), "replayed at the next flush")
        #expect(!FileManager.default.fileExists(atPath: otherPath))
        // A journal that appeared since (its writer already dead): the directory changed.
        let newcomer = try Self.deadJournal(directory, [("newcomer", .integer(1))])
        store.set(.integer(1), forKey: "ours")
        try store.flush()
        #expect(store.value(forKey: "newcomer") == .integer(1), "replayed at the next flush")
        #expect(!FileManager.default.fileExists(atPath: newcomer))
        let file = FileBackend(location: location, operations: SystemFileOperations()).load().snapshot.values
        #expect(file == ["ours": .integer(1), "theirs": .string("unwritten"), "newcomer": .integer(1)])
    }

    /// (Appends are made under the change lock, as `SuiteStore` makes them: it orders them.)
    @Test func aFlushReleasesTheJournalAndKeepsRecordsAppendedDuringIt() throws {
        let directory = try TemporaryDirectory()
        let location = try Self.location(directory)
        let backend = FileBackend(location: location, operations: SystemFileOperations())
        ChangeLock.withLock { backend.journal(.integer(1), forKey: "written") }
        backend.journalMark()
        ChangeLock.withLock { backend.journal(.integer(2), forKey: "during the write") }
        var known = SuiteSnapshot()
        _ = try backend.write(.changes(["written": .init(value: .integer(1), generation: 1)]), over: &known)
        let path = try #require(backend.ownJournalPath)
        let contents = Self.read(try Self.journalBytes(path))
        #expect(contents.records == [JournalRecord(kind: .set, key: "during the write", value: .integer(2))])
        backend.journalMark()
        _ = try backend.write(.changes(["during the write": .init(value: .integer(2), generation: 2)]), over: &known)
        #expect(Self.read(try Self.journalBytes(path)).records.isEmpty, "all released: the journal starts over")
        ChangeLock.withLock { backend.journal(.integer(3), forKey: "next") }
        #expect(Self.read(try Self.journalBytes(path)).records.map(\.key) == ["next"])
    }

    /// The first change of a suite whose directory is not there yet (the flush makes it) is
    /// journalled: the journal makes the directory, rather than failing and leaving the suite
    /// without a journal for the rest of the process.
    @Test func theFirstChangeInADirectoryNotYetMadeIsJournalled() throws {
        let directory = try TemporaryDirectory()
        let location = try SuiteLocation(suiteName: Self.suite, directory: directory.path + "/not/yet")
        let backend = FileBackend(location: location, operations: SystemFileOperations())
        ChangeLock.withLock { backend.journal(.integer(1), forKey: "first") }
        let path = try #require(backend.ownJournalPath, "no journal: journaling was disabled")
        #expect(Self.read(try Self.journalBytes(path)).records == [JournalRecord(kind: .set, key: "first", value: 1)])
        var known = SuiteSnapshot()
        backend.journalMark()
        _ = try backend.write(.changes(["first": .init(value: .integer(1), generation: 1)]), over: &known)
        #expect(
            FileBackend(location: location, operations: SystemFileOperations()).load().snapshot.values == ["first": 1])
    }

    /// A way making or growing the journal fails, through the file-operations seam.
    struct Fallback: Sendable, CustomTestStringConvertible {
        var operation: SystemCall
        var code: Int32
        /// Fails when the journal grows past its first chunk, rather than when it is made.
        var whenGrowing: Bool
        /// What the report says.
        var mentioning: String
        var testDescription: String { "\(operation) fails with \(code) when \(whenGrowing ? "growing" : "made")" }
    }

    @Test(arguments: [
        // A read-only directory: the journals' directory cannot be made.
        Fallback(operation: .mkdir, code: EROFS, whenGrowing: false, mentioning: "create the directory of"),
        // A full disk: the first chunk's blocks cannot be reserved, or the next chunk's.
        Fallback(operation: .fallocate, code: ENOSPC, whenGrowing: false, mentioning: "No space left on device"),
        Fallback(operation: .fallocate, code: ENOSPC, whenGrowing: true, mentioning: "grow the journal"),
        // No mapping (a process at its limit of mappings or address space).
        Fallback(operation: .mmap, code: ENOMEM, whenGrowing: false, mentioning: "map the journal"),
        Fallback(operation: .mmap, code: ENOMEM, whenGrowing: true, mentioning: "grow the journal"),
    ])
    func aJournalThatCannotBeMadeOrGrownFallsBackWithOneReport(fallback: Fallback) async throws {
        let directory = try TemporaryDirectory()
        let operations = FailingFileOperations()
        if !fallback.whenGrowing { operations.fail(fallback.operation, with: fallback.code) }
        try await Self.fallsBackWithOneReport(
            try Self.location(directory), operations: operations, mentioning: fallback.mentioning
        ) { store in
            guard fallback.whenGrowing else { return }
            store.set(.string("in the first chunk"), forKey: "before")
            operations.fail(fallback.operation, with: fallback.code)
            // More than a chunk: the journal must grow.
            store.set(.string(String(repeating: "g", count: JournalFormat.chunk + 1)), forKey: "big")
        }
    }

    @Test func aJournalWhosePlaceIsTakenFallsBackWithOneReport() async throws {
        let directory = try TemporaryDirectory()
        let location = try Self.location(directory)
        // A file where the journals' directory goes: the journal cannot be created in it.
        #expect(
            FileManager.default.createFile(
                atPath: SuiteJournal.directory(forSuiteFile: location.path), contents: Data()))
        try await Self.fallsBackWithOneReport(location, operations: SystemFileOperations(), mentioning: "create")
    }

    /// Sets values in a store on `location` (after `prepare`) whose journal cannot be made or grown:
    /// one report naming the journal's path, every value kept in memory, and written at the flush.
    static func fallsBackWithOneReport(
        _ location: SuiteLocation, operations: some FileOperations, mentioning: String,
        prepare: (SuiteStore) -> Void = { _ in }
    ) async throws {
        let journals = SuiteJournal.directory(forSuiteFile: location.path)
        let reported = Locked<[DefaultsError]>([])
        let token = DefaultsErrorReporting.listen { error in
            guard error.path?.hasPrefix(journals + "/") == true || error.path == journals else { return }
            reported.withLock { $0.append(error) }
        }
        defer { token.cancel() }
        // A manual clock: nothing is written before the test flushes.
        let store = SuiteStore(
            location: location, backend: FileBackend(location: location, operations: operations),
            clock: ManualStoreClock())
        _ = store.load()
        prepare(store)
        for index in 0..<100 { store.set(.integer(Int64(index)), forKey: "k\(index % 3)") }
        #expect(await eventually { !reported.withLock(\.isEmpty) }, "reported")
        let expected = store.values()
        #expect(expected["k0"] == .integer(99), "the value stays in memory")
        #expect(!FileManager.default.fileExists(atPath: location.path), "not written before the flush")
        try store.flush()
        #expect(FileBackend(location: location, operations: SystemFileOperations()).load().snapshot.values == expected)
        // Later sets are not journalled and not reported again.
        store.set(.integer(100), forKey: "k0")
        try store.flush()
        #expect(FileBackend(location: location, operations: SystemFileOperations()).load().snapshot.values["k0"] == 100)
        let reports = reported.withLock { $0 }
        #expect(reports.count == 1, "\(reports)")
        let report = try #require(reports.first)
        #expect(report.code == .writeFailed)
        #expect(report.message.contains(mentioning), "\(report.message)")
        let path = try #require(report.path)
        #expect(report.message.contains(path), "the report names the journal's path: \(report.message)")
    }
}
