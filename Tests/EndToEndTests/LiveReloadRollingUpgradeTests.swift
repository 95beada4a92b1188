import Foundation
import LiveDefaults
import LiveDefaultsPropertyList
import TestSupport
import Testing

/// A rename during a rolling upgrade, as the article "Describing your settings" ("Rolling
/// upgrades") tells it: version 1 runs in other processes (TestHelper's `watch-key`, which follows
/// the old name, and `set`, which writes it) while version 2 — this process's store, watched —
/// copies the key, follows the old name with a mirror and writes both; then version 3 renames.
/// (Named `LiveReload…`: its store is in the test process, so CI runs it under the thread sanitizer.)
@Suite struct LiveReloadRollingUpgradeTests {
    static let suite = "com.example.rolling"

    @Test func versionOneNeverLosesItsValueWhileVersionTwoRuns() async throws {
        let directory = try TemporaryDirectory()
        try PropertyListCodec.encode(.dictionary(["maxConnections": 20]), format: .binary)
            .write(to: directory.file("\(Self.suite).plist"))
        let file = directory.file("\(Self.suite).plist")
        func stored() -> [String: PropertyListValue] {
            guard let data = try? Data(contentsOf: file) else { return [:] }
            return (try? PropertyListCodec.decode(data).value.dictionaryValue) ?? [:]
        }

        // Version 1, running: prints every change of the old name it sees.
        let versionOne = try ProductRunner.start(
            "TestHelper", ["watch-key", directory.path, Self.suite, "maxConnections"], keepingInputOpen: true)
        defer { versionOne.terminate() }
        try versionOne.waitForLine(on: .output, where: { $0.hasPrefix("ready") })

        // Version 2 starts beside it.
        let versionTwo = try Defaults(suiteName: Self.suite, directory: directory.url)
        let ran = try versionTwo.migrate(to: 1) { step in
            if step.number == 1 { step.copy("maxConnections", to: "connectionLimit") }
        }
        #expect(ran == [1])
        let mirror = versionTwo.mirror("maxConnections", to: "connectionLimit")
        defer { mirror.cancel() }
        #expect(versionTwo.integer(forKey: "connectionLimit") == 20)
        #expect(stored()["maxConnections"] == 20, "the migration kept the old name")

        // Version 1 writes the old name (another of its processes): version 2 reads it under the new one.
        let set = try ProductRunner.run("TestHelper", ["set", directory.path, Self.suite, "maxConnections", "30"])
        #expect(set.status == 0, "\(set)")
        #expect(await eventually { versionTwo.integer(forKey: "connectionLimit") == 30 })
        try versionOne.waitForLine(on: .output, where: { $0 == "changed 30" })

        // Version 2 writes both names: version 1 sees its change.
        versionTwo.set(40, forKey: "connectionLimit")
        versionTwo.set(40, forKey: "maxConnections")
        try versionTwo.synchronize()
        try versionOne.waitForLine(on: .output, where: { $0 == "changed 40" })
        #expect(stored()["maxConnections"] == 40 && stored()["connectionLimit"] == 40, "\(stored())")

        // Version 1 stops. Version 3 renames while version 2 still runs, and version 2 keeps its value.
        try versionOne.closeInput()
        let versionOneOutput = versionOne.waitForExit()
        let seen = versionOneOutput.standardOutput.split(separator: "\n").filter { $0.hasPrefix("changed") }
        #expect(seen == ["changed 30", "changed 40"], "version 1 saw its key change only to real values: \(seen)")
        #expect(!versionOneOutput.standardOutput.contains("reported"), "\(versionOneOutput)")

        // (Version 3 here is a second `Defaults` of this process, so it shares version 2's store: its
        // migration works on the file under the file's lock, and the store reloads what it wrote.)
        let versionThree = try Defaults(suiteName: Self.suite, directory: directory.url)
        let finished = try versionThree.migrate(to: 2) { step in
            if step.number == 1 { step.copy("maxConnections", to: "connectionLimit") }
            if step.number == 2 { step.rename("maxConnections", to: "connectionLimit") }
        }
        #expect(finished == [2])
        #expect(await eventually { versionTwo.object(forKey: "maxConnections") == nil })
        try versionTwo.synchronize()
        #expect(versionTwo.integer(forKey: "connectionLimit") == 40, "version 2's mirror did not copy the removal")
        #expect(stored()["connectionLimit"] == 40 && stored()["maxConnections"] == nil, "\(stored())")
        #expect(stored()[DefaultsMigration.recordKey] == ["version": 2])
    }
}
