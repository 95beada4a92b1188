import Foundation
import LiveDefaults
import LiveDefaultsCommand
import TestSupport
import Testing

private struct RateLimit: Codable, Sendable, Equatable {
    var perSecond: Int
    var burst: Int
    var note: String?
}

private struct Server: Codable, Sendable, Equatable {
    var host: String
    var port: Int
}

extension Defaults.Keys {
    fileprivate static let commandRateLimit = Defaults.Key<RateLimit>(
        "rateLimit", default: RateLimit(perSecond: 10, burst: 1))
    fileprivate static let commandServers = Defaults.Key<[Server]>("servers", default: [])
    fileprivate static let commandPorts = Defaults.Key<[Int]>("ports", default: [])
    fileprivate static let commandMaxConnections = Defaults.Key<Int>("maxConnections", default: 8)
    fileprivate static let commandRatio = Defaults.Key<Double>("ratio", default: 0.5)
    fileprivate static let commandEnabled = Defaults.Key<Bool>("enabled", default: false)
    fileprivate static let commandSince = Defaults.Key<Date?>("since")
    fileprivate static let commandName = Defaults.Key<String>("name", default: "")
    fileprivate static let commandBlob = Defaults.Key<Data?>("blob")
}

/// The command's checks of values inside values (a `Codable` structure's fields, an array's elements), through
/// every verb that writes, with the schema made from the app's typed keys.
@Suite struct NestedSchemaCommandTests {
    static let suite = SchemaFixture.suite

    static let schema = DefaultsSchema(
        suite: suite,
        entries: [
            .init(.commandRateLimit, summary: "Requests allowed").field("perSecond", range: 1...10_000),
            .init(.commandServers), .init(.commandPorts), .init(.commandMaxConnections), .init(.commandRatio),
            .init(.commandEnabled), .init(.commandSince), .init(.commandName), .init(.commandBlob),
        ])

    /// The user's cases, as old-style text: each refused with the path named.
    static let refusals: [(key: String, text: String, line: String)] = [
        (
            "rateLimit", "{ perSecond = oops; burst = 3; }",
            "  rateLimit.perSecond: expects an integer, not a string (\"oops\")\n"
        ),
        ("rateLimit", "{ perSecond = 40; }", "  rateLimit.burst: missing\n"),
        (
            "rateLimit", "{ perSecond = 40; burst = 3; brust = 4; }",
            "  rateLimit.brust: is not a field of rateLimit (its fields: burst, note, perSecond)\n"
        ),
        (
            "servers", "({ host = a; port = 80; }, { host = b; port = http; })",
            "  servers[1].port: expects an integer, not a string (\"http\")\n"
        ),
    ]

    private func refused(_ fixture: borrowing SchemaFixture, _ arguments: [String], line: String) throws {
        let before = try Data(contentsOf: fixture.file)
        let result = fixture.run(arguments)
        #expect(result.status == 1, "\(arguments): \(result)")
        #expect(result.standardError.contains(line), "\(arguments): \(result)")
        #expect(result.standardError.contains("does not fit the schema at \(fixture.userSchemas.path)"), "\(result)")
        #expect(result.standardError.hasSuffix("Defaults have not been changed.\n"), "\(result)")
        #expect(try Data(contentsOf: fixture.file) == before, "\(arguments): the file is byte for byte as it was")
    }

    @Test(arguments: refusals)
    func writeRefusesAValueInsideAValueNamingItsPath(key: String, text: String, line: String) throws {
        let fixture = try SchemaFixture(installing: Self.schema)
        fixture.succeed("write", Self.suite, "name", "kept")
        try refused(fixture, ["write", Self.suite, key, text], line: line)
        try refused(fixture, ["write", Self.suite, "{ \(key) = \(text); }"], line: line)
    }

    @Test(arguments: refusals)
    func importRefusesAValueInsideAValueNamingItsPath(key: String, text: String, line: String) throws {
        let fixture = try SchemaFixture(installing: Self.schema)
        fixture.succeed("write", Self.suite, "name", "kept")
        let file = fixture.directory.file("import.plist")
        try Data("{ name = changed; \(key) = \(text); }".utf8).write(to: file)
        try refused(fixture, ["import", Self.suite, file.path], line: line)
        #expect(try fixture.values() == ["name": "kept"], "no key of the import was written")
    }

    @Test func theAcceptedValuesAreStoredWithTheirFieldsTypesAndTheAppReadsThem() throws {
        let fixture = try SchemaFixture(installing: Self.schema)
        fixture.succeed("write", Self.suite, "rateLimit", "{ perSecond = 40; burst = 3; }")
        fixture.succeed("write", Self.suite, "servers", "({ host = a; port = 80; })")
        fixture.succeed("write", Self.suite, "ports", "-array", "80", "443")
        #expect(
            try fixture.values() == [
                "rateLimit": ["perSecond": 40, "burst": 3], "servers": [["host": "a", "port": 80]], "ports": [80, 443],
            ])
        let defaults = try Defaults(
            suiteName: Self.suite, directory: fixture.directory.file("config"), watchesFiles: false)
        #expect(defaults[.commandRateLimit] == RateLimit(perSecond: 40, burst: 3))
        #expect(defaults[.commandServers] == [Server(host: "a", port: 80)] && defaults[.commandPorts] == [80, 443])
        #expect(defaults.decodingError(for: .commandRateLimit) == nil)
    }

    @Test func dictAddAndArrayAddCheckTheValueTheyLeave() throws {
        let fixture = try SchemaFixture(installing: Self.schema)
        fixture.succeed("write", Self.suite, "rateLimit", "{ perSecond = 40; burst = 3; }")
        fixture.succeed("write", Self.suite, "ports", "-array", "80")
        try refused(
            fixture, ["write", Self.suite, "rateLimit", "-dict-add", "burst", "lots"],
            line: "  rateLimit.burst: expects an integer, not a string (\"lots\")\n")
        try refused(
            fixture, ["write", Self.suite, "rateLimit", "-dict-add", "brust", "4"],
            line: "  rateLimit.brust: is not a field of rateLimit")
        try refused(
            fixture, ["write", Self.suite, "ports", "-array-add", "443", "http"],
            line: "  ports[2]: expects an integer, not a string (\"http\")\n")
        fixture.succeed("write", Self.suite, "rateLimit", "-dict-add", "burst", "5", "note", "peak")
        fixture.succeed("write", Self.suite, "ports", "-array-add", "443")
        #expect(
            try fixture.values() == [
                "rateLimit": ["perSecond": 40, "burst": 5, "note": "peak"], "ports": [80, 443],
            ])
    }

    @Test func renameOntoAKeyWithFieldsChecksThem() throws {
        let fixture = try SchemaFixture(installing: Self.schema)
        fixture.succeed("write", Self.suite, "oldLimit", "-dict", "perSecond", "-int", "40")
        try refused(fixture, ["rename", Self.suite, "oldLimit", "rateLimit"], line: "  rateLimit.burst: missing\n")
        fixture.succeed("write", Self.suite, "oldLimit", "-dict-add", "burst", "-int", "2")
        fixture.succeed("rename", Self.suite, "oldLimit", "rateLimit")
        #expect(try fixture.values() == ["rateLimit": ["perSecond": 40, "burst": 2]])
    }

    /// A value given with types (XML, `-string`) keeps them: its text is not read as a number.
    @Test func typedTextInsideAValueIsNotConverted() throws {
        let fixture = try SchemaFixture(installing: Self.schema)
        fixture.succeed("write", Self.suite, "name", "kept")
        let xml = "<dict><key>perSecond</key><string>40</string><key>burst</key><integer>3</integer></dict>"
        try refused(
            fixture, ["write", Self.suite, "rateLimit", xml],
            line: "  rateLimit.perSecond: expects an integer, not a string (\"40\")\n")
        try refused(
            fixture, ["write", Self.suite, "ports", "-array", "-string", "80"],
            line: "  ports[0]: expects an integer, not a string (\"80\")\n")
    }

    /// `import` of old-style text reads each value as `write` reads the same text: a test per type.
    static let importedTypes: [(String, String, PropertyListValue)] = [
        ("maxConnections = 20;", "maxConnections", .integer(20)),
        ("ratio = 0.25;", "ratio", .real(0.25)),
        ("ratio = 2;", "ratio", .real(2)),
        ("enabled = YES;", "enabled", .bool(true)),
        ("since = \"2024-01-01 12:00:00 +0000\";", "since", .date(Date(timeIntervalSince1970: 1_704_110_400))),
        ("name = 20;", "name", "20"),
        ("blob = <0fbd77>;", "blob", .data(Data([0x0F, 0xBD, 0x77]))),
        ("ports = (80, 443);", "ports", [80, 443]),
        ("rateLimit = { perSecond = 40; burst = 3; };", "rateLimit", ["perSecond": 40, "burst": 3]),
    ]

    @Test(arguments: importedTypes)
    func importOfOldStyleTextReadsEachValueAsWriteDoes(text: String, key: String, stored: PropertyListValue) throws {
        let fixture = try SchemaFixture(installing: Self.schema)
        let file = fixture.directory.file("import.txt")
        try Data("{ \(text) }".utf8).write(to: file)
        fixture.succeed("import", Self.suite, file.path)
        #expect(try fixture.values() == [key: stored])
        let written = try SchemaFixture(installing: Self.schema)
        written.succeed("write", Self.suite, "{ \(text) }")
        #expect(try written.values() == [key: stored], "write of the same text stores the same")
    }

    @Test func importOfXMLKeepsItsTypes() throws {
        let fixture = try SchemaFixture(installing: Self.schema)
        fixture.succeed("write", Self.suite, "name", "kept")
        let file = fixture.directory.file("import.plist")
        try PropertyListCodec.encode(["maxConnections": "20"], format: .xml).write(to: file)
        let before = try Data(contentsOf: fixture.file)
        let result = fixture.run("import", Self.suite, file.path)
        #expect(result.status == 1 && result.standardError.contains("expects an integer, not a string"), "\(result)")
        #expect(try Data(contentsOf: fixture.file) == before)
    }

    @Test func describeAndSchemaShowTheNestedShape() throws {
        let fixture = try SchemaFixture(installing: Self.schema)
        let described = fixture.succeed("describe", Self.suite, "rateLimit")
        #expect(
            described.contains(
                "  type: dictionary\n  fields:\n    burst: integer\n    note: string (optional)\n"
                    + "    perSecond: integer, range 1 to 10000\n"),
            "\(described)")
        let servers = fixture.succeed("describe", Self.suite, "servers")
        #expect(
            servers.contains(
                "  type: array\n  elements: dictionary\n    fields:\n      host: string\n      port: integer\n"),
            "\(servers)")
        let json = fixture.succeed("describe", Self.suite, "rateLimit", "--json")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let fields = try #require(object["fields"] as? [String: [String: Any]], "\(json)")
        #expect(fields["note"]?["optional"] as? Bool == true && fields["burst"]?["type"] as? String == "integer")
        let document = fixture.succeed("schema", Self.suite, "--json")
        let root = try #require(try JSONSerialization.jsonObject(with: Data(document.utf8)) as? [String: Any])
        let keys = try #require(root["keys"] as? [String: [String: Any]])
        let elements = try #require(keys["servers"]?["elements"] as? [String: Any])
        #expect((elements["fields"] as? [String: Any])?.keys.sorted() == ["host", "port"], "\(document)")
        #expect(
            try DefaultsSchema(propertyListData: Data(fixture.succeed("schema", Self.suite).utf8)) == Self.schema)
    }
}
