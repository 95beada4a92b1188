import Foundation
import LiveDefaults
import LiveDefaultsCommand
import LiveDefaultsConsole
import Synchronization
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

    // MARK: History and rollback

    /// The page's history of `key`: its entries, newest first.
    private func entries(_ fixture: Fixture, _ key: String, revealing: Bool = false) throws -> [ConsoleJSON] {
        let history = try #require(fixture.model.history(domain: "com.example.app", key: key, revealing: revealing))
        return try #require(history["entries"]?.arrayValue, "history: \(history.text)")
    }

    /// A writer renames the suite file before it appends the change's record, under the suite's lock;
    /// the page redraws a key's history as soon as it is told of the change: the console's read waits
    /// for the lock's holder, so it shows the change.
    @Test func aKeysHistoryWaitsForTheWriterThatHoldsTheSuitesLock() async throws {
        let fixture = try Fixture()
        // The test is the writer, between its rename and its append: it holds the suite's lock.
        let lock = open(fixture.file.path + ".lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        #expect(lock >= 0 && flock(lock, LOCK_EX) == 0)
        var info = stat()
        #expect(fstat(lock, &info) == 0)
        let model = fixture.model
        // On a thread of its own, not a task: the read blocks on the lock, and a task would hold one
        // of the cooperative pool's few threads (on 2 cores, under the thread sanitizer with every
        // suite running, it did not start within the wait below).
        let result = Mutex<ConsoleJSON??>(nil)
        Thread.detachNewThread {
            let history = model.history(domain: "com.example.app", key: "fontSize")
            result.withLock { $0 = .some(history) }
        }
        // The read waits on the lock: /proc/locks lists it as blocked (`->`) on the lock file.
        func waiting() -> Bool {
            let locks = (try? String(contentsOfFile: "/proc/locks", encoding: .utf8)) ?? ""
            return locks.split(separator: "\n").contains { $0.contains("->") && $0.contains(":\(info.st_ino) ") }
        }
        let blocked = await eventually(within: 20) { waiting() }
        #expect(blocked, "the history was read without waiting for the suite's lock")
        let log = HistoryLog(suitePath: fixture.file.path, suite: "com.example.app")
        let appender = try #require(log.openForAppending())
        appender.append(
            [
                HistoryBatch(
                    time: 1, writer: nil, marker: nil,
                    changes: [
                        HistoryChange(key: "fontSize", oldValue: .integer(14), newValue: .integer(30), origin: .outside)
                    ])
            ], retention: .standard)
        #expect(flock(lock, LOCK_UN) == 0)
        close(lock)
        #expect(await eventually { result.withLock { $0 != nil } }, "the history read did not end")
        let history = try #require(result.withLock { $0 } ?? nil)
        let first = try #require(history["entries"]?.arrayValue?.first)
        #expect(first["new"] == "30", "\(history.text)")
    }

    @Test func aKeysHistoryIsNewestFirstWithWhoWroteIt() throws {
        let fixture = try Fixture()
        let edit = ConsoleModel.Edit(kind: "text", text: "20")
        #expect(fixture.model.write(domain: "com.example.app", key: "fontSize", edit) == nil)
        let entries = try entries(fixture, "fontSize")
        #expect(entries.count == 2)
        #expect(entries.first?["old"] == "14")
        #expect(entries.first?["new"] == "20")
        // The console wrote it, in this process: its pid and program, as `defaults history` names a writer.
        let who = try #require(entries.first?["who"]?.stringValue)
        #expect(who.contains(" pid \(getpid()): ") && who.hasSuffix(CommandLine.arguments[0]), "\(who)")
        #expect(entries.last?["old"] == "(none)")
        #expect(entries.last?["new"] == "14")
        #expect(entries.allSatisfy { $0["id"]?.integerValue != nil && $0["origin"]?.stringValue?.isEmpty == false })
        #expect(fixture.model.history(domain: "com.example.none", key: "fontSize") == nil)
    }

    @Test func aSecretsHistoryIsRedactedUnlessRevealed() throws {
        let fixture = try Fixture()
        let hidden = try entries(fixture, "apiToken")
        #expect(hidden.first?["new"] == "<secret>")
        #expect(!ConsoleJSON.array(hidden).text.contains("s3cr3t"))
        #expect(try entries(fixture, "apiToken", revealing: true).first?["new"] == "s3cr3t")
    }

    @Test func rollingBackToAnEntryRestoresTheValueItSet() throws {
        let fixture = try Fixture()
        for text in ["20", "30"] {
            #expect(
                fixture.model.write(
                    domain: "com.example.app", key: "fontSize", ConsoleModel.Edit(kind: "text", text: text)) == nil)
        }
        let twenty = try #require(try entries(fixture, "fontSize").first { $0["new"] == "20" }?["id"]?.integerValue)
        let report = try fixture.model.rollBack(domain: "com.example.app", key: "fontSize", toEntry: UInt64(twenty))
            .get()
        #expect(report.contains("fontSize: 30 → 20"))
        let written = try Defaults(suiteName: "com.example.app", directory: fixture.config, watchesFiles: false)
        #expect(written.propertyList(forKey: "fontSize") == .integer(20))
        let newest = try #require(try entries(fixture, "fontSize").first)
        #expect(newest["origin"] == "rollback")
        #expect(newest["new"] == "20")
    }

    @Test func aRefusedRollbackLeavesTheFileAsItWas() throws {
        let fixture = try Fixture()
        // A value the schema refuses, written past it (a store that does not know the schema), then a good one.
        let other = try Defaults(
            suiteName: "com.example.app", directory: fixture.config, watchesFiles: false, administeredSettings: .none)
        other.set(100, forKey: "fontSize")
        try other.synchronize()
        #expect(
            fixture.model.write(domain: "com.example.app", key: "fontSize", ConsoleModel.Edit(kind: "text", text: "20"))
                == nil)
        let hundred = try #require(try entries(fixture, "fontSize").first { $0["new"] == "100" }?["id"]?.integerValue)
        let before = try Data(contentsOf: fixture.file)
        let refused = fixture.model.rollBack(domain: "com.example.app", key: "fontSize", toEntry: UInt64(hundred))
        #expect(throws: ConsoleError.self) { try refused.get() }
        #expect(try Data(contentsOf: fixture.file) == before)
        // An entry the history does not have (or no longer has).
        let missing = fixture.model.rollBack(domain: "com.example.app", key: "fontSize", toEntry: 9999)
        #expect(throws: ConsoleError.self) { try missing.get() }
        #expect(try Data(contentsOf: fixture.file) == before)
    }

    @Test func theRollbackRouteNeedsTheTokenAndTheOriginAndShowsARefusal() throws {
        let fixture = try Fixture()
        let app = ConsoleApp(model: fixture.model, access: ConsoleAccess(token: "t0ken", port: 8765))
        #expect(
            fixture.model.write(domain: "com.example.app", key: "fontSize", ConsoleModel.Edit(kind: "text", text: "20"))
                == nil)
        let first = try #require(try entries(fixture, "fontSize").last?["id"]?.integerValue)
        func post(entry: Int64, token: String? = "t0ken", origin: String? = "http://127.0.0.1:8765") -> ConsoleResponse
        {
            var headers = ["Host": "127.0.0.1:8765", "Content-Type": "application/json"]
            if let origin { headers["Origin"] = origin }
            return app.handle(
                ConsoleRequest(
                    method: "POST", path: "/api/rollback", headers: headers,
                    cookies: token.map { ["livedefaults-console-8765": $0] } ?? [:],
                    body: Data(#"{"domain":"com.example.app","key":"fontSize","entry":\#(entry)}"#.utf8)))
        }
        let before = try Data(contentsOf: fixture.file)
        #expect(post(entry: first, token: nil).status == 403)
        #expect(post(entry: first, origin: "http://evil.example").status == 403)
        #expect(post(entry: first, origin: nil).status == 403)
        #expect(post(entry: 9999).status == 422)
        #expect(try Data(contentsOf: fixture.file) == before)
        #expect(post(entry: first).status == 200)
        let written = try Defaults(suiteName: "com.example.app", directory: fixture.config, watchesFiles: false)
        #expect(written.propertyList(forKey: "fontSize") == .integer(14))
        // The history is read with the token; it is a GET, so no origin is needed.
        let history = app.handle(
            ConsoleRequest(
                method: "GET", path: "/api/history", query: ["domain": "com.example.app", "key": "fontSize"],
                headers: ["Host": "127.0.0.1:8765"], cookies: ["livedefaults-console-8765": "t0ken"]))
        #expect(history.status == 200)
        let refused = app.handle(
            ConsoleRequest(
                method: "GET", path: "/api/history", query: ["domain": "com.example.app", "key": "fontSize"],
                headers: ["Host": "127.0.0.1:8765"]))
        #expect(refused.status == 403)
    }

    /// The subscription's next event; its wait blocks, so on a thread of its own.
    private func next(_ subscription: ConsoleSubscription) async -> String {
        (try? await onAThreadOfItsOwn {
            String(decoding: subscription.next(maximum: 1 << 16) ?? Data(), as: UTF8.self)
        }) ?? ""
    }
}
