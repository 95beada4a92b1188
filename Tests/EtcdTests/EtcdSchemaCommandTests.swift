import Foundation
import LiveDefaults
import LiveDefaultsCommand
import TestSupport
import Testing

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
}
