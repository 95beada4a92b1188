import Foundation
import LiveDefaultsPropertyList
import LiveDefaultsTestHelpers
import TestSupport
import Testing

@testable import LiveDefaults

/// The calls that moved into the one seam for system calls (docs/design.md, "System calls: one
/// seam"): the history log's, the suite file's keep-aside and orphan sweep, and the migrator's,
/// each failed through a store's own operations, which no other test sees.
@Suite struct SystemCallSeamTests {
    /// A store of its own on the suite `name` in `directory`, with failing operations and a manual clock.
    static func makeStore(
        in directory: borrowing TemporaryDirectory, name: String = "com.example.seam", keepsHistoryLogOpen: Bool = true
    ) throws -> (SuiteStore, FailingFileOperations) {
        let location = try SuiteLocation(suiteName: name, directory: directory.path)
        let operations = FailingFileOperations()
        let backend = FileBackend(location: location, operations: operations, keepsHistoryLogOpen: keepsHistoryLogOpen)
        let store = SuiteStore(location: location, backend: backend, clock: ManualStoreClock())
        _ = store.load()
        return (store, operations)
    }

    static func fileValues(_ path: String) throws -> [String: PropertyListValue]? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        guard case .dictionary(let values) = try PropertyListCodec.decode(data).value else { return nil }
        return values
    }

    /// The history log stays open between writes unless its backend says not (a test that remounts
    /// the directory read-only): a property of that backend, not of the process.
    @Test func theHistoryLogIsKeptOpenBetweenWritesOnlyWhenItsBackendSaysSo() throws {
        let keeping = try TemporaryDirectory()
        let closing = try TemporaryDirectory()
        let (kept, _) = try Self.makeStore(in: keeping)
        let (closed, _) = try Self.makeStore(in: closing, keepsHistoryLogOpen: false)
        for store in [kept, closed] {
            store.set(1, forKey: "k")
            try store.flush()
        }
        let keptLog = HistoryLog.path(forSuiteFile: kept.location.path)
        let closedLog = HistoryLog.path(forSuiteFile: closed.location.path)
        #expect(HistoryLog(suitePath: closed.location.path, suite: "s").read().batches.count == 1, "it was written")
        #expect(StoreBackendTests.openDescriptors(of: keptLog).count == 1)
        #expect(StoreBackendTests.openDescriptors(of: closedLog).isEmpty)
    }

    /// The log's appends go through the suite's operations: a log that cannot be written leaves the
    /// suite written and its change unrecorded, and the next write is recorded once it can be.
    @Test func aHistoryLogThatCannotBeWrittenLeavesTheSuiteWritten() throws {
        let directory = try TemporaryDirectory()
        let (store, operations) = try Self.makeStore(in: directory)
        operations.fail(.pwrite, with: EIO)
        store.set("unrecorded", forKey: "a")
        try store.flush()
        #expect(try Self.fileValues(store.location.path) == ["a": "unrecorded"])
        let log = HistoryLog(suitePath: store.location.path, suite: "s")
        #expect(log.read().batches.isEmpty, "no record was written")
        operations.fail(.pwrite, with: nil)
        store.set("recorded", forKey: "b")
        try store.flush()
        #expect(log.read().entries(suite: "s").map(\.key) == ["b"])
    }

    /// Where no hard link can be made, a file that does not parse is kept aside as a copy of its
    /// bytes (another inode than the bad file's) before it is replaced.
    @Test func aBadFileIsCopiedAsideWhenNoHardLinkCanBeMade() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("com.example.seam.plist").path
        let bad = Data("not a property list".utf8)
        try bad.write(to: URL(fileURLWithPath: path))
        var original = stat()
        #expect(stat(path, &original) == 0)
        let (store, operations) = try Self.makeStore(in: directory)
        operations.fail(.link, with: EPERM)
        store.set("new", forKey: "k")
        try store.flush()
        #expect(try Self.fileValues(path) == ["k": "new"])
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        let keptName = try #require(names.first { $0.hasPrefix("com.example.seam.plist.corrupt-") }, "\(names)")
        let kept = directory.file(keptName).path
        #expect(try Data(contentsOf: URL(fileURLWithPath: kept)) == bad)
        var info = stat()
        #expect(stat(kept, &info) == 0)
        #expect(info.st_ino != original.st_ino, "a copy, not a link")
        #expect(info.st_mode & 0o777 == 0o600)
    }

    /// The first write's sweep of dead writers' temporary files asks the suite's operations whether
    /// a writer lives: told none does, it removes a temporary file of a live process's ID too.
    @Test func theOrphanSweepAsksTheSeamWhetherAWriterLives() throws {
        let directory = try TemporaryDirectory()
        let live = directory.file(".com.example.seam.plist.tmp-1-1").path
        try Data("partial".utf8).write(to: URL(fileURLWithPath: live))
        let (store, operations) = try Self.makeStore(in: directory)
        operations.fail(.kill, with: ESRCH)
        store.set(1, forKey: "k")
        try store.flush()
        #expect(!FileManager.default.fileExists(atPath: live))
    }

    /// A migration makes its calls through its backend's operations: a rename that fails fails the
    /// migration and leaves the file as it was.
    @Test func aMigrationWritesThroughItsBackendsOperations() throws {
        let directory = try TemporaryDirectory()
        let (store, operations) = try Self.makeStore(in: directory)
        let defaults = try Defaults(primaryStore: store, watchesFiles: false)
        defaults.set("value", forKey: "old")
        try defaults.synchronize()
        operations.fail(.rename, with: EIO)
        let error = try #require(throws: DefaultsError.self) {
            try defaults.migrate(to: 1) { step in step.rename("old", to: "new") }
        }
        #expect(error.code == .writeFailed)
        #expect(try Self.fileValues(store.location.path) == ["old": "value"])
        operations.fail(.rename, with: nil)
        #expect(try defaults.migrate(to: 1) { step in step.rename("old", to: "new") } == [1])
        #expect(try Self.fileValues(store.location.path)?["new"] == "value")
    }
}
