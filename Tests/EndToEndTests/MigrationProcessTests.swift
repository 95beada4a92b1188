import Foundation
import LiveDefaults
import LiveDefaultsPropertyList
import TestSupport
import Testing

/// Migrations across processes (TestHelper's `migrate`: 4 steps, each appending its number to the array "log",
/// renaming, converting, removing and moving keys): raced by 8 processes, and crashed at every step.
@Suite struct MigrationProcessTests {
    static let suite = "com.example.migrating"

    /// The suite before any step: version 1's keys, and a key that step 4 moves in from the old suite.
    static func seed(_ directory: borrowing TemporaryDirectory) throws {
        try PropertyListCodec.encode(.dictionary(["fontsize": "14", "legacy": true, "kept": "yes"]), format: .binary)
            .write(to: directory.file("\(suite).plist"))
        try PropertyListCodec.encode(.dictionary(["theme": "dark", "other": 1]), format: .binary)
            .write(to: directory.file("\(suite).old.plist"))
    }

    static let migrated: [String: PropertyListValue] = [
        "log": [1, 2, 3, 4], "fontSize": 14, "kept": "yes", "theme": "dark",
        DefaultsMigration.recordKey: ["version": 4],
    ]

    static func values(_ directory: borrowing TemporaryDirectory, _ suite: String = suite) throws -> [String:
        PropertyListValue]
    {
        let data = try Data(contentsOf: directory.file("\(suite).plist"))
        return try #require(try PropertyListCodec.decode(data).value.dictionaryValue)
    }

    @Test func eightProcessesRacingRunEachStepExactlyOnce() throws {
        let directory = try TemporaryDirectory()
        try Self.seed(directory)
        let go = directory.file("go").path
        let racers = try (0..<8).map { _ in
            try ProductRunner.start("TestHelper", ["migrate", directory.path, Self.suite, "0", go])
        }
        #expect(FileManager.default.createFile(atPath: go, contents: Data()))
        var ran: [String] = []
        for racer in racers {
            let result = racer.waitForExit()
            #expect(result.status == 0, "\(result)")
            ran += result.standardOutput.split(separator: "\n").map(String.init)
        }
        #expect(ran.sorted() == ["ran 1", "ran 2", "ran 3", "ran 4"], "each step by exactly one process: \(ran)")
        #expect(try Self.values(directory) == Self.migrated)
        #expect(try Self.values(directory, Self.suite + ".old") == ["other": 1], "the moved key left its old suite")
    }

    /// The 8 racers watch and observe the suite: the one that runs the steps sees its changes with the
    /// origin `.migration` (its watcher may reload before `migrate` does), the others with `.external`.
    @Test func eachRacerSeesTheMigrationAsItsOwnOrAsExternal() throws {
        let directory = try TemporaryDirectory()
        try Self.seed(directory)
        let go = directory.file("go").path
        let racers = try (0..<8).map { _ in
            try ProductRunner.start("TestHelper", ["migrate", directory.path, Self.suite, "0", go, "observe"])
        }
        for racer in racers {
            try racer.waitForLine(on: .error, where: { $0 == "ready" }, describedAs: "the racer to observe the suite")
        }
        #expect(FileManager.default.createFile(atPath: go, contents: Data()))
        var outputs: [String] = []
        for racer in racers {
            let result = racer.waitForExit()
            #expect(result.status == 0 && result.standardError == "ready\n", "\(result)")
            outputs.append(result.standardOutput)
        }
        let migrator = "ran 1\nran 2\nran 3\nran 4\norigin migration\n"
        #expect(
            outputs.filter { $0 == migrator }.count == 1, "one racer ran every step, seen as .migration: \(outputs)")
        #expect(outputs.filter { $0 == "origin external\n" }.count == 7, "the others saw .external: \(outputs)")
        #expect(try Self.values(directory) == Self.migrated)
    }

    @Test func anotherProcessWatchingSeesTheMigrationAsExternalChanges() throws {
        let directory = try TemporaryDirectory()
        try Self.seed(directory)
        let watcher = try CommandRunner(
            executable: ProductRunner.productsDirectory.appendingPathComponent("defaults"),
            environment: ["XDG_CONFIG_HOME": directory.path, "HOME": directory.path]
        ).start(["watch", Self.suite, "fontSize", "--json"])
        defer { watcher.terminate() }
        try watcher.waitForLine(on: .error, where: { $0.hasPrefix("Watching") }, describedAs: "the watch to start")
        let go = directory.file("go").path
        #expect(FileManager.default.createFile(atPath: go, contents: Data()))
        let migrated = try ProductRunner.run("TestHelper", ["migrate", directory.path, Self.suite, "0", go])
        #expect(migrated.status == 0, "\(migrated)")
        let line = try watcher.waitForLine(on: .output, where: { $0.contains("fontSize") }, describedAs: "the change")
        // One write: the watcher sees the end state at once, never the string of step 1.
        #expect(line == #"{"domain":"\#(Self.suite)","key":"fontSize","old":null,"new":14,"origin":"external"}"#)
    }

    @Test(arguments: 1...4)
    func aCrashInsideAStepLeavesAStateTheNextStartCompletes(crashAt: Int) throws {
        let directory = try TemporaryDirectory()
        try Self.seed(directory)
        let go = directory.file("go").path
        #expect(FileManager.default.createFile(atPath: go, contents: Data()))
        let crashed = try ProductRunner.run("TestHelper", ["migrate", directory.path, Self.suite, "\(crashAt)", go])
        #expect(crashed.status == 3, "\(crashed)")
        #expect(
            try Self.values(directory) == ["fontsize": "14", "legacy": true, "kept": "yes"],
            "the file is as it was: the steps are written together, after the last")
        let restarted = try ProductRunner.run("TestHelper", ["migrate", directory.path, Self.suite, "0", go])
        #expect(restarted.status == 0, "\(restarted)")
        #expect(
            restarted.standardOutput == (1...4).map { "ran \($0)\n" }.joined(), "\(restarted)")
        #expect(try Self.values(directory) == Self.migrated)
    }
    /// A process that died after a `set` of the old key, before its flush, left its change in its journal
    /// (docs/design.md, "The journal"). That change was made before the migration, so the migration sees
    /// it: the dead journal is replayed under the same lock first, and nothing brings the old key back later.
    @Test func aDeadProcesssSetOfTheOldKeyIsMigratedNotReplayedAfter() throws {
        let directory = try TemporaryDirectory()
        let suite = "com.example.renaming"
        try PropertyListCodec.encode(.dictionary(["fontsize": 12]), format: .binary)
            .write(to: directory.file("\(suite).plist"))
        // Opened before the writer dies, so its own open has no dead journal to replay.
        let defaults = try Defaults(suiteName: suite, directory: directory.url, watchesFiles: false)
        let died = try ProductRunner.run(
            "TestHelper", ["set-and-die", directory.path, suite, "fontsize", "14", "0", "kill"],
            environment: ["SWIFT_BACKTRACE": "enable=no"])
        #expect(died.status != 0, "\(died)")
        let journals = directory.path + "/.\(suite).plist.journals"
        try #require(try Self.values(directory, suite) == ["fontsize": 12], "the set is not in the file")
        try #require(!FileManager.default.contentsOfDirectory(atPath: journals).isEmpty, "but in the journal")

        let ran = try defaults.migrate(to: 1) { step in step.rename("fontsize", to: "fontSize") }
        #expect(ran == [1])
        let migrated: [String: PropertyListValue] = ["fontSize": 14, DefaultsMigration.recordKey: ["version": 1]]
        #expect(try Self.values(directory, suite) == migrated, "the migration renamed the dead process's value")
        #expect(defaults.integer(forKey: "fontSize") == 14)
        #expect(try FileManager.default.contentsOfDirectory(atPath: journals).isEmpty, "the journal was replayed")

        // The next program to open the suite replays whatever journals are left.
        let next = try JournalProcessTests.load(directory, suite)
        #expect(next.snapshot.values == migrated, "the old key does not come back")
    }
}
