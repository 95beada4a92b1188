import Foundation
import LiveDefaults
import LiveDefaultsCommand
import LiveDefaultsConsole
import TestSupport
import Testing

/// The console's model in process, on a temporary directory: rows, edits through `defaults write`'s code, and
/// the events a change sends.
struct ConsoleModelTests {
    /// A suite with a schema (fontSize: integer 8…72; apiToken: secret) in a temporary directory.
    final class Fixture {
        let directory: TemporaryDirectory
        let model: ConsoleModel
        var config: URL { directory.url.appendingPathComponent("config") }
        var file: URL { config.appendingPathComponent("com.example.app.plist") }

        init() throws {
            directory = try TemporaryDirectory()
            let config = directory.url.appendingPathComponent("config")
            let schemas = directory.url.appendingPathComponent("schemas")
            try FileManager.default.createDirectory(at: config, withIntermediateDirectories: true)
            _ = try DefaultsSchema(
                suite: "com.example.app",
                entries: [
                    .init(name: "fontSize", type: .integer, summary: "Points.", range: 8...72),
                    .init(name: "apiToken", type: .string, isSecret: true),
                ]
            ).install(into: schemas)
            let defaults = try Defaults(
                suiteName: "com.example.app", directory: config, watchesFiles: false, administeredSettings: .none)
            defaults.set(14, forKey: "fontSize")
            defaults.set("s3cr3t", forKey: "apiToken")
            try defaults.synchronize()
            model = ConsoleModel(
                domains: CommandDomains(
                    directory: config, schemaDirectories: [schemas], administeredSettings: AdministeredSettings.none),
                settings: .none)
            try model.start()
        }

        deinit { model.stop() }

        func row(_ key: String) -> ConsoleJSON? {
            let rows = model.snapshot(domain: "com.example.app")["domain"]?["rows"]?.arrayValue
            return rows?.first { $0["key"]?.stringValue == key }
        }
    }

    @Test func aRowHasItsValueLayersAndSchema() throws {
        let fixture = try Fixture()
        let row = try #require(fixture.row("fontSize"))
        #expect(row["text"] == "14")
        #expect(row["layer"] == "suite")
        let schema = try #require(row["schema"])
        #expect(schema["minimum"] == "8")
        #expect(schema["maximum"] == "72")
        #expect(schema["summary"] == "Points.")
        let layers = try #require(row["layers"]?.arrayValue)
        #expect(layers.count == 1)
        #expect(layers.first?["location"]?.stringValue == fixture.file.path)
    }

    @Test func aSecretIsHiddenUntilRevealed() throws {
        let fixture = try Fixture()
        let row = try #require(fixture.row("apiToken"))
        #expect(row["text"] == "<secret>")
        #expect(!row.text.contains("s3cr3t"))
        let revealed = try #require(fixture.model.reveal(domain: "com.example.app", key: "apiToken"))
        #expect(revealed["text"] == "s3cr3t")
    }

    @Test func aRefusedEditLeavesTheFileAsItWas() throws {
        let fixture = try Fixture()
        let before = try Data(contentsOf: fixture.file)
        let problem = fixture.model.write(
            domain: "com.example.app", key: "fontSize", ConsoleModel.Edit(kind: "text", text: "500"))
        #expect(problem?.contains("fontSize") == true)
        #expect(problem?.contains("Defaults have not been changed") == true)
        #expect(try Data(contentsOf: fixture.file) == before)
        // The same rule as `defaults write`: a bare number for an integer key is converted and written.
        #expect(
            fixture.model.write(domain: "com.example.app", key: "fontSize", ConsoleModel.Edit(kind: "text", text: "20"))
                == nil)
        let written = try Defaults(suiteName: "com.example.app", directory: fixture.config, watchesFiles: false)
        #expect(written.propertyList(forKey: "fontSize") == .integer(20))
    }

    @Test func anUnknownKindOrDomainIsRefused() throws {
        let fixture = try Fixture()
        #expect(
            fixture.model.write(domain: "com.example.app", key: "k", ConsoleModel.Edit(kind: "html", text: "x")) != nil)
        #expect(
            fixture.model.write(domain: "com.example.none", key: "k", ConsoleModel.Edit(kind: "string", text: "x"))
                != nil)
    }

    @Test func anotherProcessesChangeIsSentToPages() async throws {
        let fixture = try Fixture()
        let subscription = fixture.model.broadcaster.subscribe()
        defer { subscription.cancel() }
        let hello = await next(subscription)
        #expect(hello.contains("event: hello"))
        // Another store writes the suite's file.
        let writer = try Defaults(suiteName: "com.example.app", directory: fixture.config, watchesFiles: false)
        writer.set(30, forKey: "fontSize")
        try writer.synchronize()
        var received = ""
        let deadline = Date().addingTimeInterval(30)
        func arrived() -> Bool { received.contains("\"key\":\"fontSize\"") && received.contains("\"text\":\"30\"") }
        while !arrived() && Date() < deadline { received += await next(subscription) }
        #expect(arrived(), "received: \(received)")
        #expect(received.contains("event: change"))
    }

    private func next(_ subscription: ConsoleSubscription) async -> String {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(
                    returning: String(decoding: subscription.next(maximum: 1 << 16) ?? Data(), as: UTF8.self))
            }
        }
    }
}
