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
}
