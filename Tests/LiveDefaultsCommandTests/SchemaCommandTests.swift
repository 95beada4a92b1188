import Foundation
import LiveDefaults
import LiveDefaultsCommand
import LiveDefaultsPropertyList
import TestSupport
import Testing

/// The `defaults` command with a schema installed: checked writes, the schema's verbs, secrets redacted.
/// Run in process, with the domains in a temporary directory and the schema directories beside it.
struct SchemaFixture: ~Copyable {
    static let suite = "com.example.described"
    let directory: TemporaryDirectory

    init(installing schema: DefaultsSchema? = SchemaFixture.schema) throws {
        let directory = try TemporaryDirectory()
        try FileManager.default.createDirectory(at: directory.file("config"), withIntermediateDirectories: true)
        try schema?.install(into: directory.file("user-schemas"))
        self.directory = directory
    }

    var userSchemas: URL { directory.file("user-schemas") }
    var systemSchemas: URL { directory.file("system-schemas") }

    static let schema = DefaultsSchema(
        suite: suite,
        entries: [
            .init(name: "fontSize", type: .integer, defaultValue: 12, summary: "Text size in points", range: 8...72),
            .init(name: "theme", type: .string, defaultValue: "system", choices: ["light", "dark", "system"]),
            .init(name: "volume", type: .real, defaultValue: 0.5),
            .init(name: "autosave", type: .boolean, defaultValue: true),
            .init(name: "apiToken", type: .string, summary: "Sync token", isSecret: true),
            .init(name: "recent", type: .array, defaultValue: []),
        ])

    func run(_ arguments: String...) -> CommandResult { run(arguments) }

    @discardableResult
    func succeed(_ arguments: String...) -> String { succeed(arguments) }

    func run(_ arguments: [String]) -> CommandResult {
        let domains = CommandDomains(
            directory: directory.file("config"), schemaDirectories: [userSchemas, systemSchemas])
        return runInProcess(arguments, domains: domains)
            ?? CommandResult(status: -1, standardOutput: "", standardError: "")
    }

    @discardableResult
    func succeed(_ arguments: [String]) -> String {
        let result = run(arguments)
        #expect(result.status == 0 && result.standardError.isEmpty, "\(arguments): \(result.standardError)")
        return result.standardOutput
    }

    var file: URL { directory.file("config/\(Self.suite).plist") }

    func values() throws -> [String: PropertyListValue] {
        try #require(try PropertyListCodec.decode(Data(contentsOf: file)).value.dictionaryValue)
    }
}

extension CommandOutcome {
    fileprivate var exitStatus: Int32? { if case .exit(let status) = self { status } else { nil } }
}

@Suite struct SchemaCommandTests {
    static let suite = SchemaFixture.suite

    // MARK: write, checked

    @Test(arguments: [
        (["fontSize", "-string", "big"], "expects an integer, not a string"),
        (["fontSize", "-string", "14"], "expects an integer, not a string"),
        (["fontSize", "big"], "expects an integer, not a string"),
        (["fontSize", "-float", "14.5"], "expects an integer, and 14.5 is not a whole number"),
        (["fontSize", "12.5"], "expects an integer, and 12.5 is not a whole number"),
        (["fontSize", "-string", "12.5"], "expects an integer, not a string (\"12.5\")"),
        (["fontSize", "-int", "100"], "allows only 8 to 72"),
        (["fontSize", "-int", "7"], "allows only 8 to 72"),
        (["theme", "-string", "purple"], "allows only \"light\", \"dark\", \"system\""),
        (["theme", "-int", "3"], "expects a string, not an integer"),
        (["volume", "-string", "loud"], "expects a real, not a string"),
        (["autosave", "-int", "1"], "expects a boolean, not an integer"),
        (["recent", "-dict", "a", "b"], "expects an array, not a dictionary"),
        (["apiToken", "-int", "1234"], "expects a string, not an integer"),
    ])
    func aWriteTheSchemaRefusesExitsOneNamingTheTypeAndLeavesTheFileByteForByte(
        arguments: [String], problem: String
    ) throws {
        let fixture = try SchemaFixture()
        fixture.succeed("write", Self.suite, "fontSize", "-int", "14")
        let before = try Data(contentsOf: fixture.file)
        let result = fixture.run(["write", Self.suite] + arguments)
        #expect(result.status == 1, "\(result)")
        #expect(result.standardError.contains("key \(arguments[0]) of \(Self.suite) \(problem)"), "\(result)")
        #expect(result.standardError.contains(fixture.userSchemas.path), "the message names the schema: \(result)")
        #expect(result.standardError.hasSuffix("Defaults have not been changed.\n"), "\(result)")
        #expect(try Data(contentsOf: fixture.file) == before, "the file is untouched, byte for byte")
    }

    @Test func aSecretValueIsNotQuotedInTheRefusal() throws {
        let fixture = try SchemaFixture()
        let result = fixture.run("write", Self.suite, "apiToken", "-int", "987654")
        #expect(result.status == 1 && !result.standardError.contains("987654"), "\(result)")
    }

    static let conversions: [([String], PropertyListValue)] = [
        (["fontSize", "-int", "14"], .integer(14)),
        (["fontSize", "14"], .integer(14)),
        (["fontSize", "-float", "20"], .integer(20)),
        (["volume", "-int", "1"], .real(1)),
        (["volume", "0.25"], .real(0.25)),
        (["autosave", "no"], .bool(false)),
        (["autosave", "-bool", "YES"], .bool(true)),
        (["theme", "dark"], "dark"),
        (["theme", "-string", "light"], "light"),
        (["recent", "-array", "a", "b"], ["a", "b"]),
        (["unlisted", "-string", "14"], "14"),
    ]

    @Test(arguments: conversions)
    func aWriteIsConvertedWhereMacOSUsersExpectIt(arguments: [String], stored: PropertyListValue) throws {
        let fixture = try SchemaFixture()
        fixture.succeed(["write", Self.suite] + arguments)
        #expect(try fixture.values()[arguments[0]] == stored)
    }

    /// The command reads the schema directories' variables with getenv (for its start-up); the directories are
    /// still the library's rule, from the same environment.
    @Test func theCommandsSchemaDirectoriesAreTheLibrarys() {
        #expect(CommandDomains.defaultSchemaDirectoryPaths() == DefaultsSchema.searchDirectories.map(\.path))
        #expect(CommandDomains().schemaDirectoryPaths == DefaultsSchema.searchDirectories.map(\.path))
    }

    @Test func withoutASchemaTheCommandWritesAsToday() throws {
        let fixture = try SchemaFixture(installing: nil)
        fixture.succeed("write", Self.suite, "fontSize", "-string", "big")
        fixture.succeed("write", Self.suite, "count", "14")
        #expect(try fixture.values() == ["fontSize": "big", "count": "14"])
        #expect(fixture.run("describe", Self.suite).status == 1)
        #expect(fixture.succeed("list-keys", Self.suite) == "count\nfontSize\n", "the stored keys")
    }

    /// The migration record is the library's, not a setting: `list-keys` leaves it out, and `reset` of the
    /// whole domain keeps it, so that the app's migrations do not run again.
    @Test func withoutASchemaResetOfTheDomainKeepsTheMigrationRecord() throws {
        let fixture = try SchemaFixture(installing: nil)
        fixture.succeed("write", Self.suite, DefaultsMigration.recordKey, "-dict", "version", "-int", "2")
        fixture.succeed("write", Self.suite, "count", "14")
        #expect(fixture.succeed("list-keys", Self.suite) == "count\n")
        #expect(fixture.succeed("reset", Self.suite, "--json") == #"{"reset":["count"]}"# + "\n")
        #expect(try fixture.values() == [DefaultsMigration.recordKey: ["version": 2]])
    }

    @Test func writingAWholeDomainOrImportingIsCheckedToo() throws {
        let fixture = try SchemaFixture()
        fixture.succeed("write", Self.suite, "fontSize", "-int", "14")
        let before = try Data(contentsOf: fixture.file)
        let result = fixture.run("write", Self.suite, "{ fontSize = huge; }")
        #expect(result.status == 1 && result.standardError.contains("expects an integer"), "\(result)")
        #expect(try Data(contentsOf: fixture.file) == before)
    }

    /// Old-style text has only strings (`{ fontSize = 20; }`): each is read as a bare value is. XML says its types.
    /// The reserved keys are not settings: a whole domain written keeps the migration record.
    @Test func aWholeDomainInOldStyleTextIsConvertedAndKeepsTheMigrationRecord() throws {
        let fixture = try SchemaFixture()
        fixture.succeed("write", Self.suite, DefaultsMigration.recordKey, "-dict", "version", "-int", "2")
        fixture.succeed("write", Self.suite, "old", "gone")
        fixture.succeed("write", Self.suite, "{ fontSize = 20; volume = 0.25; autosave = no; theme = dark; }")
        #expect(
            try fixture.values() == [
                "fontSize": 20, "volume": .real(0.25), "autosave": false, "theme": "dark",
                DefaultsMigration.recordKey: ["version": 2],
            ])
        let before = try Data(contentsOf: fixture.file)
        let typed = fixture.run("write", Self.suite, "<dict><key>fontSize</key><string>20</string></dict>")
        #expect(typed.status == 1 && typed.standardError.contains("expects an integer, not a string"), "\(typed)")
        #expect(try Data(contentsOf: fixture.file) == before)
    }

    /// `rename` puts a value at a key the schema may describe: it is checked as a write of that key is.
    @Test func renamingOntoAKeyOfTheSchemaIsChecked() throws {
        let fixture = try SchemaFixture()
        fixture.succeed("write", Self.suite, "size", "-string", "big")
        fixture.succeed("write", Self.suite, "oldTheme", "dark")
        let before = try Data(contentsOf: fixture.file)
        let refused = fixture.run("rename", Self.suite, "size", "fontSize")
        #expect(refused.status == 1 && refused.standardError.contains("expects an integer, not a string"), "\(refused)")
        #expect(try Data(contentsOf: fixture.file) == before)
        fixture.succeed("rename", Self.suite, "oldTheme", "theme")
        #expect(try fixture.values() == ["size": "big", "theme": "dark"])
    }

    // MARK: describe, list-keys, reset, schema

    @Test func describeShowsTypeDefaultAllowedValuesSummaryAndValue() throws {
        let fixture = try SchemaFixture()
        fixture.succeed("write", Self.suite, "fontSize", "-int", "14")
        #expect(
            fixture.succeed("describe", Self.suite, "fontSize")
                == "fontSize\n  summary: Text size in points\n  type: integer\n  range: 8 to 72\n  default: 12\n  value: 14\n"
        )
        #expect(
            fixture.succeed("describe", Self.suite, "theme")
                == "theme\n  type: string\n  choices: light, dark, system\n  default: system\n  value: (default)\n")
        let all = fixture.succeed("describe", Self.suite)
        #expect(all.hasPrefix("apiToken\n") && all.contains("\nvolume\n"), "\(all)")
        let json = fixture.succeed("describe", Self.suite, "fontSize", "--json")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect(object["key"] as? String == "fontSize" && object["type"] as? String == "integer")
        #expect(object["default"] as? Int == 12 && object["value"] as? Int == 14 && object["secret"] as? Bool == false)
        #expect((object["range"] as? [String: Int]) == ["min": 8, "max": 72])
        let list = try JSONSerialization.jsonObject(with: Data(fixture.succeed("describe", Self.suite, "--json").utf8))
        #expect((list as? [[String: Any]])?.count == 6)
        let missing = fixture.run("describe", Self.suite, "nope")
        #expect(missing.status == 1 && missing.standardError.contains("key nope is not in the schema"), "\(missing)")
    }

    @Test func listKeysNamesTheSchemasKeys() throws {
        let fixture = try SchemaFixture()
        #expect(fixture.succeed("list-keys", Self.suite) == "apiToken\nautosave\nfontSize\nrecent\ntheme\nvolume\n")
        #expect(
            fixture.succeed("list-keys", Self.suite, "--json")
                == #"["apiToken","autosave","fontSize","recent","theme","volume"]"# + "\n")
    }

    @Test func resetRemovesOneKeyOrEveryKeyOfTheSchema() throws {
        let fixture = try SchemaFixture()
        fixture.succeed("write", Self.suite, "fontSize", "-int", "14")
        fixture.succeed("write", Self.suite, "theme", "dark")
        fixture.succeed("write", Self.suite, "unlisted", "kept")
        fixture.succeed("reset", Self.suite, "fontSize")
        #expect(try fixture.values() == ["theme": "dark", "unlisted": "kept"])
        #expect(fixture.succeed("reset", Self.suite, "--json") == #"{"reset":["theme"]}"# + "\n")
        #expect(try fixture.values() == ["unlisted": "kept"], "a key the schema does not name is left")
        #expect(fixture.run("reset", Self.suite, "nope").status == 1)
    }

    @Test func schemaPrintsTheDocumentThatInstallsIt() throws {
        let fixture = try SchemaFixture()
        let xml = fixture.succeed("schema", Self.suite)
        #expect(try DefaultsSchema(propertyListData: Data(xml.utf8)) == SchemaFixture.schema)
        let json = fixture.succeed("schema", Self.suite, "--json")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect(object["suite"] as? String == Self.suite && (object["keys"] as? [String: Any])?.count == 6)
    }

    @Test func installSchemaInstallsAFileForTheUserOrTheSystem() throws {
        let fixture = try SchemaFixture(installing: nil)
        let file = fixture.directory.file("shipped.plist")
        try SchemaFixture.schema.propertyListData().write(to: file)
        let output = fixture.succeed("install-schema", file.path, "--system")
        #expect(output.contains(fixture.systemSchemas.appendingPathComponent("\(Self.suite).plist").path))
        #expect(fixture.succeed("list-keys", Self.suite).hasPrefix("apiToken\n"))
        fixture.succeed("install-schema", file.path)
        #expect(FileManager.default.fileExists(atPath: fixture.userSchemas.path + "/\(Self.suite).plist"))
        try Data("{ suite = x; keys = { a = { type = colour; }; }; }".utf8).write(to: file)
        let bad = fixture.run("install-schema", file.path)
        #expect(bad.status == 1 && bad.standardError.contains("key \"a\" has the type \"colour\""), "\(bad)")
    }

    // MARK: secrets

    /// `read` and `describe` show a secret in one form, `<secret>`, not quoted by one and bare in the other.
    @Test func readAndDescribeShowASecretInOneForm() throws {
        let fixture = try SchemaFixture()
        fixture.succeed("write", Self.suite, "apiToken", "tok-123456")
        #expect(fixture.succeed("read", Self.suite, "apiToken") == "<secret>\n")
        let described = fixture.succeed("describe", Self.suite, "apiToken")
        #expect(described.hasSuffix("  value: <secret>\n") && !described.contains("tok-123456"), "\(described)")
        #expect(
            fixture.succeed("describe", Self.suite, "apiToken", "--show-secrets").contains("  value: \"tok-123456\"\n"))
    }

    @Test func secretValuesAreRedactedUnlessAskedFor() throws {
        let fixture = try SchemaFixture()
        fixture.succeed("write", Self.suite, "apiToken", "tok-123456")
        fixture.succeed("write", Self.suite, "theme", "dark")
        #expect(fixture.succeed("read", Self.suite, "apiToken") == "<secret>\n")
        let domain = fixture.succeed("read", Self.suite)
        #expect(!domain.contains("tok-123456") && domain.contains("apiToken = \"<secret>\""), "\(domain)")
        #expect(!fixture.succeed("describe", Self.suite, "apiToken").contains("tok-123456"))
        #expect(!fixture.succeed("describe", Self.suite, "--json").contains("tok-123456"))
        let found = fixture.run("find", "tok-123456")
        #expect(!found.standardOutput.contains("tok-123456"), "\(found)")
        #expect(fixture.succeed("read", Self.suite, "apiToken", "--show-secrets") == "tok-123456\n")
        #expect(fixture.succeed("describe", Self.suite, "apiToken", "--show-secrets").contains("tok-123456"))
        #expect(try fixture.values()["apiToken"] == "tok-123456", "stored in full")
    }

    /// The help names where schemas are looked for, and the flag that shows secrets after the verbs that take it.
    @Test func theHelpNamesTheSchemaDirectoriesAndTheFlagThatShowsSecrets() throws {
        let help = CommandVerb.helpText
        #expect(help.contains("$XDG_DATA_HOME/livedefaults/schemas") && help.contains("of $XDG_DATA_DIRS"), "\(help)")
        #expect(help.contains("--show-secrets after read, find, describe, watch or explain"), "\(help)")
        let fixture = try SchemaFixture()
        fixture.succeed("write", Self.suite, "apiToken", "tok-123456")
        for arguments in [
            ["read", Self.suite], ["find", "tok-1"], ["describe", Self.suite], ["explain", Self.suite, "apiToken"],
        ] {
            #expect(fixture.succeed(arguments + ["--show-secrets"]).contains("tok-123456"), "\(arguments)")
        }
    }

    @Test func explainRedactsASecretInEveryLayerUnlessAskedFor() throws {
        let fixture = try SchemaFixture()
        fixture.succeed("write", Self.suite, "apiToken", "tok-123456")
        fixture.succeed("write", Self.suite, "theme", "dark")
        let explained = fixture.succeed("explain", Self.suite, "apiToken")
        #expect(!explained.contains("tok-123456") && explained.contains("\"<secret>\""), "\(explained)")
        let json = fixture.succeed("explain", Self.suite, "apiToken", "--json")
        #expect(!json.contains("tok-123456") && json.contains("\"value\":\"<secret>\""), "\(json)")
        #expect(fixture.succeed("explain", Self.suite, "apiToken", "--show-secrets").contains("\"tok-123456\""))
        // A key the schema does not mark secret is shown as it is.
        #expect(fixture.succeed("explain", Self.suite, "theme").hasSuffix("  dark\n"))
    }
}
