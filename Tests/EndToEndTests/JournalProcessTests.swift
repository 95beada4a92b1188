import Foundation
import LiveDefaults
import TestSupport
import Testing

/// A `set` that returned survives the death of its process (docs/design.md, "The journal").
@Suite struct JournalProcessTests {
    /// How a child dies after its `set`.
    enum Death: String, CaseIterable, Sendable {
        case kill, term, fatal, segv
    }

    /// The suite's values as the next LiveDefaults program (or `defaults read`) loads them: dead
    /// journals replayed first.
    static func load(_ directory: borrowing TemporaryDirectory, _ suite: String) throws -> SuiteLoad {
        let location = try SuiteLocation(suiteName: suite, directory: directory.path)
        return FileBackend(location: location, operations: SystemFileOperations()).load()
    }

    @Test(arguments: Death.allCases)
    func aSetSurvivesItsProcessDyingAtAnyMoment(death: Death) async throws {
        // In a quick run, one round at each millisecond of the window (21, each a process of its
        // own); a thousand at LIVEDEFAULTS_STRESS=1.
        let rounds = Stress.scaled(1_000, quick: 21)
        let directory = try TemporaryDirectory()
        let suite = "com.example.death"
        var lost: [Int] = []
        for round in 1...rounds {
            let delay = (round * 1_000) % 21_000  // 0–20 ms after the set, every millisecond
            let arguments = ["set-and-die", directory.path, suite, "counter", "\(round)", "\(delay)", death.rawValue]
            let result = try await onAThreadOfItsOwn {
                try ProductRunner.run("TestHelper", arguments, environment: ["SWIFT_BACKTRACE": "enable=no"])
            }
            #expect(result.status != 0, "the child died (\(result))")
            let load = try Self.load(directory, suite)
            #expect(load.error == nil, "the file parses after the death: \(String(describing: load.error))")
            if load.snapshot.values["counter"] != .integer(Int64(round)) { lost.append(round) }
        }
        #expect(lost.isEmpty, "\(lost.count) of \(rounds) values lost after \(death): rounds \(lost.prefix(20))")
        // The file itself (what Foundation and editors read) holds the last value.
        let bytes = try Data(contentsOf: directory.file(suite + ".plist"))
        let values = try PropertyListSerialization.propertyList(from: bytes, format: nil) as? [String: Any]
        #expect(values?["counter"] as? Int == rounds)
        // Every dead journal was replayed and removed.
        let journals = try FileManager.default.contentsOfDirectory(
            atPath: directory.path + "/." + suite + ".plist.journals")
        #expect(journals.isEmpty, "journals left: \(journals)")
    }

    @Test(arguments: ["read", "export"])
    func theDefaultsCommandShowsADeadProcesssLastSet(verb: String) throws {
        let directory = try TemporaryDirectory()
        let suite = "com.example.command"
        let died = try ProductRunner.run(
            "TestHelper", ["set-and-die", directory.path, suite, "counter", "41", "0", "kill"])
        #expect(died.status != 0)
        let command = CommandRunner(
            executable: ProductRunner.productsDirectory.appendingPathComponent("defaults"),
            environment: ["XDG_CONFIG_HOME": directory.path, "HOME": directory.path])
        let arguments = verb == "read" ? ["read", suite, "counter"] : ["export", suite, "-"]
        let result = try command.run(arguments, standardInput: nil)
        #expect(result.status == 0, "\(result)")
        #expect(result.standardOutput.contains("41"), "\(verb) replays the journal first: \(result.standardOutput)")
    }
}
