import Foundation
import LiveDefaults
import TestSupport
import Testing

@testable import LiveDefaultsCommand

/// `defaults history`, `diff` and `rollback` in process: parsing, points, completion and output.
@Suite struct HistoryCommandTests {
    @Test(
        arguments: [
            (
                ["history", "com.x"],
                DefaultsCommand.history(.named("com.x"), key: nil, since: nil, limit: nil, json: false)
            ),
            (
                ["history", "com.x", "k", "--since", "#7", "--limit", "3", "--json"],
                .history(.named("com.x"), key: "k", since: .entry(7), limit: 3, json: true)
            ),
            (["diff", "-g", "--since", "12"], .diff(.global, since: .entry(12), json: false)),
            (["rollback", "com.x", "--to", "4"], .rollback(.named("com.x"), key: nil, to: .entry(4))),
            (["rollback", "com.x", "k", "--to", "4"], .rollback(.named("com.x"), key: "k", to: .entry(4))),
            (
                ["history", "com.x", "--show-secrets"],
                .showingSecrets(.history(.named("com.x"), key: nil, since: nil, limit: nil, json: false))
            ),
        ] as [([String], DefaultsCommand)])
    func parses(arguments: [String], expected: DefaultsCommand) throws {
        #expect(try DefaultsCommand.parse(arguments) == expected)
    }

    @Test func pointsAreEntriesTimesOrTimesAgo() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(ArgumentCursor.historyPoint("41", now: now) == .entry(41))
        #expect(ArgumentCursor.historyPoint("#41", now: now) == .entry(41))
        #expect(ArgumentCursor.historyPoint("15m", now: now) == .date(now.addingTimeInterval(-900)))
        #expect(ArgumentCursor.historyPoint("2d", now: now) == .date(now.addingTimeInterval(-172_800)))
        #expect(
            ArgumentCursor.historyPoint("2027-01-15T08:00:00Z", now: now)
                == .date(Date(timeIntervalSince1970: 1800000000)))
        #expect(ArgumentCursor.historyPoint("2027-01-15", now: now) != nil)
        #expect(ArgumentCursor.historyPoint("yesterday", now: now) == nil)
        #expect(ArgumentCursor.historyPoint("5w", now: now) == nil)
    }

    @Test(arguments: [
        ["history", "com.x", "--limit", "many"], ["history", "com.x", "--since", "soon"], ["diff", "com.x"],
        ["rollback", "com.x"], ["rollback", "com.x", "a", "b", "--to", "1"], ["history", "com.x", "--bogus"],
    ])
    func badArgumentsAreRefusedNamingTheProblem(arguments: [String]) {
        #expect(throws: CommandLineError.self) { try DefaultsCommand.parse(arguments) }
    }

    @Test func historyDiffAndRollbackInProcess() throws {
        let directory = try TemporaryDirectory()
        let command = InProcessCommand(directory: directory.url)
        #expect(try command.run(["write", "com.x", "size", "-int", "3"]).status == 0)
        #expect(try command.run(["write", "com.x", "size", "-int", "5"]).status == 0)
        let history = try command.run(["history", "com.x"])
        #expect(history.status == 0)
        let lines = history.standardOutput.split(separator: "\n")
        #expect(lines.count == 2 && lines[1].contains("size: 3 → 5"), "\(history.standardOutput)")
        let diff = try command.run(["diff", "com.x", "--since", "1"])
        #expect(diff.standardOutput == "size: 3 → 5\n", "\(diff)")
        let rollback = try command.run(["rollback", "com.x", "size", "--to", "1"])
        #expect(rollback.status == 0 && rollback.standardOutput == "size: 5 → 3\n", "\(rollback)")
        #expect(try command.run(["read", "com.x", "size"]).standardOutput == "3\n")
        let json = try command.run(["history", "com.x", "--json", "--limit", "1"])
        let parsed = try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [[String: Any]]
        #expect(parsed?.first?["origin"] as? String == "rollback" && parsed?.first?["new"] as? Int == 3)
        let pruned = try command.run(["rollback", "com.x", "--to", "99"])
        #expect(pruned.status == 1 && pruned.standardError.contains("no entry 99"), "\(pruned)")
    }

    @Test func completionOffersTheKeysAndTheOptions() throws {
        let directory = try TemporaryDirectory()
        let command = InProcessCommand(directory: directory.url)
        #expect(try command.run(["write", "com.x", "size", "-int", "3"]).status == 0)
        func complete(_ words: String...) throws -> [String] {
            try command.run(["__complete"] + words).standardOutput.split(separator: "\n").map(String.init)
        }
        #expect(try complete("hist") == ["history"])
        #expect(try complete("history", "com.x", "") == ["size", "--since", "--limit", "--json", "--show-secrets"])
        #expect(try complete("rollback", "com.x", "size", "--") == ["--to"])
        #expect(try complete("diff", "com.x", "--s") == ["--since", "--show-secrets"])
        #expect(try complete("history", "com.x", "--since", "").isEmpty)
    }
}
