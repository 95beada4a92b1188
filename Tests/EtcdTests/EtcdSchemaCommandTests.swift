import Foundation
import LiveDefaults
import LiveDefaultsCommand
import LiveDefaultsPropertyList
import TestSupport
import Testing

private struct FleetRateLimit: Codable, Sendable {
    var perSecond: Int
    var burst: Int
    var note: String?
}

private struct FleetServer: Codable, Sendable {
    var host: String
    var port: Int
}

extension Defaults.Keys {
    fileprivate static let fleetRateLimit = Defaults.Key<FleetRateLimit>(
        "rateLimit", default: FleetRateLimit(perSecond: 10, burst: 1))
    fileprivate static let fleetServers = Defaults.Key<[FleetServer]>("servers", default: [])
    fileprivate static let fleetPorts = Defaults.Key<[Int]>("ports", default: [])
}

/// A fleet suite's schema kept in etcd under the suite's prefix (`LiveDefaults.schema`): installed once
/// with `defaults install-schema`, then every machine's `defaults` checks against it.
@Suite(.requiresEtcd, .serialized)
struct EtcdSchemaCommandTests {
    typealias Command = EtcdDefaultsCommandTests.Command

    static let suite = "com.example.fleet-schema"

    static let schema = DefaultsSchema(
        suite: suite,
        entries: [
            .init(name: "fontSize", type: .integer, defaultValue: 12, summary: "Text size in points", range: 8...72),
            .init(name: "theme", type: .string, defaultValue: "system", choices: ["light", "dark", "system"]),
            .init(name: "apiToken", type: .string, isSecret: true),
        ])

    @Test func theSchemaInEtcdChecksEveryMachinesWritesAndServesTheSchemaVerbs() async throws {
        let server = try EtcdServer()
        try await server.start()
        defer { server.stop() }
        let remote = "etcd://127.0.0.1:\(server.clientPort)/\(Self.suite)"
        let first = try TemporaryDirectory()
        let second = try TemporaryDirectory()
        // Two machines: their own config directories, no local schema (an empty schema search path).
        let machineA = Command(directory: first.url)
        let machineB = Command(directory: second.url)
        let file = first.file("schema.plist")
        try Self.schema.propertyListData().write(to: file)

        #expect(await machineA.run(["describe", remote]).status == 1, "no schema yet")
        let installed = await machineA.run(["install-schema", file.path, remote])
        #expect(installed.status == 0, "\(installed)")

        let refused = await machineB.run(["write", remote, "fontSize", "-string", "big"])
        #expect(refused.status == 1 && refused.standardError.contains("expects an integer, not a string"), "\(refused)")
        #expect(refused.standardError.contains("etcd key /livedefaults/v1/\(Self.suite)/LiveDefaults.schema"))
        #expect(await machineB.run(["write", remote, "theme", "purple"]).status == 1)
        #expect(await machineB.run(["write", remote, "fontSize", "14"]).status == 0, "converted to an integer")
        #expect(await machineB.run(["write", remote, "apiToken", "tok-98765"]).status == 0)
        #expect(await machineA.run(["read-type", remote, "fontSize"]).standardOutput == "Type is integer\n")

        let read = await machineA.run(["read", remote])
        #expect(read.status == 0 && !read.standardOutput.contains("tok-98765"), "\(read)")
        #expect(!read.standardOutput.contains("LiveDefaults.schema"), "the reserved key is not a setting: \(read)")
        #expect(await machineA.run(["read", remote, "apiToken", "--show-secrets"]).standardOutput == "tok-98765\n")
        for arguments in [["explain", remote, "apiToken"], ["explain", remote, "apiToken", "--json"]] {
            let explained = await machineA.run(arguments)
            #expect(explained.status == 0 && !explained.standardOutput.contains("tok-98765"), "\(explained)")
            #expect(explained.standardOutput.contains("<secret>"), "\(explained)")
        }

        let described = await machineA.run(["describe", remote, "fontSize"])
        #expect(described.standardOutput.contains("  range: 8 to 72\n  default: 12\n  value: 14\n"), "\(described)")
        #expect(await machineA.run(["list-keys", remote]).standardOutput == "apiToken\nfontSize\ntheme\n")
        let schema = await machineA.run(["schema", remote])
        #expect(try DefaultsSchema(propertyListData: Data(schema.standardOutput.utf8)) == Self.schema)
        let json = await machineA.run(["describe", remote, "--json"])
        let entries = try #require(
            try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [[String: Any]])
        #expect(entries.map { $0["key"] as? String } == ["apiToken", "fontSize", "theme"], "\(json)")
        #expect(entries[0]["value"] as? String == "<secret>" && entries[1]["value"] as? Int == 14, "\(json)")
        #expect(
            await machineA.run(["list-keys", remote, "--json"]).standardOutput
                == #"["apiToken","fontSize","theme"]"# + "\n")
        let document = await machineA.run(["schema", remote, "--json"]).standardOutput
        let object = try #require(try JSONSerialization.jsonObject(with: Data(document.utf8)) as? [String: Any])
        #expect(object["suite"] as? String == Self.suite && (object["keys"] as? [String: Any])?.count == 3)

        // The whole domain in old-style text: converted by the schema, which stays in etcd.
        let whole = await machineB.run(["write", remote, "{ fontSize = 20; theme = light; apiToken = tok-98765; }"])
        #expect(whole.status == 0, "\(whole)")
        #expect(await machineA.run(["read-type", remote, "fontSize"]).standardOutput == "Type is integer\n")
        let kept = await machineA.run(["schema", remote])
        #expect(try DefaultsSchema(propertyListData: Data(kept.standardOutput.utf8)) == Self.schema, "\(kept)")
        #expect(
            await machineB.run(["reset", remote, "theme", "--json"]).standardOutput == #"{"reset":["theme"]}"# + "\n")
        #expect(await machineA.run(["read", remote, "theme"]).status == 1, "back to its default")

        let reset = await machineB.run(["reset", remote, "--json"])
        #expect(reset.standardOutput == #"{"reset":["apiToken","fontSize"]}"# + "\n", "\(reset)")
        #expect(await machineA.run(["list-keys", remote]).status == 0)
        let after = await machineA.run(["read", remote])
        #expect(after.status == 1, "only the schema is left, and it is not a setting: \(after)")
    }

    /// Values inside values in an `etcd://` suite: the command checks them against the schema in etcd as it does
    /// for a file, through every verb that writes, and a refusal leaves etcd as it was.
    @Test func fieldsAndElementsAreCheckedInAnEtcdSuiteByEveryVerbThatWrites() async throws {
        let server = try EtcdServer()
        try await server.start()
        defer { server.stop() }
        let suite = "com.example.fleet-nested"
        let remote = "etcd://127.0.0.1:\(server.clientPort)/\(suite)"
        let directory = try TemporaryDirectory()
        let machine = Command(directory: directory.url)
        let schema = DefaultsSchema(
            suite: suite, entries: [.init(.fleetRateLimit), .init(.fleetServers), .init(.fleetPorts)])
        let file = directory.file("schema.plist")
        try schema.propertyListData().write(to: file)
        #expect(await machine.run(["install-schema", file.path, remote]).status == 0)
        #expect(await machine.run(["write", remote, "rateLimit", "{ perSecond = 40; burst = 3; }"]).status == 0)
        #expect(await machine.run(["write", remote, "ports", "-array", "80"]).status == 0)
        #expect(await machine.run(["write", remote, "oldLimit", "-dict", "perSecond", "-int", "1"]).status == 0)

        let importFile = directory.file("import.txt")
        let refusals: [([String], String)] = [
            (
                ["write", remote, "rateLimit", "{ perSecond = oops; burst = 3; }"],
                "  rateLimit.perSecond: expects an integer, not a string (\"oops\")\n"
            ),
            (["write", remote, "rateLimit", "{ perSecond = 40; }"], "  rateLimit.burst: missing\n"),
            (
                ["write", remote, "rateLimit", "{ perSecond = 40; burst = 3; brust = 4; }"],
                "  rateLimit.brust: is not a field of rateLimit"
            ),
            (
                ["write", remote, "servers", "({ host = a; port = 80; }, { host = b; port = http; })"],
                "  servers[1].port: expects an integer, not a string (\"http\")\n"
            ),
            (["write", remote, "{ rateLimit = { perSecond = 40; }; }"], "  rateLimit.burst: missing\n"),
            (["import", remote, importFile.path], "  servers[0].port: expects an integer, not a string (\"x\")\n"),
            (["write", remote, "rateLimit", "-dict-add", "burst", "lots"], "  rateLimit.burst: expects an integer"),
            (["write", remote, "ports", "-array-add", "http"], "  ports[1]: expects an integer, not a string"),
            (["rename", remote, "oldLimit", "rateLimit"], "  rateLimit.burst: missing\n"),
        ]
        try Data("{ ports = (1); servers = ({ host = a; port = x; }); }".utf8).write(to: importFile)
        let before = await machine.run(["export", remote, "-"])
        #expect(before.status == 0 && before.standardOutput.contains("<key>perSecond</key>"), "\(before)")
        for (arguments, line) in refusals {
            let result = await machine.run(arguments)
            #expect(result.status == 1 && result.standardError.contains(line), "\(arguments): \(result)")
            #expect(result.standardError.contains("etcd key /livedefaults/v1/\(suite)/LiveDefaults.schema"))
            let after = await machine.run(["export", remote, "-"])
            #expect(after.standardOutput == before.standardOutput, "\(arguments): etcd is as it was")
        }

        try Data("{ servers = ({ host = a; port = 80; }); ports = (80, 443); }".utf8).write(to: importFile)
        #expect(await machine.run(["import", remote, importFile.path]).status == 0)
        #expect(await machine.run(["write", remote, "rateLimit", "-dict-add", "burst", "5"]).status == 0)
        let read = await machine.run(["read", remote])
        #expect(read.standardOutput.contains("burst = 5;"), "\(read)")
        #expect(await machine.run(["read-type", remote, "ports"]).standardOutput == "Type is array\n")
        let exported = await machine.run(["export", remote, "-"]).standardOutput
        let values = try #require(try PropertyListCodec.decode(Data(exported.utf8)).value.dictionaryValue)
        #expect(values["ports"] == [80, 443] && values["servers"] == [["host": "a", "port": 80]], "\(values)")
        #expect(values["rateLimit"] == ["perSecond": 40, "burst": 5], "\(values)")
    }
}
