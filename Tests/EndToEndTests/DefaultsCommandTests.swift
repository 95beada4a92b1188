import Foundation
import LiveDefaults
import TestSupport
import Testing

/// One test's world: a temporary `XDG_CONFIG_HOME` and the built `defaults` binary pointed at it.
private struct DefaultsFixture: ~Copyable {
    let directory: TemporaryDirectory
    let runner: CommandRunner

    init() throws {
        directory = try TemporaryDirectory()
        runner = CommandRunner(
            executable: ProductRunner.productsDirectory.appendingPathComponent("defaults"),
            environment: ["XDG_CONFIG_HOME": directory.path, "HOME": directory.path])
    }

    @discardableResult
    func defaults(_ arguments: String..., input: Data? = nil) throws -> CommandResult {
        try runner.run(arguments, standardInput: input)
    }

    /// Runs and requires success with no error output.
    @discardableResult
    func succeed(_ arguments: String..., input: Data? = nil) throws -> String {
        let result = try runner.run(arguments, standardInput: input)
        #expect(result.status == 0, "\(arguments): \(result)")
        #expect(result.standardError.isEmpty, "\(arguments): \(result)")
        return result.standardOutput
    }

    func file(_ domain: String) -> URL { directory.file(domain + ".plist") }

    /// The domain's file, decoded.
    func values(_ domain: String) throws -> [String: PropertyListValue] {
        let data = try Data(contentsOf: file(domain))
        return try #require(try PropertyListCodec.decode(data).value.dictionaryValue)
    }

    /// Writes a domain file directly (binary, as the store writes new files).
    func seed(_ domain: String, _ values: [String: PropertyListValue]) throws {
        try PropertyListCodec.encode(.dictionary(values), format: .binary).write(to: file(domain))
    }
}

@Suite struct DefaultsCommandTests {
    // MARK: write and read, every value flag

    @Test(
        arguments: [
            (["-string", "hello world"], "hello world", "string", PropertyListValue.string("hello world")),
            (["plain"], "plain", "string", "plain"),
            (["14"], "14", "string", "14"),
            (["-int", "14"], "14", "integer", .integer(14)),
            (["-integer", "-7"], "-7", "integer", .integer(-7)),
            (["-int", "18446744073709551615"], "18446744073709551615", "integer", .unsignedInteger(.max)),
            (["-float", "0.5"], "0.5", "float", .real(0.5)),
            (["-float", "3"], "3", "float", .real(3)),
            (["-bool", "YES"], "1", "boolean", .bool(true)),
            (["-bool", "true"], "1", "boolean", .bool(true)),
            (["-boolean", "NO"], "0", "boolean", .bool(false)),
            (["-bool", "0"], "0", "boolean", .bool(false)),
            (
                ["-date", "2024-01-01 12:00:00 +0000"], "2024-01-01 12:00:00 +0000", "date",
                .date(Date(timeIntervalSince1970: 1_704_110_400))
            ),
            (
                ["-date", "2024-01-01T14:00:00+02:00"], "2024-01-01 12:00:00 +0000", "date",
                .date(Date(timeIntervalSince1970: 1_704_110_400))
            ),
            (
                ["-data", "deadBEEF"], "{length = 4, bytes = 0xdeadbeef}", "data",
                .data(Data([0xDE, 0xAD, 0xBE, 0xEF]))
            ),
            (["-array", "a", "b c", "-int", "3"], "(\n    a,\n    \"b c\",\n    3\n)", "array", ["a", "b c", 3]),
            (["-array"], "(\n)", "array", []),
            (
                ["-dict", "k", "v", "n", "-bool", "yes"], "{\n    k = v;\n    n = 1;\n}", "dictionary",
                ["k": "v", "n": true]
            ),
            (["(1, (2, 3))"], "(\n    1,\n        (\n        2,\n        3\n    )\n)", "array", ["1", ["2", "3"]]),
            (
                ["{ a = <00ff>; \"b c\" = d; }"], "{\n    a = {length = 2, bytes = 0x00ff};\n    \"b c\" = d;\n}",
                "dictionary", ["a": .data(Data([0, 0xFF])), "b c": "d"]
            ),
            (["\"quoted\""], "quoted", "string", "quoted"),
        ] as [([String], String, String, PropertyListValue)])
    func writesEveryKindOfValue(value: [String], printed: String, type: String, stored: PropertyListValue) throws {
        let fixture = try DefaultsFixture()
        try fixture.runner.run(["write", "com.example.app", "key"] + value).expectSuccess()
        #expect(try fixture.values("com.example.app") == ["key": stored])
        #expect(try fixture.succeed("read", "com.example.app", "key") == printed + "\n")
        #expect(try fixture.succeed("read-type", "com.example.app", "key") == "Type is \(type)\n")
    }

    @Test func readsADomainInMacOSFormat() throws {
        let fixture = try DefaultsFixture()
        try fixture.seed(
            "com.apple.dock",
            [
                "autohide": true,
                "tilesize": 48,
                "magnification-scale": 1.5,
                "orientation": "bottom",
                "empty": "",
                "quote": "say \"hi\"\\\nbye",
                "unicode": "café",
                "modified": .date(Date(timeIntervalSince1970: 1_704_110_400)),
                "book": .data(Data(0..<55)),
                "persistent-apps": [
                    [
                        "GUID": 1_644_535_571,
                        "tile-data": [
                            "file-data": ["_CFURLString": "file:///Applications/Safari.app/", "_CFURLStringType": 15],
                            "file-label": "Safari",
                        ],
                    ]
                ],
                "persistent-others": [],
            ])
        let expected = """
            {
                autohide = 1;
                book = {length = 55, bytes = 0x00010203 04050607 08090a0b 0c0d0e0f ... 2f303132 33343536 };
                empty = "";
                "magnification-scale" = "1.5";
                modified = "2024-01-01 12:00:00 +0000";
                orientation = bottom;
                "persistent-apps" =     (
                            {
                        GUID = 1644535571;
                        "tile-data" =             {
                            "file-data" =                 {
                                "_CFURLString" = "file:///Applications/Safari.app/";
                                "_CFURLStringType" = 15;
                            };
                            "file-label" = Safari;
                        };
                    }
                );
                "persistent-others" =     (
                );
                quote = "say \\"hi\\"\\\\\\nbye";
                tilesize = 48;
                unicode = "caf\\U00e9";
            }

            """
        #expect(try fixture.succeed("read", "com.apple.dock") == expected)
        #expect(try fixture.succeed("read", "com.apple.dock", "unicode") == "café\n")
    }

    @Test func readWithoutADomainPrintsEveryDomain() throws {
        let fixture = try DefaultsFixture()
        try fixture.seed("b", ["x": 1])
        try fixture.seed("NSGlobalDomain", ["g": "v"])
        #expect(
            try fixture.succeed("read")
                == "{\n    NSGlobalDomain =     {\n        g = v;\n    };\n    b =     {\n        x = 1;\n    };\n}\n")
    }

    // MARK: missing domains and keys

    @Test func missingDomainsAndKeysExitWithOneAndMacOSMessages() throws {
        let fixture = try DefaultsFixture()
        try fixture.seed("com.x", ["present": 1])
        let cases: [([String], String)] = [
            (["read", "com.none"], "\nDomain com.none does not exist\n"),
            (["read", "com.x", "absent"], "\nThe domain/default pair of (com.x, absent) does not exist\n"),
            (["read-type", "com.x", "absent"], "\nThe domain/default pair of (com.x, absent) does not exist\n"),
            (["delete", "com.none"], "\nDomain (com.none) not found.\nDefaults have not been changed.\n"),
            (["delete", "com.x", "absent"], "\nDomain (com.x) not found.\nDefaults have not been changed.\n"),
            (
                ["rename", "com.x", "absent", "b"],
                "Key absent does not exist in domain com.x; leaving defaults unchanged\n"
            ),
            (["export", "com.none", "-"], "\nThe domain com.none does not exist\n"),
            (["read", "-g", "absent"], "\nThe domain/default pair of (NSGlobalDomain, absent) does not exist\n"),
        ]
        let before = try Data(contentsOf: fixture.file("com.x"))
        for (arguments, message) in cases {
            let result = try fixture.runner.run(arguments)
            #expect(result.status == 1, "\(arguments): \(result)")
            #expect(result.standardOutput.isEmpty, "\(arguments): \(result)")
            #expect(result.standardError == message, "\(arguments): \(result)")
        }
        #expect(try Data(contentsOf: fixture.file("com.x")) == before)
        #expect(!FileManager.default.fileExists(atPath: fixture.file("com.none").path))
    }

    // MARK: write forms

    @Test func writesAWholeDomainFromAPropertyList() throws {
        let fixture = try DefaultsFixture()
        try fixture.seed("com.x", ["old": "gone"])
        try fixture.succeed("write", "com.x", "{ a = 1; b = (x, y); \"c d\" = { e = f; }; }")
        #expect(try fixture.values("com.x") == ["a": "1", "b": ["x", "y"], "c d": ["e": "f"]])
    }

    @Test func arrayAddAndDictAddExtendExistingValues() throws {
        let fixture = try DefaultsFixture()
        try fixture.succeed("write", "com.x", "list", "-array-add", "a")
        try fixture.succeed("write", "com.x", "list", "-array-add", "b", "-int", "2")
        try fixture.succeed("write", "com.x", "map", "-dict-add", "k", "v")
        try fixture.succeed("write", "com.x", "map", "-dict-add", "k", "w", "n", "-float", "1.5")
        try fixture.succeed("write", "com.x", "text", "words")
        #expect(try fixture.values("com.x") == ["list": ["a", "b", 2], "map": ["k": "w", "n": 1.5], "text": "words"])

        let before = try Data(contentsOf: fixture.file("com.x"))
        let appendToString = try fixture.defaults("write", "com.x", "text", "-array-add", "z")
        #expect(appendToString.status == 1)
        #expect(appendToString.standardError.contains("Value for key text is not an array"))
        let addToArray = try fixture.defaults("write", "com.x", "list", "-dict-add", "k", "v")
        #expect(addToArray.status == 1)
        #expect(addToArray.standardError.contains("Value for key list is not a dictionary"))
        #expect(try Data(contentsOf: fixture.file("com.x")) == before)
    }

    @Test func renameAndDelete() throws {
        let fixture = try DefaultsFixture()
        try fixture.seed("com.x", ["a": 1, "b": 2, "c": 3])
        try fixture.succeed("rename", "com.x", "a", "z")
        #expect(try fixture.values("com.x") == ["z": 1, "b": 2, "c": 3])
        try fixture.succeed("delete", "com.x", "b")
        #expect(try fixture.values("com.x") == ["z": 1, "c": 3])
        try fixture.succeed("remove", "com.x", "c")
        #expect(try fixture.values("com.x") == ["z": 1])
        try fixture.succeed("delete", "com.x")
        #expect(try fixture.defaults("read", "com.x").status == 1)
    }

    @Test(arguments: ["-g", "-globalDomain", "NSGlobalDomain", "Apple Global Domain"])
    func globalDomainSpellingsAllNameNSGlobalDomain(spelling: String) throws {
        let fixture = try DefaultsFixture()
        try fixture.succeed("write", spelling, "AppleLocale", "en_GB")
        #expect(try fixture.values("NSGlobalDomain") == ["AppleLocale": "en_GB"])
        #expect(try fixture.succeed("read", "-g", "AppleLocale") == "en_GB\n")
        // The global domain is not listed by `domains`, as on macOS.
        #expect(try fixture.succeed("domains") == "\n")
    }

    @Test func aPathNamesAPlistFileWithOrWithoutItsExtension() throws {
        let fixture = try DefaultsFixture()
        let elsewhere = fixture.directory.file("elsewhere")
        try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
        let path = elsewhere.appendingPathComponent("Info").path
        try fixture.succeed("write", path, "CFBundleName", "Demo")
        let written = try PropertyListCodec.decode(Data(contentsOf: URL(fileURLWithPath: path + ".plist"))).value
        #expect(written == ["CFBundleName": "Demo"])
        #expect(try fixture.succeed("read", path + ".plist", "CFBundleName") == "Demo\n")
        #expect(try fixture.succeed("read-type", path, "CFBundleName") == "Type is string\n")
    }

    // MARK: domains and find

    @Test func domainsListsPlistFilesSortedOnOneLine() throws {
        let fixture = try DefaultsFixture()
        try fixture.seed("org.b", ["k": 1])
        try fixture.seed("com.a", ["k": 1])
        try fixture.seed("NSGlobalDomain", ["k": 1])
        try Data().write(to: fixture.directory.file("notes.txt"))
        try Data().write(to: fixture.directory.file("com.a.plist.lock"))
        try Data().write(to: fixture.directory.file(".hidden.plist"))
        #expect(try fixture.succeed("domains") == "com.a, org.b\n")
    }

    @Test func findSearchesKeysAndValuesOfAllDomains() throws {
        let fixture = try DefaultsFixture()
        try fixture.seed("com.a", ["Theme": "dark", "other": ["nested": "darker"], "n": 1])
        try fixture.seed("com.b", ["x": "light"])
        let output = try fixture.succeed("find", "DARK")
        #expect(
            output
                == "Found 2 keys in domain 'com.a': {\n    Theme = dark;\n    n = 1;\n    other =     {\n        nested = darker;\n    };\n}\n"
        )
        let none = try fixture.defaults("find", "nothing-like-this")
        #expect(none.status == 0)
        #expect(none.standardOutput.isEmpty)
        #expect(none.standardError == "No domain, key, nor value containing 'nothing-like-this'\n")
    }

    // MARK: import and export

    @Test func exportWritesXMLToStandardOutputAndBinaryToAFile() throws {
        let fixture = try DefaultsFixture()
        let values: [String: PropertyListValue] = ["a": 1, "b": ["c", true], "d": .data(Data([1, 2]))]
        try fixture.seed("com.x", values)
        let xml = try fixture.succeed("export", "com.x", "-")
        #expect(xml.hasPrefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>"))
        let decoded = try PropertyListCodec.decode(Data(xml.utf8))
        #expect(decoded.format == .xml)
        #expect(decoded.value == .dictionary(values))

        let exported = fixture.directory.file("out.plist")
        try fixture.succeed("export", "com.x", exported.path)
        let binary = try Data(contentsOf: exported)
        #expect(binary.starts(with: Array("bplist00".utf8)))
        #expect(try PropertyListCodec.decode(binary).value == .dictionary(values))
    }

    @Test(arguments: [PropertyListFormat.binary, .xml, .openStep])
    func importReadsEveryFormatFromStandardInputOrAFile(format: PropertyListFormat) throws {
        let fixture = try DefaultsFixture()
        try fixture.seed("com.x", ["replaced": true])
        let values: [String: PropertyListValue] = ["name": "value", "list": ["a", "b"]]
        let data = try PropertyListCodec.encode(.dictionary(values), format: format)
        try fixture.succeed("import", "com.x", "-", input: data)
        #expect(try fixture.values("com.x") == values)

        let source = fixture.directory.file("in.data")
        try data.write(to: source)
        try fixture.succeed("import", "com.y", source.path)
        #expect(try fixture.values("com.y") == values)
    }

    @Test func importRefusesWhatIsNotADictionary() throws {
        let fixture = try DefaultsFixture()
        try fixture.seed("com.x", ["keep": 1])
        let before = try Data(contentsOf: fixture.file("com.x"))
        let array = try fixture.defaults("import", "com.x", "-", input: Data("(a, b)".utf8))
        #expect(array.status == 1)
        #expect(array.standardError == "\nProperty list (a, b) was not a dictionary\nDefaults have not been changed.\n")
        let garbage = try fixture.defaults("import", "com.x", "-", input: Data("{ a = ".utf8))
        #expect(garbage.status == 1)
        #expect(garbage.standardError.hasPrefix("Could not parse property list from -:"))
        let missing = try fixture.defaults("import", "com.x", fixture.directory.file("none").path)
        #expect(missing.status == 1)
        #expect(try Data(contentsOf: fixture.file("com.x")) == before)
    }

    // MARK: help and bad input

    @Test func helpListsEveryVerbAndValueFlag() throws {
        let fixture = try DefaultsFixture()
        let help = try fixture.succeed("help")
        for verb in ["read", "read-type", "write", "rename", "delete", "import", "export", "domains", "find", "watch"] {
            #expect(help.contains("\n  \(verb) ") || help.contains("\n  \(verb)\n"), "\(verb)")
        }
        for flag in [
            "-string", "-data", "-int[eger]", "-float", "-bool[ean]", "-date", "-array", "-array-add", "-dict",
            "-dict-add",
        ] {
            #expect(help.contains("\n  \(flag) "), "\(flag)")
        }
        #expect(help.contains("  read <domain> <key>                  shows defaults for given domain, key\n"))
    }

    @Test(
        arguments: [
            (["frobnicate"], "unknown verb 'frobnicate'"),
            ([], "no verb given"),
            (["-verbose", "read"], "unknown option '-verbose'"),
            (["write", "com.x", "k", "-integr", "3"], "unknown option '-integr'"),
            (["write", "com.x", "k", "-int", "abc"], "-int 'abc' is not an integer"),
            (["write", "com.x", "k", "-int", "1.5"], "-int '1.5' is not an integer"),
            (["write", "com.x", "k", "-float", "fast"], "-float 'fast' is not a finite number"),
            (["write", "com.x", "k", "-bool", "maybe"], "-bool 'maybe' is not a Boolean"),
            (["write", "com.x", "k", "-data", "abc"], "odd number of hex digits"),
            (["write", "com.x", "k", "-data", "xyz1"], "is not hex data"),
            (["write", "com.x", "k", "-date", "2024-02-30 00:00:00 +0000"], "is not a valid date"),
            (["write", "com.x", "k", "-date", "tomorrow"], "is not a valid date"),
            (
                ["write", "com.x", "k", "(a, b"],
                "is not a valid property list (line 1, column 1: the array opened here"
            ),
            (["write", "com.x", "k", "{ a = 1"], "is not a valid property list"),
            (["write", "com.x", "{ a = 1; "], "is not a valid property list"),
            (["write", "com.x", "k", "<0fb>"], "odd number of hex digits"),
            (["write", "com.x", "k", "-array", "a", "-array", "b"], "-array cannot be nested"),
            (["write", "com.x", "k", "-dict", "a"], "missing value for dictionary key 'a'"),
            (["write", "com.x", "k", "-string"], "missing value after -string"),
            (["write", "com.x", "k", "-string", "a", "b"], "unexpected argument 'b'"),
            (["write", "com.x", "k", "a", "b"], "unexpected argument 'b'"),
            (["write", "com.x", "k"], "missing value for key 'k'"),
            (["write", "com.x"], "missing key"),
            (["write", "com.x", "-int", "3"], "missing key before -int"),
            (["write"], "missing domain"),
            (["read", "com.x", "k", "extra"], "unexpected argument 'extra'"),
            (["read-type", "com.x"], "missing key"),
            (["rename", "com.x", "a"], "missing new key"),
            (["find"], "missing word to find"),
            (["import", "com.x"], "missing path to read from"),
            (["export", "com.x"], "missing path to write to"),
            (["read", "-app", "Safari"], "-app is not supported"),
            (["read", "-nonsense"], "unknown option '-nonsense'"),
            (["watch", "com.x", "--yaml"], "unknown option '--yaml'"),
        ] as [([String], String)])
    func badInputIsOneLineOnStandardErrorAndChangesNothing(arguments: [String], problem: String) throws {
        let fixture = try DefaultsFixture()
        try fixture.seed("com.x", ["k": "original", "a": 1])
        let before = try Data(contentsOf: fixture.file("com.x"))
        let result = try fixture.runner.run(arguments)
        #expect(result.status == 255, "\(result)")
        #expect(result.standardOutput.isEmpty, "\(result)")
        #expect(result.standardError.hasPrefix("defaults: "), "\(result)")
        #expect(result.standardError.contains(problem), "\(result)")
        #expect(result.standardError.contains("Usage: defaults"), "\(result)")
        #expect(result.standardError.filter { $0 == "\n" }.count == 1, "\(result)")
        #expect(try Data(contentsOf: fixture.file("com.x")) == before)
        let files = try FileManager.default.contentsOfDirectory(atPath: fixture.directory.path)
        #expect(files == ["com.x.plist"])
    }

    @Test func aCorruptDomainIsAnErrorToReadAndIsLeftAlone() throws {
        let fixture = try DefaultsFixture()
        let garbage = Data("{ this is = not a plist".utf8)
        try garbage.write(to: fixture.file("com.x"))
        let result = try fixture.defaults("read", "com.x")
        #expect(result.status == 1, "\(result)")
        #expect(result.standardError.contains("com.x"), "\(result)")
        #expect(try Data(contentsOf: fixture.file("com.x")) == garbage)
    }

    // MARK: watch

    @Test func watchJSONReportsAWriteByAnotherProcess() throws {
        let fixture = try DefaultsFixture()
        try fixture.seed("com.x", ["theme": "light"])
        let watcher = try fixture.runner.start(["watch", "com.x", "--json"])
        defer { watcher.terminate() }
        try watcher.waitForLine(
            on: .error, where: { $0.hasPrefix("Watching com.x") }, describedAs: "the watch to start")

        try fixture.succeed("write", "com.x", "theme", "dark blue")
        let line = try watcher.waitForLine(on: .output, where: { !$0.isEmpty }, describedAs: "a JSON line")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String])
        #expect(
            object == ["domain": "com.x", "key": "theme", "old": "light", "new": "dark blue", "origin": "external"])

        try fixture.succeed("write", "com.x", "size", "-int", "12")
        let second = try watcher.waitForLine(
            on: .output, where: { $0.contains("\"size\"") }, describedAs: "the size line")
        #expect(second == #"{"domain":"com.x","key":"size","old":null,"new":12,"origin":"external"}"#)
    }

    @Test func watchPrintsOneLinePerChangeOfTheKeysAskedFor() throws {
        let fixture = try DefaultsFixture()
        try fixture.seed("com.x", ["theme": "light"])
        let watcher = try fixture.runner.start(["watch", "com.x", "theme"])
        defer { watcher.terminate() }
        try watcher.waitForLine(on: .error, where: { $0.hasPrefix("Watching theme in com.x") }, describedAs: "start")

        try fixture.succeed("write", "com.x", "ignored", "-int", "1")
        try fixture.succeed("write", "com.x", "theme", "-array", "a", "b c")
        try fixture.succeed("delete", "com.x", "theme")
        try watcher.waitForLine(on: .output, where: { $0.contains("(none)") }, describedAs: "the deletion")
        let lines = watcher.text(of: .output).split(separator: "\n")
        #expect(lines == [#"theme: light → (a, "b c") (external)"#, #"theme: (a, "b c") → (none) (external)"#])
    }
}

extension CommandResult {
    func expectSuccess(sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(status == 0, "\(self)", sourceLocation: sourceLocation)
        #expect(standardError.isEmpty, "\(self)", sourceLocation: sourceLocation)
    }
}
