import Foundation
import LiveDefaults
import LiveDefaultsCommand
import LiveDefaultsPropertyList
import LiveDefaultsTestHelpers
import TestSupport
import Testing

/// Runs the `defaults` command in this process through its seam: ``DefaultsCommandRunner`` with the domains in
/// `directory` (as `XDG_CONFIG_HOME` gives them to the binary) and its standard streams captured.
struct InProcessCommand: DefaultsCommandRunning {
    /// A run that started `watch` instead of finishing: watching is tested with the binary.
    struct NotFinished: Error {}

    var directory: URL

    func run(_ arguments: [String], standardInput: Data? = nil) throws -> CommandResult {
        // No schema directories: these are the command without a schema (SchemaCommandTests has them).
        let domains = CommandDomains(directory: directory, schemaDirectories: [])
        guard let result = runInProcess(arguments, domains: domains, standardInput: standardInput ?? Data()) else {
            throw NotFinished()
        }
        return result
    }
}

/// One test's world: a temporary domain directory and the command run in process against it.
private typealias DefaultsFixture = LiveDefaultsTestHelpers.DefaultsFixture<InProcessCommand>

extension LiveDefaultsTestHelpers.DefaultsFixture where Runner == InProcessCommand {
    init() throws { try self.init { InProcessCommand(directory: $0.url) } }
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
            // XML fragments are values, as on macOS (Dock and screensaver scripts rely on them).
            (["<integer>3</integer>"], "3", "integer", .integer(3)),
            (["<real>0.5</real>"], "0.5", "float", .real(0.5)),
            (["<false/>"], "0", "boolean", .bool(false)),
            (
                ["<string>/System/Library/A B.saver</string>"], "/System/Library/A B.saver", "string",
                "/System/Library/A B.saver"
            ),
            (
                ["<dict><key>file-label</key><string>Safari</string><key>n</key><integer>1</integer></dict>"],
                "{\n    \"file-label\" = Safari;\n    n = 1;\n}", "dictionary", ["file-label": "Safari", "n": 1]
            ),
            (
                ["<?xml version=\"1.0\"?><plist version=\"1.0\"><array><string>a</string></array></plist>"],
                "(\n    a\n)", "array", ["a"]
            ),
            // Without any of " ( ) [ ] { } < > a value is the string itself, spaces and all.
            (["a = b; c"], "a = b; c", "string", "a = b; c"),
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
        // macOS lists the global domain as "Apple Global Domain".
        #expect(
            try fixture.succeed("read")
                == "{\n    \"Apple Global Domain\" =     {\n        g = v;\n    };\n    b =     {\n        x = 1;\n    };\n}\n"
        )
    }

    // MARK: missing domains and keys

    @Test func missingDomainsAndKeysExitWithOneAndMacOSMessages() throws {
        let fixture = try DefaultsFixture()
        try fixture.seed("com.x", ["present": 1])
        let cases: [([String], String)] = [
            (["read", "com.none"], "\nDomain com.none does not exist\n"),
            (["read", "-g"], "\nDomain Apple Global Domain does not exist\n"),
            (["read", "com.x", "absent"], "\nThe domain/default pair of (com.x, absent) does not exist\n"),
            (["read-type", "com.x", "absent"], "\nThe domain/default pair of (com.x, absent) does not exist\n"),
            (["delete", "com.none"], "\nDomain (com.none) not found.\nDefaults have not been changed.\n"),
            (["delete", "com.x", "absent"], "\nDomain (com.x) not found.\nDefaults have not been changed.\n"),
            (
                ["rename", "com.x", "absent", "b"],
                "Key absent does not exist in domain com.x; leaving defaults unchanged\n"
            ),
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

    @Test func theGlobalDomainAndPathDomainsAreNamedAsMacOSNamesThem() throws {
        let fixture = try DefaultsFixture()
        try fixture.seed("NSGlobalDomain", ["present": 1])
        let path = fixture.directory.file("Desktop").appendingPathComponent("test").path
        let cases: [([String], String)] = [
            (
                ["read", "-g", "MissingKey"],
                "\nThe domain/default pair of (kCFPreferencesAnyApplication, MissingKey) does not exist\n"
            ),
            (
                ["read-type", "NSGlobalDomain", "k"],
                "\nThe domain/default pair of (kCFPreferencesAnyApplication, k) does not exist\n"
            ),
            (
                ["delete", "-g", "missing"],
                "\nDomain (kCFPreferencesAnyApplication) not found.\nDefaults have not been changed.\n"
            ),
            (
                ["rename", "-g", "a", "b"],
                "Key a does not exist in domain Apple Global Domain; leaving defaults unchanged\n"
            ),
            // A path is named as typed, without .plist.
            (["read", path], "\nDomain \(path) does not exist\n"),
            (["read", path + ".plist"], "\nDomain \(path) does not exist\n"),
            (
                ["read", path + ".plist", "SHOWFULLNAME"],
                "\nThe domain/default pair of (\(path), SHOWFULLNAME) does not exist\n"
            ),
            (["delete", path, "k"], "\nDomain (\(path)) not found.\nDefaults have not been changed.\n"),
        ]
        for (arguments, message) in cases {
            let result = try fixture.runner.run(arguments)
            #expect(result.status == 1, "\(arguments): \(result)")
            #expect(result.standardOutput.isEmpty, "\(arguments): \(result)")
            #expect(result.standardError == message, "\(arguments): \(result)")
        }
        #expect(try fixture.values("NSGlobalDomain") == ["present": 1])
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
        #expect(
            appendToString.standardError
                == "Value for key text is not an array; cannot append.  Leaving defaults unchanged.\n")
        let addToArray = try fixture.defaults("write", "com.x", "list", "-dict-add", "k", "v")
        #expect(addToArray.status == 1)
        #expect(
            addToArray.standardError
                == "Value for key list is not a dictionary; cannot append.  Leaving defaults unchanged.\n")
        #expect(try Data(contentsOf: fixture.file("com.x")) == before)
    }

    @Test func xmlFragmentsAndQuotedKeysWorkInArrayAddAndDictAdd() throws {
        let fixture = try DefaultsFixture()
        let tile =
            "<dict><key>tile-data</key><dict><key>file-label</key><string>Safari</string>"
            + "<key>file-type</key><integer>41</integer></dict></dict>"
        try fixture.succeed("write", "com.apple.dock", "persistent-apps", "-array-add", tile)
        try fixture.succeed("write", "com.apple.dock", "persistent-apps", "-array-add", tile)
        try fixture.succeed(
            "write", "com.apple.screensaver", "moduleDict", "-dict-add", "path",
            "<string>/System/Library/Screen Savers/Flurry.saver</string>", "\"a (b)\"", "-int", "2")
        let entry: PropertyListValue = ["tile-data": ["file-label": "Safari", "file-type": 41]]
        #expect(try fixture.values("com.apple.dock") == ["persistent-apps": [entry, entry]])
        #expect(
            try fixture.values("com.apple.screensaver")
                == ["moduleDict": ["path": "/System/Library/Screen Savers/Flurry.saver", "a (b)": 2]])
    }

    @Test func theArgumentAfterTheDomainIsAlwaysTheKey() throws {
        let fixture = try DefaultsFixture()
        try fixture.succeed("write", "com.x", "-int", "3")
        #expect(try fixture.values("com.x") == ["-int": "3"])
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

    @Test func hostSelectsTheDomainsByHostFileAndTheFileForAnyHostShowsThrough() throws {
        let fixture = try DefaultsFixture()
        try fixture.succeed("write", "com.apple.screensaver", "idleTime", "-int", "300")
        try fixture.succeed("write", "com.apple.screensaver", "moduleName", "Flurry")
        try fixture.succeed("-host", "other-box", "write", "com.apple.screensaver", "idleTime", "-int", "0")
        let byHost = fixture.directory.file("ByHost/com.apple.screensaver.other-box.plist")
        let written = try PropertyListCodec.decode(Data(contentsOf: byHost)).value
        #expect(written == ["idleTime": 0])
        #expect(try fixture.values("com.apple.screensaver") == ["idleTime": 300, "moduleName": "Flurry"])
        #expect(
            try fixture.succeed("-host", "other-box", "read", "com.apple.screensaver") == "{\n    idleTime = 0;\n}\n")
        #expect(try fixture.succeed("read", "com.apple.screensaver", "idleTime") == "300\n")
        // The explanation of a ByHost domain shows the file for any host under it.
        let explained = try fixture.succeed("-host", "other-box", "explain", "com.apple.screensaver", "idleTime")
        #expect(
            explained
                == "* currentHost  \(byHost.path)  0\n  suite        \(fixture.file("com.apple.screensaver").path)  300\n"
        )
        #expect(try fixture.defaults("-host", "a/b", "read", "com.apple.screensaver").status == 1)
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

    @Test func findPrintsOnlyTheMatchingEntriesOfEachDomain() throws {
        let fixture = try DefaultsFixture()
        try fixture.seed("com.a", ["Theme": "dark", "other": ["nested": "darker"], "n": 1, "list": ["x", "Dark"]])
        try fixture.seed("com.b", ["x": "light", "dark-mode": false])
        try fixture.seed("NSGlobalDomain", ["AppleInterfaceStyle": "Dark", "AppleLocale": "en_GB"])
        let output = try fixture.succeed("find", "DARK")
        #expect(
            output
                == "Found 1 keys in domain 'Apple Global Domain': {\n    AppleInterfaceStyle = Dark;\n}\n"
                + "Found 3 keys in domain 'com.a': {\n    Theme = dark;\n    list =     (\n        x,\n        Dark\n    );\n"
                + "    other =     {\n        nested = darker;\n    };\n}\n"
                + "Found 1 keys in domain 'com.b': {\n    \"dark-mode\" = 0;\n}\n")
        // A domain whose name matches shows all of its entries.
        #expect(
            try fixture.succeed("find", "com.b")
                == "Found 2 keys in domain 'com.b': {\n    \"dark-mode\" = 0;\n    x = light;\n}\n")
        // Numbers are not searched: only keys and strings are.
        let number = try fixture.defaults("find", "1")
        #expect(number.status == 0)
        #expect(number.standardOutput.isEmpty, "\(number)")
        #expect(number.standardError == "No domain, key, nor value containing '1'\n")
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

    @Test func exportOfAMissingDomainIsAnEmptyDictionary() throws {
        let fixture = try DefaultsFixture()
        let xml = try fixture.succeed("export", "com.none", "-")
        #expect(xml.contains("<plist version=\"1.0\">\n<dict/>\n</plist>"), "\(xml)")
        #expect(try PropertyListCodec.decode(Data(xml.utf8)).value == [:])
        let exported = fixture.directory.file("out.plist")
        try fixture.succeed("export", "com.none", exported.path)
        #expect(try PropertyListCodec.decode(Data(contentsOf: exported)).value == [:])
        #expect(!FileManager.default.fileExists(atPath: fixture.file("com.none").path))
    }

    @Test(arguments: [PropertyListFormat.binary, .xml, .openStep])
    func importReadsEveryFormatFromStandardInputOrAFile(format: PropertyListFormat) throws {
        let fixture = try DefaultsFixture()
        try fixture.seed("com.x", ["replaced": true])
        let values: [String: PropertyListValue] = ["name": "value", "list": ["a", "b"]]
        let data = try PropertyListCodec.encode(.dictionary(values), format: format)
        try fixture.succeed("import", "com.x", "-", input: data)
        #expect(try fixture.values("com.x") == values.merging(["replaced": true]) { new, _ in new })

        let source = fixture.directory.file("in.data")
        try data.write(to: source)
        try fixture.succeed("import", "com.y", source.path)
        #expect(try fixture.values("com.y") == values)
    }

    @Test func importMergesIntoTheDomainAsMacOSDoes() throws {
        let fixture = try DefaultsFixture()
        try fixture.seed("com.x", ["kept": 1, "changed": "old", "nested": ["a": 1]])
        let input = Data("{ changed = new; added = (x); nested = { b = 2; }; }".utf8)
        try fixture.succeed("import", "com.x", "-", input: input)
        // Keys not in the imported dictionary stay; imported keys replace theirs whole (no deep merge).
        #expect(try fixture.values("com.x") == ["kept": 1, "changed": "new", "added": ["x"], "nested": ["b": "2"]])
    }

    @Test func importRefusesWhatIsNotADictionary() throws {
        let fixture = try DefaultsFixture()
        try fixture.seed("com.x", ["keep": 1])
        let before = try Data(contentsOf: fixture.file("com.x"))
        let array = try fixture.defaults("import", "com.x", "-", input: Data("(a, b)".utf8))
        #expect(array.status == 1)
        #expect(
            array.standardError
                == "Property list (\n    a,\n    b\n) was not a dictionary\nDefaults have not been changed.\n")
        let garbage = try fixture.defaults("import", "com.x", "-", input: Data("{ a = ".utf8))
        #expect(garbage.status == 1)
        #expect(garbage.standardError.hasPrefix("Could not parse property list from - due to "), "\(garbage)")
        let none = fixture.directory.file("none").path
        let missing = try fixture.defaults("import", "com.x", none)
        #expect(missing.status == 1)
        #expect(missing.standardError == "Could not read data from \(none)\n")
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

    /// Runs `arguments` against a seeded domain and checks that the domain's file is untouched and no file
    /// was created.
    private func runBadInput(_ arguments: [String]) throws -> CommandResult {
        let fixture = try DefaultsFixture()
        try fixture.seed("com.x", ["k": "original", "a": 1])
        let before = try Data(contentsOf: fixture.file("com.x"))
        let result = try fixture.runner.run(arguments)
        #expect(try Data(contentsOf: fixture.file("com.x")) == before, "\(arguments)")
        let files = try FileManager.default.contentsOfDirectory(atPath: fixture.directory.path)
        #expect(files == ["com.x.plist"], "\(arguments)")
        return result
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
            (["write", "com.x", "k", "-string"], "missing value after -string"),
            (["write", "com.x", "k", "-array", "a", "-int"], "missing value after -int"),
            (["write", "com.x"], "missing key"),
            (["write"], "missing domain"),
            (["read", "com.x", "k", "extra"], "unexpected argument 'extra'"),
            (["read-type", "com.x"], "missing key"),
            (["rename", "com.x", "a"], "missing new key"),
            (["find"], "missing word to find"),
            (["read", "-app"], "missing application name after -app"),
            (["read", "-nonsense"], "unknown option '-nonsense'"),
            (["watch", "com.x", "--yaml"], "unknown option '--yaml'"),
        ] as [([String], String)])
    func aMalformedCommandLinePrintsTheUsageExits255AndChangesNothing(arguments: [String], problem: String) throws {
        let result = try runBadInput(arguments)
        #expect(result.status == 255, "\(result)")
        // macOS prints its usage on standard output; one line on standard error says what was wrong.
        #expect(result.standardOutput == CommandVerb.helpText, "\(result)")
        #expect(result.standardError.hasPrefix("defaults: "), "\(result)")
        #expect(result.standardError.contains(problem), "\(result)")
        #expect(result.standardError.contains("Usage: defaults"), "\(result)")
        #expect(result.standardError.filter { $0 == "\n" }.count == 1, "\(result)")
    }

    @Test(
        arguments: [
            (
                ["write", "com.x", "k", "Local (OpenAI-compatible)"],
                "Could not parse: Local (OpenAI-compatible).  Try single-quoting it.\n"
            ),
            (["write", "com.x", "k", "(a, b"], "Could not parse: (a, b.  Try single-quoting it.\n"),
            (["write", "com.x", "k", "a[0]"], "Could not parse: a[0].  Try single-quoting it.\n"),
            (["write", "com.x", "k", "{ a = 1"], "Could not parse: { a = 1.  Try single-quoting it.\n"),
            (["write", "com.x", "{ a = 1; "], "Could not parse: { a = 1; .  Try single-quoting it.\n"),
            (["write", "com.x", "k", "<0fb>"], "Could not parse: <0fb>.  Try single-quoting it.\n"),
            (
                ["write", "com.x", "k", "<integer>x</integer>"],
                "Could not parse: <integer>x</integer>.  Try single-quoting it.\n"
            ),
            (
                ["write", "com.x", "k", "-array", "a", "-array", "b"],
                "Cannot nest composite types (arrays and dictionaries); exiting\n"
            ),
            (
                ["write", "com.x", "k", "-dict", "a", "-dict-add"],
                "Cannot nest composite types (arrays and dictionaries); exiting\n"
            ),
            (["write", "com.x", "k", "-dict", "k1"], "Key k1 lacks a corresponding value\n"),
            (["write", "com.x", "k", "-dict-add", "-int", "3", "v"], "Dictionary keys must be strings\n"),
            (["write", "com.x", "k", "-string", "a", "b"], "Unexpected argument b; leaving defaults unchanged.\n"),
            (["write", "com.x", "k", "a", "b"], "Unexpected argument b; leaving defaults unchanged.\n"),
            (["write", "com.x", "-array", "A", "B", "C"], "Unexpected argument B; leaving defaults unchanged.\n"),
            (["write", "com.x", "k"], "\nRep argument is not a dictionary\nDefaults have not been changed.\n"),
            (["write", "com.x", "(a, b)"], "\nRep argument is not a dictionary\nDefaults have not been changed.\n"),
            (["import", "com.x"], "\nNeed a path to read from\n"),
            (["export", "com.x"], "\nNeed a path to write to\n"),
            (["read", "-app", "Safari"], "Couldn't find an application named \"Safari\"; defaults unchanged\n"),
            (["write", "-app", "Name", "k", "v"], "Couldn't find an application named \"Name\"; defaults unchanged\n"),
        ] as [([String], String)])
    func aMistakeMacOSNamesGetsItsWordsExitsOneAndChangesNothing(arguments: [String], message: String) throws {
        let result = try runBadInput(arguments)
        #expect(result.status == 1, "\(result)")
        #expect(result.standardOutput.isEmpty, "\(result)")
        #expect(result.standardError == message, "\(result)")
    }

    @Test func aFailedWriteGivesMacOSLineThenTheReason() throws {
        let fixture = try DefaultsFixture()
        // A domain whose directory is a regular file cannot be written, even by root.
        let notADirectory = fixture.directory.file("plain-file")
        try Data("x".utf8).write(to: notADirectory)
        let domain = notADirectory.appendingPathComponent("prefs").path
        let write = try fixture.defaults("write", domain, "k", "v")
        #expect(write.status == 1, "\(write)")
        #expect(write.standardOutput.isEmpty, "\(write)")
        let lines = write.standardError.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.first == "Could not write domain \(domain); exiting", "\(write)")
        #expect(lines.count == 3 && lines[1].hasPrefix("defaults: ") && lines[2].isEmpty, "\(write)")
        #expect(try Data(contentsOf: notADirectory) == Data("x".utf8))
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
}
