import Foundation
import LiveDefaultsPropertyList
import LiveDefaultsTestHelpers
import Synchronization
import TestSupport
import Testing

@testable import LiveDefaults

/// Fault tests that need no second process: hostile files, planted names, leaks of the store
/// registry, and eight threads at once. `LIVEDEFAULTS_STRESS=<factor>` runs them longer.
@Suite struct ReliabilityUnitTests {
    /// Bad suite files of the sizes and depths that break naive readers; each must give a clear
    /// error quickly, be kept aside, and leave the store usable.
    static let hostileFiles: [(String, @Sendable () -> Data)] = [
        (
            "50 MB of random bytes",
            {
                var generator = SystemRandomNumberGenerator()
                return Data((0..<(50 << 20) / 8).flatMap { _ in withUnsafeBytes(of: generator.next()) { Array($0) } })
            }
        ),
        (
            "50 MB of XML cut off inside a string",
            {
                Data(
                    ("<?xml version=\"1.0\"?><plist version=\"1.0\"><dict><key>k</key><string>"
                        + String(repeating: "a", count: 50 << 20)).utf8)
            }
        ),
        (
            "50 MB binary file whose trailer points outside it",
            { Data("bplist00".utf8) + Data(repeating: 0xFF, count: 50 << 20) }
        ),
        (
            "XML nested 10,000 deep",
            {
                Data(
                    ("<?xml version=\"1.0\"?><plist version=\"1.0\"><dict><key>k</key>"
                        + String(repeating: "<array>", count: 10_000) + String(repeating: "</array>", count: 10_000)
                        + "</dict></plist>").utf8)
            }
        ),
        ("binary nested 10,000 deep", { HostilePropertyLists.nestedBinaryArrays(depth: 10_000) }),
        (
            "old-style text nested 10,000 deep",
            {
                Data(
                    ("{k = " + String(repeating: "(", count: 10_000) + String(repeating: ")", count: 10_000) + ";}")
                        .utf8)
            }
        ),
    ]

    @Test(arguments: hostileFiles)
    func hostileFileGivesAClearErrorInBoundedTime(name: String, make: @Sendable () -> Data) throws {
        let opening = try SuiteFileTests.expectKeptAsideWithAClearError(make())
        // A hang detector, not a speed target (those live in the benchmark): a debug build takes a
        // second or two for the 50 MB files, the thread sanitizer's build several times that; an
        // unbounded parse (a cycle, an exponential blow-up) would not finish at all.
        #expect(opening < .seconds(60), "opening took \(opening)")
    }

    /// What is not a regular file at the suite's path: reading it would block (a FIFO) or never
    /// end (a device like `/dev/zero`). Refused with `readFailed`, left in place, the store usable
    /// in memory, and nothing written through a link to it. The device is a copy of `/dev/zero`
    /// made in the test's own directory (as root; else a link to a FIFO there), never the
    /// machine's: a write through the link must not be able to replace a device others use.
    @Test(arguments: ["FIFO", "symbolic link to a device", "directory"])
    func whatIsNotARegularFileIsRefusedAndLeftAlone(kind: String) async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("com.example.special.plist").path
        var linked: LinkedSpecialFile?
        switch kind {
        case "FIFO": #expect(mkfifo(path, 0o600) == 0)
        case "directory": try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        default: linked = try LinkedSpecialFile(linkedFrom: path)
        }
        let opened = Locked<Defaults?>(nil)
        let url = directory.url
        let thread = Thread {
            let defaults = try? Defaults(suiteName: "com.example.special", directory: url, watchesFiles: false)
            opened.withLock { $0 = defaults }
        }
        thread.start()
        #expect(await eventually { opened.withLock { $0 != nil } }, "opening returned")
        let defaults = try #require(opened.withLock { $0 })
        let error = try #require(defaults.lastError)
        #expect(error.code == .readFailed)
        #expect(error.message.contains("not a regular file") && error.message.contains(path))
        defaults.set("in memory", forKey: "k")
        #expect(defaults.string(forKey: "k") == "in memory")
        #expect(throws: DefaultsError.self) { try defaults.synchronize() }
        var info = stat()
        #expect(lstat(path, &info) == 0)
        let expectedType = kind == "FIFO" ? S_IFIFO : kind == "directory" ? S_IFDIR : S_IFLNK
        #expect(info.st_mode & S_IFMT == expectedType, "the thing at the path was left as it was")
        linked?.expectUnchanged()
    }

    /// A special file that a symbolic link at `link` names, made beside it in a test's own
    /// directory: as root a character device with `/dev/zero`'s numbers (a copy: the machine's
    /// device is never linked to, so a write through the link could not replace it), else a FIFO.
    struct LinkedSpecialFile {
        let path: String
        private let before: stat

        init(linkedFrom link: String) throws {
            path = link + ".special"
            var zero = stat()
            if getuid() == 0, stat("/dev/zero", &zero) == 0, zero.st_mode & S_IFMT == S_IFCHR {
                #expect(mknod(path, S_IFCHR | 0o666, zero.st_rdev) == 0, "mknod: \(errno)")
            } else {
                #expect(mkfifo(path, 0o600) == 0)
            }
            try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: path)
            var info = stat()
            #expect(lstat(path, &info) == 0)
            before = info
        }

        /// Expects the special file to be the one made: nothing renamed over it.
        func expectUnchanged(sourceLocation: SourceLocation = #_sourceLocation) {
            var after = stat()
            #expect(lstat(path, &after) == 0, sourceLocation: sourceLocation)
            #expect(
                after.st_mode & S_IFMT == before.st_mode & S_IFMT && after.st_ino == before.st_ino,
                "what the link names was left as it was", sourceLocation: sourceLocation)
        }
    }

    /// The replace itself refuses what is not a regular file, whatever a read before it found: a
    /// link to a FIFO (or, as root, to a device) is not renamed over.
    @Test func replaceNeverRenamesOverWhatIsNotARegularFile() throws {
        let directory = try TemporaryDirectory()
        let location = try SuiteLocation(suiteName: "com.example.special", directory: directory.path)
        let linked = try LinkedSpecialFile(linkedFrom: location.path)
        let error = #expect(throws: DefaultsError.self) {
            try SuiteFile(location: location).replace(with: Data("plist".utf8), using: SystemFileOperations())
        }
        #expect(error?.code == .writeFailed)
        #expect(error?.message.contains("not a regular file") == true)
        linked.expectUnchanged()
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
                == ["com.example.special.plist", "com.example.special.plist.special"], "no temporary file was left")
    }

    /// The race that once replaced this machine's `/dev/zero`: the suite file's link goes (a
    /// test's directory removed, a person's `rm`) after a write resolved it to the device and
    /// before the write read it. The write reads the path it resolved, so it finds the device and
    /// refuses it (`readFailed`; had it read the suite file's path, it would have found no file);
    /// the replace's own check is the second guard (the test above).
    @Test func aLinkRemovedDuringAWriteDoesNotLetItReplaceWhatTheLinkNamed() throws {
        let directory = try TemporaryDirectory()
        let location = try SuiteLocation(suiteName: "com.example.special", directory: directory.path)
        let linked = try LinkedSpecialFile(linkedFrom: location.path)
        let operations = LinkRemovingOperations(link: location.path)
        let store = SuiteStore(location: location, backend: FileBackend(location: location, operations: operations))
        _ = store.load()
        let defaults = try Defaults(primaryStore: store, watchesFiles: false)
        defaults.set("in memory", forKey: "k")
        operations.isArmed.withLock { $0 = true }
        let error = #expect(throws: DefaultsError.self) { try defaults.synchronize() }
        #expect(error?.code == .readFailed)
        #expect(error?.message.contains("not a regular file") == true)
        #expect(operations.isArmed.withLock { !$0 }, "the link was removed during the write")
        linked.expectUnchanged()
    }

    /// The same race for a migration, which writes under the same lock: with the suite file's
    /// link gone after the lock resolved it, the migration still reads the file it replaces, so
    /// the keys it does not touch are kept.
    @Test func aLinkRemovedDuringAMigrationKeepsTheKeysOfTheFileItReplaces() throws {
        let directory = try TemporaryDirectory()
        let location = try SuiteLocation(suiteName: "com.example.migrated", directory: directory.path)
        let real = directory.file("real.plist").path
        try PropertyListCodec.encode(.dictionary(["kept": "yes", "old": 1]), format: .binary)
            .write(to: URL(fileURLWithPath: real))
        try FileManager.default.createSymbolicLink(atPath: location.path, withDestinationPath: real)
        let operations = LinkRemovingOperations(link: location.path)
        operations.isArmed.withLock { $0 = true }
        let ran = try FileMigrator(file: SuiteFile(location: location), operations: operations)
            .migrate(to: 1, willWrite: {}) { step in step.rename("old", to: "new") }
        #expect(ran == [1])
        #expect(operations.isArmed.withLock { !$0 }, "the link was removed during the migration")
        let values = try PropertyListCodec.decode(Data(contentsOf: URL(fileURLWithPath: real))).value
        guard case .dictionary(let stored) = values else {
            Issue.record("not a dictionary: \(values)")
            return
        }
        #expect(stored["kept"] == "yes" && stored["new"] == 1 && stored["old"] == nil, "\(stored)")
    }

    /// Symbolic links and files planted at the names a write's temporary file takes: the write
    /// passes them over (never writing through a link, never removing what it did not create).
    /// The names are planted through the store's own operations, which no other test sees.
    @Test func namesPlantedAtTemporaryFilesAreNeitherFollowedNorFatal() throws {
        let directory = try TemporaryDirectory()
        let location = try SuiteLocation(suiteName: "com.example.planted", directory: directory.path)
        let operations = FailingFileOperations()
        let store = SuiteStore(location: location, backend: FileBackend(location: location, operations: operations))
        #expect(store.load().isEmpty)
        let defaults = try Defaults(primaryStore: store, watchesFiles: false)
        let suitePath = directory.file("com.example.planted.plist").path
        let victim = directory.file("victim")
        try Data("victim".utf8).write(to: victim)
        let planted = (0..<3).map { directory.file(".com.example.planted.plist.tmp-planted-\($0)").path }
        try FileManager.default.createSymbolicLink(atPath: planted[0], withDestinationPath: victim.path)
        try FileManager.default.createSymbolicLink(
            atPath: planted[1], withDestinationPath: directory.file("absent").path)
        try Data("planted".utf8).write(to: URL(fileURLWithPath: planted[2]))
        operations.plantTemporaryNames(planted, beside: suitePath)

        defaults.set("value", forKey: "k")
        try defaults.synchronize()
        #expect(operations.plantedTemporaryNames(beside: suitePath).isEmpty, "every planted name was tried")
        #expect(try PropertyListCodec.decode(Data(contentsOf: URL(fileURLWithPath: suitePath))).value == ["k": "value"])
        #expect(try Data(contentsOf: victim) == Data("victim".utf8), "nothing was written through the link")
        #expect(!FileManager.default.fileExists(atPath: directory.file("absent").path))
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: planted[0]) == victim.path)
        #expect(try Data(contentsOf: URL(fileURLWithPath: planted[2])) == Data("planted".utf8))
    }

    /// A writer that died mid-write leaves its temporary file: the first write of the suite removes it, and
    /// leaves a live writer's.
    @Test func theFirstWriteRemovesDeadWritersTemporaryFilesOnly() throws {
        let directory = try TemporaryDirectory()
        let finished = Process()
        finished.executableURL = URL(fileURLWithPath: "/bin/true")
        try finished.run()
        finished.waitUntilExit()
        let dead = directory.file(".com.example.orphans.plist.tmp-\(finished.processIdentifier)-1").path
        let live = directory.file(".com.example.orphans.plist.tmp-1-1").path
        for path in [dead, live] { try Data("partial".utf8).write(to: URL(fileURLWithPath: path)) }
        let defaults = try Defaults(suiteName: "com.example.orphans", directory: directory.url, watchesFiles: false)
        defaults.set("value", forKey: "k")
        try defaults.synchronize()
        #expect(!FileManager.default.fileExists(atPath: dead))
        #expect(FileManager.default.fileExists(atPath: live))
    }

    /// The store runs on a manual clock: with the real one, the flush the `set` armed could run
    /// between the failed write and the check that it left no file (it did, under TSan in CI).
    @Test func aNameTakenOnEveryAttemptFailsTheWriteAndKeepsTheValue() throws {
        let directory = try TemporaryDirectory()
        let location = try SuiteLocation(suiteName: "com.example.taken", directory: directory.path)
        let clock = ManualStoreClock()
        let operations = FailingFileOperations()
        let store = SuiteStore(
            location: location, backend: FileBackend(location: location, operations: operations), clock: clock)
        #expect(store.load().isEmpty)
        let taken = directory.file("taken").path
        try Data().write(to: URL(fileURLWithPath: taken))
        operations.plantTemporaryNames(
            Array(repeating: taken, count: SuiteFile.temporaryNameAttempts), beside: location.path)
        store.set(.string("kept"), forKey: "k")
        let error = try #require(throws: DefaultsError.self) { try store.flush() }
        #expect(error.code == .writeFailed)
        #expect(store.value(forKey: "k") == .string("kept"))
        #expect(!FileManager.default.fileExists(atPath: location.path))
        #expect(try Data(contentsOf: URL(fileURLWithPath: taken)).isEmpty, "the taken name was left as it was")
        try store.flush()
        #expect(
            try PropertyListCodec.decode(Data(contentsOf: URL(fileURLWithPath: location.path))).value == ["k": "kept"])
    }

    /// The registry of open stores forgets a store once it is gone (it used to keep an entry per
    /// file ever opened: a leak in programs that open many suites).
    ///
    /// A store is gone only once its background flush is over: each `set` arms one on the real
    /// clock 20 ms later, which holds the store while it writes. A test thread kept off the CPU for
    /// those 20 ms between a `set` and the end of its loop iteration (a loaded machine, the thread
    /// sanitizer) leaves the last reference to that flush, which then drops the entry (and has
    /// written the file) only when its write is done: the test waits for that, with a deadline.
    @Test func closedStoresLeaveNoEntryInTheRegistry() async throws {
        let directory = try TemporaryDirectory()
        var locations: [SuiteLocation] = []
        for index in 0..<100 {
            let location = try SuiteLocation(suiteName: "com.example.registry-\(index)", directory: directory.path)
            locations.append(location)
            let store = SuiteStore.open(location, watching: false)
            store.set(.integer(Int64(index)), forKey: "k")
            #expect(SuiteStore.isRegistered(location))
        }
        let forgotten = await eventually { locations.allSatisfy { !SuiteStore.isRegistered($0) } }
        let registered = locations.filter { SuiteStore.isRegistered($0) }.map(\.name)
        #expect(forgotten, "still registered: \(registered)")
        // A store closed with pending changes wrote them (its deinit, or its background flush).
        #expect(
            try PropertyListCodec.decode(Data(contentsOf: URL(fileURLWithPath: locations[99].path))).value == ["k": 99])
    }

    /// Eight threads read, write, observe (directly, on queues, typed), cancel, synchronize and
    /// reload from outside for a few seconds. CI runs this under the thread sanitizer (`.ci/run`).
    @Test func eightThreadsDoingEverythingAtOnce() async throws {
        let directory = try TemporaryDirectory()
        let name = "com.example.threads"
        let first = try Defaults(suiteName: name, directory: directory.url)
        let second = try Defaults(suiteName: name, directory: directory.url)
        let keys = (0..<6).map { "key-\($0)" }
        let lastSeen = Locked<[String: PropertyListValue?]>([:])
        let stable = keys.map { key in
            first.observe(key) { change in lastSeen.withLock { $0[key] = change.newValue } }
        }
        let seconds = 3.0 * Double(Stress.factor)
        let deadline = Date().addingTimeInterval(seconds)
        // Past the deadline the threads go on until they have done 1,000 operations in all (a
        // sanitizer build on a loaded machine does few per second), for at most a minute more.
        let latest = deadline.addingTimeInterval(60)
        let done = Atomic<Int>(0)
        let operations = Locked(0)
        let group = DispatchGroup()
        let path = directory.file(name + ".plist").path
        for thread in 0..<8 {
            group.enter()
            Thread.detachNewThread {
                var generator = SystemRandomNumberGenerator()
                var count = 0
                let queue = DispatchQueue(label: "observer-\(thread)")
                while Date() < deadline || (done.load(ordering: .relaxed) <= 1_000 && Date() < latest) {
                    let defaults = Bool.random(using: &generator) ? first : second
                    let key = keys.randomElement(using: &generator)!
                    switch Int.random(in: 0..<10, using: &generator) {
                    case 0, 1, 2:
                        defaults.set(thread * 1_000_000 + count, forKey: key)
                    case 3:
                        defaults.removeObject(forKey: key)
                    case 4:
                        _ = defaults.integer(forKey: key)
                        _ = defaults.dictionaryRepresentation()
                    case 5:
                        let token = defaults.observe(key, queue: Bool.random() ? queue : nil) { change in
                            _ = defaults.string(forKey: change.key)
                        }
                        defaults.set("transient-\(thread)", forKey: "scratch")
                        token.cancel()
                        token.cancel()
                    case 6:
                        let typed = Defaults.Key<Int>(key, default: -1)
                        var token: ObservationToken? = defaults.observe(typed, options: [.initial, .new]) { _ in }
                        _ = defaults[typed]
                        token = nil
                        _ = token
                    case 7:
                        try? defaults.synchronize()
                    case 8 where thread == 0:
                        // Another program replaces the file: the watcher reloads it.
                        let data = try? PropertyListCodec.encode(
                            ["outside": .integer(Int64(count)), key: "from outside"], format: .binary)
                        try? data?.write(to: URL(fileURLWithPath: path), options: .atomic)
                    default:
                        defaults.register(defaults: ["registered-\(thread)": .integer(Int64(count))])
                    }
                    count += 1
                    done.add(1, ordering: .relaxed)
                }
                operations.withLock { $0 += count }
                group.leave()
            }
        }
        #expect(await wait(for: group, within: seconds + 120))
        let total = operations.withLock { $0 }
        #expect(total > 1_000)
        Attachment.record("8 threads, \(seconds) s: \(total) operations", named: "threads.txt")
        // Writes have stopped: settle (flush and let the watcher's reloads land), then every
        // observer's last value is the current value.
        try first.synchronize()
        try second.synchronize()
        for key in keys {
            let settled = await eventually {
                lastSeen.withLock { $0[key] } == .some(first.propertyList(forKey: key))
                    && first.propertyList(forKey: key) == second.propertyList(forKey: key)
            }
            #expect(settled, "\(key): seen \(String(describing: lastSeen.withLock { $0[key] }))")
        }
        stable.forEach { $0.cancel() }
    }
}

/// The system calls, with the suite file's link removed at the first `stat` once armed: after a
/// write has resolved the link, before it reads the file.
private final class LinkRemovingOperations: FileOperations {
    let link: String
    let isArmed = Locked(false)

    init(link: String) { self.link = link }

    func fault(_ call: SystemCall) -> Int32? {
        if call == .stat,
            isArmed.withLock({ armed in
                defer { armed = false }; return armed
            })
        {
            unlink(link)
        }
        return nil
    }

    func plannedTemporaryName(beside target: String) -> String? { nil }
}
