import Foundation
import LiveDefaultsPropertyList
import LiveDefaultsTestHelpers
import TestSupport
import Testing

@testable import LiveDefaults

/// A clock the test advances: the store's background work runs when the test says, on the test's
/// thread, so back-off and coalescing are checked without waiting.
final class ManualStoreClock: StoreClock {
    private struct Entry {
        var due: Duration
        var action: @Sendable () -> Void
    }

    private let state = Locked<(now: Duration, entries: [Entry], requested: [Duration])>((.zero, [], []))

    func run(after delay: Duration, _ action: @escaping @Sendable () -> Void) {
        state.withLock { state in
            state.entries.append(Entry(due: state.now + delay, action: action))
            state.requested.append(delay)
        }
    }

    /// The delays asked for so far, in order.
    var requestedDelays: [Duration] { state.withLock { $0.requested } }

    /// How many actions wait.
    var waiting: Int { state.withLock { $0.entries.count } }

    /// Moves time on by `interval`, running what falls due (outside the clock's lock, in order).
    func advance(by interval: Duration) {
        let end = state.withLock { state in state.now + interval }
        while true {
            let next = state.withLock { state -> Entry? in
                guard let index = state.entries.indices.min(by: { state.entries[$0].due < state.entries[$1].due }),
                    state.entries[index].due <= end
                else { return nil }
                let entry = state.entries.remove(at: index)
                state.now = max(state.now, entry.due)
                return entry
            }
            guard let next else { break }
            next.action()
        }
        state.withLock { $0.now = end }
    }
}

/// Records the changes a store's values go through, as observers of a ``Defaults`` that searches
/// only that store hear them (its effective values are the store's).
final class RecordingListener: Sendable {
    let changes = Locked<[(StoredChange, ChangeOrigin)]>([])
    private let defaults: Defaults
    private let token: ObservationToken

    init(observing store: SuiteStore) throws {
        defaults = try Defaults(primaryStore: store, watchesFiles: false)
        let changes = self.changes
        token = defaults.observeAll { change in
            changes.withLock {
                $0.append((StoredChange(key: change.key, old: change.oldValue, new: change.newValue), change.origin))
            }
        }
    }

    func stop() { token.cancel() }
}

/// The store over its backends: writes that fail (full disk, lock), the back-off on a test clock,
/// and change events that carry the values they changed between.
@Suite struct StoreBackendTests {
    /// A store of its own (not in the registry) on a file in `directory`, with failing operations
    /// and a manual clock.
    static func makeStore(
        in directory: borrowing TemporaryDirectory, name: String = "suite"
    ) throws -> (SuiteStore, FailingFileOperations, ManualStoreClock) {
        let location = try SuiteLocation(suiteName: name, directory: directory.path)
        let operations = FailingFileOperations()
        let clock = ManualStoreClock()
        let store = SuiteStore(
            location: location, backend: FileBackend(location: location, operations: operations), clock: clock)
        #expect(store.load().isEmpty)
        return (store, operations, clock)
    }

    /// The descriptors of this process open on the file at `path` (from /proc/self/fd).
    static func openDescriptors(of path: String) -> [String] {
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return descriptors.filter {
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0)) == path
        }
    }

    static func fileValues(_ path: String) throws -> [String: PropertyListValue]? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        guard case .dictionary(let values) = try PropertyListCodec.decode(data).value else { return nil }
        return values
    }

    /// This process's own flush comes back from the watcher as a rename like any other: the
    /// reload knows it by the file's identity and does not read the file. Opening fails from the
    /// flush on, so a reload that read the file would say `.failed`; another writer's file is read.
    @Test func aReloadAfterThisProcesssOwnFlushDoesNotReadTheFile() throws {
        let directory = try TemporaryDirectory()
        let location = try SuiteLocation(suiteName: "suite", directory: directory.path)
        let operations = FailingFileOperations()
        let backend = FileBackend(location: location, operations: operations)
        let store = SuiteStore(location: location, backend: backend, clock: ManualStoreClock())
        #expect(store.load().isEmpty)
        store.set(1, forKey: "a")
        try store.flush()
        operations.fail(.open, with: EIO)
        let afterOwnFlush = backend.reload(goneForGood: false)
        #expect(Self.describe(afterOwnFlush) == "unchanged", "the own flush is known without reading")
        // Another writer replaces the file: that one is read (and here, its open fails).
        try PropertyListCodec.encode(.dictionary(["a": 2]), format: .binary)
            .write(to: URL(fileURLWithPath: location.path), options: .atomic)
        let afterOtherWriter = backend.reload(goneForGood: false)
        #expect(Self.describe(afterOtherWriter) == "failed")
        operations.fail(.open, with: nil)
        #expect(Self.describe(backend.reload(goneForGood: false)) == "changed")
    }

    /// A file found absent is no change after "may have changed" (the watcher owns the grace), and
    /// an empty suite after "gone for good".
    @Test func anAbsentFileCountsOnlyWhenTheWatcherSaysGoneForGood() throws {
        let directory = try TemporaryDirectory()
        let (store, _, _) = try Self.makeStore(in: directory)
        store.set(1, forKey: "a")
        try store.flush()
        try FileManager.default.removeItem(atPath: store.location.path)
        store.reload(goneForGood: false)
        #expect(store.values() == ["a": 1])
        store.reload(goneForGood: true)
        #expect(store.values() == [:])
    }

    static func describe(_ reload: SuiteReload) -> String {
        switch reload {
        case .unchanged: "unchanged"
        case .changed: "changed"
        case .unreadable: "unreadable"
        case .failed: "failed"
        }
    }

    @Test func aFullDiskKeepsTheValueAndRetriesBackingOff() throws {
        let directory = try TemporaryDirectory()
        let (store, operations, clock) = try Self.makeStore(in: directory)
        let path = store.location.path
        operations.fail(.write, with: ENOSPC)

        store.set("kept", forKey: "k")
        #expect(clock.requestedDelays == [StoreSchedule.flushDelay])
        clock.advance(by: .milliseconds(20))
        #expect(store.lastError?.code == .writeFailed)
        #expect(store.lastError?.message.contains("The disk is full") == true, "\(String(describing: store.lastError))")
        #expect(store.value(forKey: "k") == "kept", "the value stays in memory")
        #expect(store.hasPendingChanges)
        #expect(try Self.fileValues(path) == nil, "nothing was written")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.contains(".tmp-") }
        #expect(leftovers.isEmpty, "the temporary file was removed: \(leftovers)")

        // Each retry waits twice as long.
        clock.advance(by: .milliseconds(250))
        clock.advance(by: .milliseconds(500))
        #expect(
            clock.requestedDelays == [StoreSchedule.flushDelay, .milliseconds(250), .milliseconds(500), .seconds(1)])
        #expect(throws: DefaultsError.self) { try store.flush() }

        // Space is freed: the next retry writes, and the error clears.
        operations.fail(.write, with: nil)
        clock.advance(by: .seconds(1))
        #expect(try Self.fileValues(path) == ["k": "kept"])
        #expect(store.lastError == nil)
        #expect(!store.hasPendingChanges)
        // The back-off is over: the next change waits the usual delay.
        store.set("next", forKey: "k")
        #expect(clock.requestedDelays.last == StoreSchedule.flushDelay)
        clock.advance(by: .milliseconds(20))
        #expect(try Self.fileValues(path) == ["k": "next"])
    }

    @Test func aLockThatCannotBeTakenWritesNothing() throws {
        let directory = try TemporaryDirectory()
        let (store, operations, _) = try Self.makeStore(in: directory)
        operations.fail(.flock, with: ENOLCK)
        store.set(1, forKey: "k")
        #expect(throws: DefaultsError.self) { try store.flush() }
        #expect(store.lastError?.code == .lockFailed)
        #expect(store.lastError?.path?.hasSuffix(".plist.lock") == true)
        #expect(try Self.fileValues(store.location.path) == nil)
        #expect(store.hasPendingChanges)
        // Each failed attempt closed the lock file it opened (the lock's path is this test's own).
        let lockPath = try #require(store.lastError?.path)
        #expect(Self.openDescriptors(of: lockPath).isEmpty, "the lock file's descriptor leaked")
        operations.fail(.flock, with: nil)
        try store.flush()
        #expect(store.lastError == nil)
        #expect(try Self.fileValues(store.location.path) == ["k": 1])
    }

    @Test func aFailedSyncOrRenameLeavesTheOldFileWhole() throws {
        let directory = try TemporaryDirectory()
        let (store, operations, _) = try Self.makeStore(in: directory)
        store.set("old", forKey: "k")
        try store.flush()
        for operation in [SystemCall.fsync, .rename] {
            operations.fail(operation, with: EIO)
            store.set("new", forKey: "k")
            #expect(throws: DefaultsError.self) { try store.flush() }
            #expect(store.lastError?.code == .writeFailed)
            #expect(try Self.fileValues(store.location.path) == ["k": "old"], "\(operation) failed")
            operations.fail(operation, with: nil)
            store.set("old", forKey: "k")
            try store.flush()
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(names.filter { $0.contains(".tmp-") }.isEmpty, "\(names)")
    }

    /// A flush merges this process's changes into the stored values in place; a failed write puts
    /// back what it changed, so the next write starts from the values on disk, not from a half merge.
    @Test func aFailedWriteLeavesTheStoredValuesAsTheyWere() throws {
        let directory = try TemporaryDirectory()
        let (store, operations, _) = try Self.makeStore(in: directory)
        store.set("a", forKey: "kept")
        store.set("b", forKey: "changed")
        store.set("c", forKey: "removed")
        try store.flush()
        store.set("B", forKey: "changed")
        store.set(nil, forKey: "removed")
        store.set("D", forKey: "added")
        operations.fail(.rename, with: EIO)
        #expect(throws: DefaultsError.self) { try store.flush() }
        // Another process changes the file meanwhile: the next write must start from it.
        operations.fail(.rename, with: nil)
        try PropertyListCodec.encode(
            .dictionary(["kept": "a", "changed": "b", "removed": "c", "theirs": "T"]), format: .binary
        ).write(to: URL(fileURLWithPath: store.location.path))
        try store.flush()
        #expect(
            try Self.fileValues(store.location.path) == ["kept": "a", "changed": "B", "added": "D", "theirs": "T"])
        // And with no one else writing, a failed write then a good one writes the same as one good one.
        store.set("E", forKey: "added")
        store.set(nil, forKey: "theirs")
        operations.fail(.fsync, with: EIO)
        #expect(throws: DefaultsError.self) { try store.flush() }
        operations.fail(.fsync, with: nil)
        store.set("F", forKey: "late")
        try store.flush()
        #expect(try Self.fileValues(store.location.path) == ["kept": "a", "changed": "B", "added": "E", "late": "F"])
        #expect(store.values() == ["kept": "a", "changed": "B", "added": "E", "late": "F"])
    }

    @Test func changeEventsCarryTheValuesTheyChangedBetween() throws {
        let directory = try TemporaryDirectory()
        let (store, _, _) = try Self.makeStore(in: directory)
        let listener = try RecordingListener(observing: store)
        store.set(1, forKey: "a")
        store.set(1, forKey: "a")  // no change, no event
        store.set(2, forKey: "a")
        store.set(nil, forKey: "a")
        store.replaceAll(with: ["b": true])
        try store.flush()
        // Another process writes the file; the reload delivers what changed, old and new.
        try PropertyListCodec.encode(.dictionary(["b": false, "c": "x"]), format: .binary)
            .write(to: URL(fileURLWithPath: store.location.path))
        store.reload()
        let recorded = listener.changes.withLock { $0 }
        #expect(
            recorded.map(\.0).prefix(4) == [
                StoredChange(key: "a", old: nil, new: 1), StoredChange(key: "a", old: 1, new: 2),
                StoredChange(key: "a", old: 2, new: nil), StoredChange(key: "b", old: nil, new: true),
            ])
        #expect(recorded.prefix(4).allSatisfy { $0.1 == .local })
        let external = recorded.dropFirst(4)
        #expect(Set(external.map(\.0.key)) == ["b", "c"])
        #expect(external.contains { $0.0 == StoredChange(key: "b", old: true, new: false) && $0.1 == .external })
        #expect(external.contains { $0.0 == StoredChange(key: "c", old: nil, new: "x") && $0.1 == .external })
        listener.stop()
    }

    @Test func concurrentWritersGiveAnUnbrokenChainOfOldAndNewValues() async throws {
        let directory = try TemporaryDirectory()
        let (store, _, _) = try Self.makeStore(in: directory)
        let listener = try RecordingListener(observing: store)
        let group = DispatchGroup()
        for thread in 0..<8 {
            DispatchQueue.global().async(group: group) {
                for index in 0..<500 { store.set(.integer(Int64(thread * 1_000 + index)), forKey: "k") }
            }
        }
        #expect(await wait(for: group, within: 60))
        let recorded = listener.changes.withLock { $0.map(\.0) }
        #expect(recorded.count == 4_000, "every write changed the value")
        var previous: PropertyListValue?
        for change in recorded {
            #expect(change.old == previous, "the chain breaks at \(change)")
            previous = change.new
        }
        #expect(previous == store.value(forKey: "k"))
        listener.stop()
    }

    /// A backend's per-key news at a version older than the values installed since (a fleet watch
    /// batch decided before this process's write, arriving after its answer) is not applied: the
    /// store says so, which asks for a reload, and reads keep the write.
    @Test func perKeyNewsOlderThanTheValuesInstalledIsNotApplied() throws {
        let directory = try TemporaryDirectory()
        let location = try SuiteLocation(suiteName: "suite", directory: directory.path)
        let store = SuiteStore(location: location, backend: MemoryBackend(), clock: ManualStoreClock())
        #expect(store.load().isEmpty)
        let listener = try RecordingListener(observing: store)
        store.set(12, forKey: "size")
        try store.flush()
        store.set("big", forKey: "size")
        try store.flush()
        // The news of the first write (version 1) comes after the second's answer (version 2).
        #expect(!store.applyIfIdle([SuiteKeyChange(key: "size", value: 12)], version: 1))
        #expect(store.value(forKey: "size") == "big")
        #expect(listener.changes.withLock { $0.map(\.0.new) } == [12, "big"])
        // News at the values' version, or later, is applied.
        #expect(store.applyIfIdle([SuiteKeyChange(key: "size", value: "huge")], version: 3))
        #expect(store.value(forKey: "size") == "huge")
        listener.stop()
    }

    @Test func reloadRequestsCoalesceOnTheClock() throws {
        let directory = try TemporaryDirectory()
        let (store, _, clock) = try Self.makeStore(in: directory)
        let listener = try RecordingListener(observing: store)
        try PropertyListCodec.encode(.dictionary(["a": 1]), format: .binary)
            .write(to: URL(fileURLWithPath: store.location.path))
        store.scheduleReload()
        store.scheduleReload()
        store.scheduleReload()
        #expect(clock.waiting == 1)
        clock.advance(by: .zero)
        #expect(listener.changes.withLock { $0.map(\.0) } == [StoredChange(key: "a", old: nil, new: 1)])
        store.scheduleReload()
        #expect(clock.waiting == 1, "a request after the reload started arms another")
        clock.advance(by: .zero)
        #expect(listener.changes.withLock { $0.count } == 1, "the same bytes again are no change")
        listener.stop()
    }
}
