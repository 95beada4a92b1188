import Foundation
import LiveDefaults
import LiveDefaultsPropertyList
import TestSupport
import Testing

@testable import LiveDefaultsCommand

/// Keys that start with `-` (docs/defaults-command.md, "History"): after `--` for `history` and
/// `rollback`; positional, as on macOS, for `write` and the other verbs, without the key being
/// read as part of the value.
@Suite struct DashKeyCommandTests {
    @Test(
        arguments: [
            (
                ["history", "com.x", "--", "-foo"],
                DefaultsCommand.history(.named("com.x"), key: "-foo", since: nil, limit: nil, json: false)
            ),
            (
                ["history", "com.x", "--json", "--limit", "2", "--", "--json"],
                .history(.named("com.x"), key: "--json", since: nil, limit: 2, json: true)
            ),
            (
                ["history", "com.x", "--", "--show-secrets"],
                .history(.named("com.x"), key: "--show-secrets", since: nil, limit: nil, json: false)
            ),
            (
                ["history", "com.x", "--show-secrets", "--", "-k"],
                .showingSecrets(.history(.named("com.x"), key: "-k", since: nil, limit: nil, json: false))
            ),
            (["rollback", "com.x", "--to", "3", "--", "-foo"], .rollback(.named("com.x"), key: "-foo", to: .entry(3))),
            (["rollback", "com.x", "--", "--to"], nil),
        ] as [([String], DefaultsCommand?)])
    func aKeyAfterTheDoubleDashIsTheKey(arguments: [String], expected: DefaultsCommand?) throws {
        if let expected {
            #expect(try DefaultsCommand.parse(arguments) == expected)
        } else {
            // `--to` after `--` is the key, so the point is missing.
            #expect(throws: CommandLineError.self) { try DefaultsCommand.parse(arguments) }
        }
    }

    @Test(arguments: [
        ["history", "com.x", "-foo"], ["history", "com.x", "k", "--", "-foo"], ["history", "com.x", "--", "a", "b"],
        ["history", "com.x", "--"], ["rollback", "com.x", "-foo", "--to", "1"],
    ])
    func aDashKeyOutsideTheDoubleDashIsRefusedSayingWhereItGoes(arguments: [String]) {
        do {
            _ = try DefaultsCommand.parse(arguments)
            Issue.record("\(arguments) parsed")
        } catch {
            #expect(!error.line.isEmpty)
            if arguments.count == 3, arguments[2] != "--" {
                #expect(error.line.contains("goes after '--'"), "\(error.line)")
            }
        }
    }

    @Test func aDashKeysHistoryAndRollbackInProcess() throws {
        let directory = try TemporaryDirectory()
        let command = InProcessCommand(directory: directory.url)
        #expect(try command.run(["write", "com.x", "-foo", "-int", "1"]).status == 0)
        #expect(try command.run(["write", "com.x", "-foo", "-int", "2"]).status == 0)
        #expect(try command.run(["write", "com.x", "bar", "-int", "-1"]).status == 0)
        let history = try command.run(["history", "com.x", "--", "-foo"])
        let lines = history.standardOutput.split(separator: "\n")
        #expect(lines.count == 2 && lines[1].contains("\t-foo: 1 → 2\t"), "\(history)")
        let rollback = try command.run(["rollback", "com.x", "--to", "1", "--", "-foo"])
        #expect(rollback.status == 0 && rollback.standardOutput == "-foo: 2 → 1\n", "\(rollback)")
        #expect(try command.run(["read", "com.x", "-foo"]).standardOutput == "1\n")
        // A value that starts with `-` is still a value: `-int -1` an integer, a bare `-1` the string.
        #expect(try command.run(["read-type", "com.x", "bar"]).standardOutput == "Type is integer\n")
        #expect(try command.run(["write", "com.x", "-foo", "-1"]).status == 0)
        #expect(try command.run(["read-type", "com.x", "-foo"]).standardOutput == "Type is string\n")
        #expect(try command.run(["read", "com.x", "-foo"]).standardOutput == "-1\n")
    }

    @Test func aKeyNamedLikeAFlagLeavesTheValueBareForTheSchema() throws {
        let schema = DefaultsSchema(
            suite: SchemaFixture.suite, entries: [.init(name: "-string", type: .integer, defaultValue: 1)])
        let fixture = try SchemaFixture(installing: schema)
        // `14` is a bare value, which the schema reads as its integer: the key `-string` is no `-string` flag.
        let written = fixture.run("write", SchemaFixture.suite, "-string", "14")
        #expect(written.status == 0, "\(written)")
        #expect(fixture.run("read-type", SchemaFixture.suite, "-string").standardOutput == "Type is integer\n")
        // The flag after the key still says string, which the schema refuses.
        #expect(fixture.run("write", SchemaFixture.suite, "-string", "-string", "15").status != 0)
    }

    @Test func theWriteValueArgumentsStartAfterTheKey() {
        #expect(DefaultsCommandRunner.valueArguments(ofWrite: ["write", "d", "-string", "14"]) == ["14"])
        #expect(
            DefaultsCommandRunner.valueArguments(ofWrite: ["write", "-app", "A", "k", "-int", "1"]) == ["-int", "1"])
        #expect(DefaultsCommandRunner.valueArguments(ofWrite: ["-host", "h", "write", "d", "k", "v"]) == ["v"])
        #expect(DefaultsCommandRunner.valueArguments(ofWrite: ["-currentHost", "write", "d", "k", "v"]) == ["v"])
    }
}
