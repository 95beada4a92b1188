import Foundation
import LiveDefaults
import TestSupport
import Testing

private struct RateLimit: Codable, Sendable, Equatable {
    var perSecond: Int
    var burst: Int
    var note: String?
}

private enum Region: String, Codable, CaseIterable, Sendable { case east, west }

private struct Server: Codable, Sendable, Equatable {
    var host: String
    var port: Int
    var region: Region
    var weight: Double?
}

private struct Fleet: Codable, Sendable, Equatable {
    var servers: [Server]
    var labels: [String: Int]
    var since: Date?
    var enabled: Bool
}

/// A type whose `init(from:)` refuses the probe's placeholders: its shape cannot be read.
private struct Strict: Codable, Sendable {
    var level: Int
    init(level: Int) { self.level = level }
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        level = try container.decode(Int.self, forKey: .level)
        guard level > 0 else {
            throw DecodingError.dataCorruptedError(forKey: .level, in: container, debugDescription: "not positive")
        }
    }
}

extension Defaults.Keys {
    fileprivate static let nestedRateLimit = Defaults.Key<RateLimit>(
        "rateLimit", default: RateLimit(perSecond: 40, burst: 3))
    fileprivate static let nestedFleet = Defaults.Key<Fleet?>("fleet")
    fileprivate static let nestedPorts = Defaults.Key<[Int]>("ports", default: [])
    fileprivate static let nestedStrict = Defaults.Key<Strict>("strict", default: Strict(level: 1))
}

/// Schemas all the way down: a `Codable` key's fields and elements, read from the type, written to
/// the document and read back, and the check that names the path of what does not fit.
@Suite struct NestedSchemaTests {
    static let rateLimit = DefaultsSchema.Entry(.nestedRateLimit, summary: "Requests allowed")
        .field("perSecond", summary: "Sustained rate", range: 1...10_000)

    @Test func aCodableKeysFieldsComeFromItsTypeWithOptionalityToAnyDepth() throws {
        let entry = Self.rateLimit
        #expect(entry.type == .dictionary && entry.elements == nil)
        let fields = try #require(entry.fields)
        #expect(fields.map(\.name) == ["burst", "note", "perSecond"])
        #expect(fields.map(\.type) == [.integer, .string, .integer])
        #expect(fields.map(\.isOptional) == [false, true, false], "a Swift Optional field may be absent")
        #expect(fields[2].summary == "Sustained rate" && fields[2].range == 1...10_000)

        let fleet = DefaultsSchema.Entry(.nestedFleet)
        #expect(fleet.type == .dictionary, "an optional key's wrapped type")
        let servers = try #require(fleet.fields?.first { $0.name == "servers" })
        #expect(servers.type == .array && servers.isOptional == false)
        let server = try #require(servers.elements)
        #expect(server.type == .dictionary && server.fields?.map(\.name) == ["host", "port", "region", "weight"])
        let region = try #require(server.fields?.first { $0.name == "region" })
        #expect(region.type == .string && region.choices == ["east", "west"], "an enum field's cases")
        #expect(server.fields?.first { $0.name == "weight" }?.isOptional == true)
        let labels = try #require(fleet.fields?.first { $0.name == "labels" })
        #expect(labels.type == .dictionary && labels.fields == nil && labels.elements?.type == .integer)
        #expect(
            fleet.fields?.first { $0.name == "since" }.map { ($0.type, $0.isOptional) } ?? (.any, false) == (
                .date, true
            ))

        let ports = DefaultsSchema.Entry(.nestedPorts)
        #expect(ports.type == .array && ports.elements?.type == .integer, "an empty default still has its element type")
    }

    @Test func aTypeWhoseShapeCannotBeReadIsAPlainDictionaryUnlessTheKeyDeclaresItsFields() {
        let plain = DefaultsSchema.Entry(.nestedStrict)
        #expect(plain.type == .dictionary && plain.fields == nil, "its init(from:) refuses the placeholder 0")
        let declared = DefaultsSchema.Entry(
            .nestedStrict, fields: [.init(name: "level", type: .integer, range: 1...9)])
        #expect(declared.fields == [.init(name: "level", type: .integer, range: 1...9)])
        #expect(declared.admit(["level": 0], textIsUntyped: false).mismatches.map(\.path) == ["strict.level"])
    }

    @Test func theNestedShapeSurvivesTheDocument() throws {
        let schema = DefaultsSchema(
            suite: "com.example.nested",
            entries: [Self.rateLimit, .init(.nestedFleet), .init(.nestedPorts)])
        let reread = try DefaultsSchema(propertyListData: schema.propertyListData())
        #expect(reread == schema)
        let text = """
            { suite = s; keys = { rateLimit = { type = dictionary; fields = {
                perSecond = { type = integer; range = { min = 1; max = 10; }; };
                note = { type = string; optional = YES; secret = YES; summary = "Why"; };
            }; }; tags = { type = array; elements = { type = string; choices = (a, b); }; }; }; }
            """
        let parsed = try DefaultsSchema(propertyListData: Data(text.utf8))
        let note = try #require(parsed["rateLimit"]?.fields?.first)
        #expect(note == .init(name: "note", type: .string, summary: "Why", isSecret: true, isOptional: true))
        #expect(parsed["rateLimit"]?.fields?.last?.range == 1...10)
        #expect(parsed["tags"]?.elements == .init(name: "", type: .string, choices: ["a", "b"]))
    }

    static let misfits: [(PropertyListValue, String, String)] = [
        (["perSecond": "oops", "burst": 3], "rateLimit.perSecond", "expects an integer, not a string (\"oops\")"),
        (["perSecond": 40], "rateLimit.burst", "missing"),
        (
            ["perSecond": 40, "burst": 3, "brust": 4], "rateLimit.brust",
            "is not a field of rateLimit (its fields: burst, note, perSecond)"
        ),
        (["perSecond": 0, "burst": 3], "rateLimit.perSecond", "allows only 1 to 10000 (0)"),
        (["perSecond": 40, "burst": 2.5], "rateLimit.burst", "expects an integer, and 2.5 is not a whole number"),
        ("fast", "rateLimit", "expects a dictionary, not a string (\"fast\")"),
    ]

    @Test(arguments: misfits)
    func aValueThatDoesNotFitNamesThePath(value: PropertyListValue, path: String, reason: String) {
        let mismatches = Self.rateLimit.admit(value, textIsUntyped: false).mismatches
        #expect(mismatches == [.init(path: path, reason: reason)])
    }

    @Test func anArrayElementOfTheWrongTypeNamesItsIndexAndEveryMismatchIsListed() {
        let fleet = DefaultsSchema.Entry(.nestedFleet)
        let value: PropertyListValue = [
            "servers": [
                ["host": "a", "port": 80, "region": "east"],
                ["host": "b", "port": "http", "region": "north"],
            ],
            "labels": ["x": 1, "y": "two"],
            "enabled": true,
        ]
        let mismatches = fleet.admit(value, textIsUntyped: false).mismatches
        #expect(
            mismatches == [
                .init(path: "fleet.labels.y", reason: "expects an integer, not a string (\"two\")"),
                .init(path: "fleet.servers[1].port", reason: "expects an integer, not a string (\"http\")"),
                .init(path: "fleet.servers[1].region", reason: "allows only \"east\", \"west\" (\"north\")"),
            ])
        let ports = DefaultsSchema.Entry(.nestedPorts)
        #expect(
            ports.admit([80, "http"], textIsUntyped: false).mismatches == [
                .init(path: "ports[1]", reason: "expects an integer, not a string (\"http\")")
            ])
    }

    /// Old-style text has only strings: where it is the source, each is read as its field's type.
    @Test func untypedTextIsConvertedToEachFieldsType() {
        let fleet = DefaultsSchema.Entry(.nestedFleet)
        let text: PropertyListValue = [
            "servers": [["host": "a", "port": "80", "region": "east", "weight": "0.5"]],
            "labels": ["x": "1"], "enabled": "YES", "since": "2024-01-01 12:00:00 +0000",
        ]
        let (converted, mismatches) = fleet.admit(text, textIsUntyped: true)
        #expect(mismatches.isEmpty, "\(mismatches)")
        #expect(
            converted == [
                "servers": [["host": "a", "port": 80, "region": "east", "weight": .real(0.5)]],
                "labels": ["x": 1], "enabled": true, "since": .date(Date(timeIntervalSince1970: 1_704_110_400)),
            ])
        #expect(fleet.admit(text, textIsUntyped: false).mismatches.count == 5, "typed text stays text")
    }

    @Test func aSecretFieldsValueIsNeverQuoted() {
        let entry = DefaultsSchema.Entry(.nestedRateLimit).field("note", isSecret: true)
        let mismatches = entry.admit(["perSecond": 1, "burst": 1, "note": 1234], textIsUntyped: false).mismatches
        #expect(mismatches == [.init(path: "rateLimit.note", reason: "expects a string, not an integer")])
    }

    @Test func theAppAndTheInstalledSchemaDisagreeOnAField() {
        let app = DefaultsSchema(suite: "s", entries: [Self.rateLimit])
        var changed = Self.rateLimit
        changed.fields?.removeLast()
        let installed = DefaultsSchema(suite: "s", entries: [changed])
        #expect(app.differences(from: installed) == ["the fields or elements of key \"rateLimit\" differ"])
        let summaryOnly = DefaultsSchema(suite: "s", entries: [Self.rateLimit.field("burst", summary: "Extra")])
        #expect(app.differences(from: summaryOnly).isEmpty, "summaries are text for people")
    }

    /// A stored value that does not fit (written by hand, or before the schema) reads as the default and is
    /// reported once, naming where inside it the problem is, as the command would.
    @Test func aStoredValueThatDoesNotFitIsReportedOnceWithItsPath() throws {
        let directory = try TemporaryDirectory()
        let suite = "com.example.nested-report"
        let defaults = try Defaults(suiteName: suite, directory: directory.url, watchesFiles: false)
        let reported = Locked<[String]>([])
        let reporting = DefaultsErrorReporting.listen { error in
            if error.code == .decodingFailed, error.suite == suite { reported.withLock { $0.append(error.message) } }
        }
        defer { reporting.cancel() }
        defaults.set(["perSecond": 40] as PropertyListValue, forKey: "rateLimit")
        #expect(defaults[.nestedRateLimit] == RateLimit(perSecond: 40, burst: 3))
        #expect(defaults[.nestedRateLimit] == RateLimit(perSecond: 40, burst: 3))
        defaults.set(
            [
                "servers": [
                    ["host": "a", "port": 1, "region": "east"], ["host": "b", "port": "http", "region": "west"],
                ],
                "labels": [:], "enabled": true,
            ] as PropertyListValue,
            forKey: "fleet")
        #expect(defaults[.nestedFleet] == nil)
        let messages = reported.withLock { $0 }
        #expect(messages.count == 2, "\(messages)")
        #expect(messages.first?.contains("(rateLimit.burst: missing)") == true, "\(messages)")
        #expect(messages.last?.contains("(fleet.servers[1].port: not a Int)") == true, "\(messages)")
    }
}
