import Foundation
import LiveDefaults
import LiveDefaultsCommand
import LiveDefaultsTestHelpers
import TestSupport
import Testing

@testable import LiveDefaultsEtcd
@testable import LiveDefaultsEtcdClient

/// The `defaults` command on a suite kept in etcd (`etcd://…` domains), run in this process through
/// its seam against a real member: what it writes is what the library's remote suites read.
@Suite(.requiresEtcd, .serialized)
struct EtcdDefaultsCommandTests {
    /// The command with captured streams, its domains in `directory`, its environment given.
    struct Command: Sendable {
        var directory: URL
        var environment: [String: String] = [:]

        func runner(_ streams: CapturedCommandIO) -> DefaultsCommandRunner {
            let environment = environment
            let domains = CommandDomains(directory: directory, schemaDirectories: []) { domain, directory, watching in
                guard case .remote(let address) = domain else {
                    return try CommandDomains.openStore(domain, directory, watching)
                }
                return try RemoteCommandDomain(address, environment: environment) { problem in
                    streams.writeError("note: \(problem)\n")
                }
            }
            return DefaultsCommandRunner(domains: domains, io: streams.io)
        }

        /// Runs to its end, on a thread of its own: the command blocks its thread while etcd
        /// answers (on a worker of Dispatch's global queue, it would hold a thread of Swift's
        /// cooperative pool, which on Linux is that queue's).
        func run(_ arguments: [String]) async -> CommandResult {
            let command = self
            return
                (try? await onAThreadOfItsOwn {
                    let streams = CapturedCommandIO()
                    let outcome = command.runner(streams).run(arguments)
                    let status: Int32
                    if case .exit(let code) = outcome { status = code } else { status = -1 }
                    return CommandResult(
                        status: status, standardOutput: streams.standardOutput, standardError: streams.standardError)
                }) ?? CommandResult(status: -1, standardOutput: "", standardError: "")
        }
    }

    static let suite = "com.example.fleet-command"
    static let prefix = Data("/livedefaults/v1/\(suite)/".utf8)
    /// The suite's history (its audit keys), beside its settings under the prefix.
    static let history = FleetAudit.Keys(prefix: prefix).namespace

    static func address(_ server: EtcdServer) -> String { "etcd://127.0.0.1:\(server.clientPort)/\(suite)" }

    /// The suite as the library's mirror decodes it from etcd.
    static func mirrored(_ server: EtcdServer) async throws -> [String: PropertyListValue] {
        var mirror = EtcdMirror(prefix: prefix)
        let (header, kvs) = try EtcdClient(endpoints: [server.endpoint]).range(prefix: prefix)
        _ = mirror.resync(header: header, kvs: kvs)
        return mirror.values
    }

    @Test func everyValueTypeWrittenToEtcdReadsBackAsInALocalDomainAndThroughTheMirror() async throws {
        let server = try EtcdServer()
        try await server.start()
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let command = Command(directory: directory.url)
        let remote = Self.address(server)
        let cases: [([String], PropertyListValue)] = [
            (["-string", "hello world"], "hello world"),
            (["plain"], "plain"),
            (["-int", "14"], .integer(14)),
            (["-int", "18446744073709551615"], .unsignedInteger(.max)),
            (["-float", "0.5"], .real(0.5)),
            (["-bool", "YES"], .bool(true)),
            (["-date", "2024-01-01 12:00:00 +0000"], .date(Date(timeIntervalSince1970: 1_704_110_400))),
            (["-data", "deadBEEF"], .data(Data([0xDE, 0xAD, 0xBE, 0xEF]))),
            (["-array", "a", "b c", "-int", "3"], ["a", "b c", 3]),
            (["-dict", "k", "v", "n", "-bool", "yes"], ["k": "v", "n": true]),
            (["<integer>3</integer>"], .integer(3)),
            (["{ a = <00ff>; \"b c\" = d; }"], ["a": .data(Data([0, 0xFF])), "b c": "d"]),
        ]
        for (index, (arguments, stored)) in cases.enumerated() {
            let key = "key-\(index)"
            let written = await command.run(["write", remote, key] + arguments)
            #expect(written.status == 0 && written.standardError.isEmpty, "\(arguments): \(written)")
            _ = await command.run(["write", "com.example.local", key] + arguments)
            for verb in ["read", "read-type"] {
                let read = await command.run([verb, remote, key])
                let local = await command.run([verb, "com.example.local", key])
                #expect(read.status == 0, "\(arguments): \(read)")
                #expect(read.standardOutput == local.standardOutput, "\(verb) \(arguments)")
            }
            #expect(try await Self.mirrored(server)[key] == stored, "\(arguments)")
        }
        // -array-add and -dict-add start from etcd's value.
        for domain in [remote, "com.example.local"] {
            #expect(await command.run(["write", domain, "key-8", "-array-add", "d"]).status == 0)
            #expect(await command.run(["write", domain, "key-9", "-dict-add", "k", "w"]).status == 0)
        }
        #expect(try await Self.mirrored(server)["key-8"] == ["a", "b c", 3, "d"])
        #expect(try await Self.mirrored(server)["key-9"] == ["k": "w", "n": true])
        // The whole domain, as `read <domain>` prints it, matches the local domain written alike.
        #expect(
            await command.run(["read", remote]).standardOutput
                == (await command.run(["read", "com.example.local"]).standardOutput))
    }

    @Test func aKeyIsStoredInNFCAndOneTransactionWritesAWholeDomain() async throws {
        let server = try EtcdServer()
        try await server.start()
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let command = Command(directory: directory.url)
        let decomposed = "the\u{0300}me"  // "thème" with a combining grave accent
        #expect(await command.run(["write", Self.address(server), decomposed, "dark"]).status == 0)
        let (_, kvs) = try EtcdClient(endpoints: [server.endpoint]).range(prefix: Self.prefix, excluding: Self.history)
        #expect(kvs.map { $0.key?.data } == [Self.prefix + Data("thème".precomposedStringWithCanonicalMapping.utf8)])
        #expect(await command.run(["read", Self.address(server), "thème"]).standardOutput == "dark\n")

        let revisionBefore = try EtcdClient(endpoints: [server.endpoint]).range(prefix: Self.prefix).header
            .revisionValue
        #expect(await command.run(["write", Self.address(server), "{ a = 1; b = 2; }"]).status == 0)
        let (header, after) = try EtcdClient(endpoints: [server.endpoint]).range(
            prefix: Self.prefix, excluding: Self.history)
        #expect(try await Self.mirrored(server) == ["a": "1", "b": "2"])
        // Replacing the domain (two puts, one delete) was one transaction: one revision.
        #expect(header.revisionValue == revisionBefore + 1)
        #expect(Set(after.compactMap { $0.mod_revision?.value }) == [header.revisionValue])
    }

    @Test func deleteRemovesAKeyThenTheWholeSuiteAndAMissingKeyIsReported() async throws {
        let server = try EtcdServer()
        try await server.start()
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let command = Command(directory: directory.url)
        let remote = Self.address(server)
        #expect(await command.run(["write", remote, "{ a = 1; b = 2; c = 3; }"]).status == 0)
        #expect(await command.run(["delete", remote, "a"]).status == 0)
        #expect(try await Self.mirrored(server) == ["b": "2", "c": "3"])
        let missing = await command.run(["delete", remote, "a"])
        #expect(missing.status == 1)
        #expect(missing.standardError.contains("not found"), "\(missing)")
        let read = await command.run(["read", remote, "a"])
        #expect(read.status == 1)
        #expect(read.standardError.contains("(\(remote), a) does not exist"), "\(read)")
        #expect(await command.run(["delete", remote]).status == 0)
        #expect(try await Self.mirrored(server).isEmpty)
        #expect(
            try EtcdClient(endpoints: [server.endpoint]).range(prefix: Self.prefix, excluding: Self.history).kvs.isEmpty
        )
        #expect(await command.run(["read", remote]).standardError.contains("Domain \(remote) does not exist"))
    }

    @Test func explainNamesTheEndpointThePrefixAndTheRevision() async throws {
        let server = try EtcdServer()
        try await server.start()
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let command = Command(directory: directory.url)
        let remote = Self.address(server)
        #expect(await command.run(["write", remote, "theme", "dark"]).status == 0)
        let revision = try EtcdClient(endpoints: [server.endpoint]).range(prefix: Self.prefix).header.revisionValue
        let prefix = String(decoding: Self.prefix, as: UTF8.self)

        let explained = await command.run(["explain", remote, "theme"])
        #expect(explained.status == 0, "\(explained)")
        #expect(
            explained.standardOutput
                == "* suite  etcd \(server.endpoint.absoluteString), prefix \(prefix) (revision \(revision))  dark\n")
        let json = await command.run(["explain", remote, "theme", "--json"])
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [String: Any])
        let layers = try #require(document["layers"] as? [[String: Any]])
        #expect((layers.first?["revision"] as? NSNumber)?.int64Value == revision, "\(json)")
        #expect(await command.run(["explain", remote, "absent"]).status == 1)
    }

    @Test func watchJSONPrintsEachKeyOfAnotherClientsTransactionWithOldAndNewValues() async throws {
        let server = try EtcdServer()
        try await server.start()
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let command = Command(directory: directory.url)
        let remote = Self.address(server)
        #expect(await command.run(["write", remote, "{ theme = light; gone = here; }"]).status == 0)
        let streams = CapturedCommandIO()
        let outcome = command.runner(streams).run(["watch", remote, "--json"])
        guard case .watching(let session) = outcome else {
            Issue.record("watch did not start: \(streams.standardError)")
            return
        }
        do {
            #expect(streams.standardError.contains("Watching \(remote) for changes"))
            // Another client: one transaction of two puts and a deletion.
            _ = try EtcdClient(endpoints: [server.endpoint]).commit(
                puts: [
                    (Self.prefix + Data("theme".utf8), try EtcdMirror.encode("dark")),
                    (Self.prefix + Data("size".utf8), try EtcdMirror.encode(.integer(3))),
                ], deletes: [Self.prefix + Data("gone".utf8)])
            #expect(await eventually { streams.standardOutput.split(separator: "\n").count >= 3 })
        }
        withExtendedLifetime(session) {}
        let domain = "\"domain\":\"\(remote)\""
        let lines = Set(streams.standardOutput.split(separator: "\n").map(String.init))
        #expect(
            lines == [
                "{\(domain),\"key\":\"gone\",\"old\":\"here\",\"new\":null,\"origin\":\"external\"}",
                "{\(domain),\"key\":\"size\",\"old\":null,\"new\":3,\"origin\":\"external\"}",
                "{\(domain),\"key\":\"theme\",\"old\":\"light\",\"new\":\"dark\",\"origin\":\"external\"}",
            ], "\(streams.standardOutput)")
        // The same format as a local domain's watch.
        let report = WatchReport(domain: remote, key: "size", oldValue: nil, newValue: .integer(3), origin: "external")
        #expect(lines.contains(report.jsonLine))
    }

    @Test func anUnreachableEtcdIsAnErrorNamingTheEndpoint() async throws {
        let port = try EtcdServer.freePort()
        let directory = try TemporaryDirectory()
        let command = Command(directory: directory.url)
        let result = await command.run(["read", "etcd://127.0.0.1:\(port)/\(Self.suite)", "theme"])
        #expect(result.status == 1)
        #expect(result.standardError.contains("no etcd endpoint answered (http://127.0.0.1:\(port))"), "\(result)")
        let write = await command.run(["write", "etcd://127.0.0.1:\(port)/\(Self.suite)", "theme", "dark"])
        #expect(write.status == 1)
        #expect(write.standardError.contains("127.0.0.1:\(port)"), "\(write)")
    }

    @Test func aValueThatIsNotAPropertyListIsSkippedByReadsAndRepairedByDeleteOrWrite() async throws {
        let server = try EtcdServer()
        try await server.start()
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let command = Command(directory: directory.url)
        let remote = Self.address(server)
        let raw = EtcdClient(endpoints: [server.endpoint])
        let bad = Self.prefix + Data("notplist".utf8)
        #expect(await command.run(["write", remote, "good", "yes"]).status == 0)
        _ = try raw.commit(puts: [(bad, Data("this is not a plist".utf8))], deletes: [])
        let fix = "defaults delete \(remote) \"notplist\""

        // Reads of the suite skip it, naming the key and the fix; a read of another key is not its business.
        let good = await command.run(["read", remote, "good"])
        #expect(good.status == 0 && good.standardOutput == "yes\n", "\(good)")
        let whole = await command.run(["read", remote])
        #expect(whole.status == 0, "\(whole)")
        #expect(whole.standardOutput.contains("good = yes") && !whole.standardOutput.contains("notplist"), "\(whole)")
        #expect(whole.standardError.contains("skipped key \"notplist\" of \(remote)"), "\(whole)")
        #expect(whole.standardError.contains("not a property list") && whole.standardError.contains(fix), "\(whole)")
        let exported = await command.run(["export", remote, "-"])
        #expect(exported.status == 0 && exported.standardError.contains("skipped key \"notplist\""), "\(exported)")
        let streams = CapturedCommandIO()
        if case .watching(let session) = command.runner(streams).run(["watch", remote]) {
            withExtendedLifetime(session) {}
        }
        #expect(streams.standardError.contains("skipped key \"notplist\" of \(remote)"), "\(streams.standardError)")
        // Alone, it is the error, with the same sentence.
        for verb in ["read", "read-type"] {
            let alone = await command.run([verb, remote, "notplist"])
            #expect(alone.status == 1, "\(verb): \(alone)")
            #expect(alone.standardError.contains("cannot read key \"notplist\" of \(remote)"), "\(verb): \(alone)")
            #expect(alone.standardError.contains(fix), "\(verb): \(alone)")
        }
        // The repair, with the tool: delete it, or write a value over it.
        let deleted = await command.run(["delete", remote, "notplist"])
        #expect(deleted.status == 0, "\(deleted)")
        #expect(try raw.range(prefix: bad).kvs.isEmpty)
        _ = try raw.commit(puts: [(bad, Data("this is not a plist".utf8))], deletes: [])
        #expect(await command.run(["write", remote, "notplist", "-int", "1"]).status == 0)
        let repaired = await command.run(["read", remote, "notplist"])
        #expect(repaired.status == 0 && repaired.standardOutput == "1\n", "\(repaired)")
        #expect(try await Self.mirrored(server) == ["good": "yes", "notplist": 1])
        // A suite of nothing but a bad value can still be deleted whole.
        #expect(await command.run(["delete", remote]).status == 0)
        _ = try raw.commit(puts: [(bad, Data("this is not a plist".utf8))], deletes: [])
        let emptied = await command.run(["delete", remote])
        #expect(emptied.status == 0, "\(emptied)")
        #expect(try raw.range(prefix: Self.prefix, excluding: Self.history).kvs.isEmpty)
    }

    /// Each operation on an unreachable etcd, and what its failure must say: its own verb, what it was
    /// done to (the keys, or the suite) and the endpoint.
    static let operations: [(arguments: [String], says: String)] = [
        (["read", "<remote>", "theme"], "cannot read /livedefaults/v1/\(suite)/:"),
        (["read-type", "<remote>", "theme"], "cannot read /livedefaults/v1/\(suite)/:"),
        (["export", "<remote>", "-"], "cannot read /livedefaults/v1/\(suite)/:"),
        (["write", "<remote>", "theme", "dark"], "cannot write key \"theme\" of /livedefaults/v1/\(suite)/:"),
        (["write", "<remote>", "list", "-array-add", "x"], "cannot write key \"list\" of /livedefaults/v1/\(suite)/:"),
        (["write", "<remote>", "{ a = 1; }"], "cannot write /livedefaults/v1/\(suite)/:"),
        (["delete", "<remote>", "theme"], "cannot delete key \"theme\" of /livedefaults/v1/\(suite)/:"),
        (["delete", "<remote>"], "cannot delete /livedefaults/v1/\(suite)/:"),
        (["rename", "<remote>", "old", "new"], "cannot rename keys \"new\", \"old\" of /livedefaults/v1/\(suite)/:"),
        (["reset", "<remote>", "theme"], "cannot reset key \"theme\" of /livedefaults/v1/\(suite)/:"),
        (["reset", "<remote>"], "cannot reset /livedefaults/v1/\(suite)/:"),
        (["describe", "<remote>"], "cannot read /livedefaults/v1/\(suite)/:"),
        (["list-keys", "<remote>"], "cannot read /livedefaults/v1/\(suite)/:"),
        (["schema", "<remote>"], "cannot read /livedefaults/v1/\(suite)/:"),
        (["explain", "<remote>", "theme"], "cannot read /livedefaults/v1/\(suite)/:"),
    ]

    /// The verbs that only read the suite: their failure says "read".
    static let reading: Set<String> = ["read", "read-type", "export", "describe", "list-keys", "schema", "explain"]

    @Test(arguments: operations)
    func aFailureOnAnUnreachableEtcdNamesItsOwnOperationTheKeysAndTheEndpoint(
        arguments: [String], says: String
    ) async throws {
        let port = try EtcdServer.freePort()
        let directory = try TemporaryDirectory()
        let remote = "etcd://127.0.0.1:\(port)/\(Self.suite)"
        let result = await Command(directory: directory.url).run(arguments.map { $0 == "<remote>" ? remote : $0 })
        #expect(result.status == 1)
        #expect(result.standardError.contains(says), "\(result)")
        #expect(result.standardError.contains("no etcd endpoint answered (http://127.0.0.1:\(port))"), "\(result)")
        if !Self.reading.contains(arguments[0]) {
            #expect(!result.standardError.contains("cannot read"), "\(result)")
        }
    }

    /// `install-schema` into an unreachable etcd says what it could not do, in words, naming the key
    /// it writes (it said "cannot install-schema key …").
    @Test func installingASchemaIntoAnUnreachableEtcdSaysSo() async throws {
        let port = try EtcdServer.freePort()
        let directory = try TemporaryDirectory()
        let file = directory.file("schema.plist")
        try DefaultsSchema(suite: Self.suite, entries: [.init(name: "theme", type: .string, defaultValue: "light")])
            .propertyListData().write(to: file)
        let remote = "etcd://127.0.0.1:\(port)/\(Self.suite)"
        let result = await Command(directory: directory.url).run(["install-schema", file.path, remote])
        #expect(result.status == 1)
        #expect(
            result.standardError.contains(
                "cannot install the schema as key \"LiveDefaults.schema\" of /livedefaults/v1/\(Self.suite)/:"),
            "\(result)")
        #expect(result.standardError.contains("no etcd endpoint answered (http://127.0.0.1:\(port))"), "\(result)")
    }

    /// `defaults watch` on a remote suite says when etcd goes away and, once, when it answers again,
    /// after the changes made meanwhile.
    @Test func aWatchSaysOnceWhenEtcdIsLostAndOnceWhenItAnswersAgain() async throws {
        let server = try EtcdServer()
        try await server.start()
        defer { server.stop() }
        let notes = Locked<[String]>([])
        let seen = Locked<[String]>([])
        let domain = try RemoteCommandDomain(try RemoteSuiteAddress(Self.address(server)), environment: [:]) { note in
            notes.withLock { $0.append(note) }
        }
        try domain.prepare(for: .read)
        let queue = DispatchQueue(label: "watch")
        let token = domain.watchChanges(queue: queue) { change in seen.withLock { $0.append(change.key) } }
        defer { _ = token }
        let stopped = ContinuousClock.now
        server.stop()  // by its PID
        #expect(await eventually(within: 30) { notes.withLock { $0.count } == 1 })
        #expect(notes.withLock { $0.first?.hasPrefix("etcd is not reachable") ?? false }, "\(notes.withLock { $0 })")
        try await server.start()
        // A change made while etcd is back but (most likely) not yet followed again.
        _ = try EtcdClient(endpoints: [server.endpoint]).commit(
            puts: [(EtcdMirror.etcdKey("theme", prefix: Self.prefix), try EtcdMirror.encode("dark"))], deletes: [])
        #expect(await eventually(within: 30) { notes.withLock { $0.count } == 2 })
        let back = ContinuousClock.now
        let recovery = try #require(notes.withLock { $0.last })
        #expect(recovery.hasPrefix("etcd answers again after an outage of "), "\(recovery)")
        #expect(recovery.contains("following /livedefaults/v1/\(Self.suite)/ again"), "\(recovery)")
        let seconds = try #require(recovery.firstMatch(of: /outage of ([0-9.]+) s/).flatMap { Double($0.1) })
        // From the last contact: a stall check's interval (2 s) of silence before the stop, and its
        // timeout (2 s) on a loaded machine.
        #expect(seconds > 0 && seconds <= (back - stopped).seconds + 4 + 0.05, "\(recovery)")
        #expect(await eventually(within: 30) { seen.withLock { $0 } == ["theme"] })
        // A later change is no second recovery.
        _ = try EtcdClient(endpoints: [server.endpoint]).commit(
            puts: [(EtcdMirror.etcdKey("theme", prefix: Self.prefix), try EtcdMirror.encode("light"))], deletes: [])
        #expect(await eventually(within: 30) { seen.withLock { $0.count } == 2 })
        #expect(notes.withLock { $0.count } == 2, "\(notes.withLock { $0 })")
    }

    @Test func anImportIntoAnUnreachableEtcdSaysImportNamingTheKeys() async throws {
        let port = try EtcdServer.freePort()
        let directory = try TemporaryDirectory()
        let source = directory.url.appendingPathComponent("in.plist")
        try PropertyListCodec.encode(.dictionary(["b": 1, "a": 2]), format: .xml).write(to: source)
        let remote = "etcd://127.0.0.1:\(port)/\(Self.suite)"
        let result = await Command(directory: directory.url).run(["import", remote, source.path])
        #expect(result.status == 1)
        #expect(
            result.standardError.contains("cannot import keys \"a\", \"b\" of /livedefaults/v1/\(Self.suite)/:"),
            "\(result)")
        #expect(result.standardError.contains("127.0.0.1:\(port)"), "\(result)")
    }

    @Test(.requiresEtcdctl) func aReadOnlyUserReadsAndGetsAPermissionErrorOnWrite() async throws {
        let server = try await EtcdAuthTests.securedServer()
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let remote = Self.address(server)
        let admin = Command(directory: directory.url, environment: ["ETCDCTL_USER": "root:rootpw"])
        #expect(await admin.run(["write", remote, "theme", "dark"]).status == 0)
        let service = Command(
            directory: directory.url, environment: ["ETCDCTL_USER": "service", "ETCDCTL_PASSWORD": "servicepw"])
        #expect(await service.run(["read", remote, "theme"]).standardOutput == "dark\n")
        let refused = await service.run(["write", remote, "theme", "light"])
        #expect(refused.status == 1)
        #expect(
            refused.standardError.contains("permission denied: etcd user \"service\" may not write"), "\(refused)")
        // The refusal comes from the commit, after a read that worked: it names the key it refused.
        #expect(refused.standardError.contains("may not write key \"theme\" of /livedefaults/v1/"), "\(refused)")
        let deleted = await service.run(["delete", remote, "theme"])
        #expect(deleted.standardError.contains("may not delete key \"theme\" of /livedefaults/v1/"), "\(deleted)")
        let anonymous = await Command(directory: directory.url).run(["read", remote, "theme"])
        #expect(anonymous.status == 1)
        #expect(anonymous.standardError.contains("ETCDCTL_USER"), "\(anonymous)")
        let wrong = await Command(directory: directory.url, environment: ["ETCDCTL_USER": "service:nope"]).run([
            "read", remote, "theme",
        ])
        #expect(wrong.standardError.contains("wrong name or password"), "\(wrong)")
        #expect(
            try EtcdClient(endpoints: [server.endpoint], credentials: ("root", "rootpw")).range(
                prefix: Self.prefix, excluding: Self.history
            ).kvs.count == 1)
    }
}

/// `etcd://` addresses and the environment the command takes credentials from (no etcd needed).
@Suite struct RemoteSuiteAddressTests {
    @Test func theLastSegmentIsTheSuiteAndTheOthersTheRoot() throws {
        let plain = try RemoteSuiteAddress("etcd://127.0.0.1:2379/com.example.app")
        #expect(plain.suite == "com.example.app")
        #expect(plain.root == "/livedefaults/v1/")
        #expect(plain.hosts == ["127.0.0.1:2379"])
        let rooted = try RemoteSuiteAddress("etcds://a,b:23790,[::1]/livedefaults/v1/prod/com.example.app")
        #expect(rooted.scheme == "https")
        #expect(rooted.root == "/livedefaults/v1/prod/")
        #expect(rooted.hosts == ["a:2379", "b:23790", "[::1]:2379"])
        #expect(
            try rooted.endpoints(environment: [:]).map(\.absoluteString) == [
                "https://a:2379", "https://b:23790", "https://[::1]:2379",
            ])
        #expect(
            EtcdRemoteSuite.prefix(root: rooted.root, suite: rooted.suite)
                == Data("/livedefaults/v1/prod/com.example.app/".utf8))
        let fromEnvironment = try RemoteSuiteAddress("etcd:///com.example.app")
        #expect(
            try fromEnvironment.endpoints(environment: ["ETCDCTL_ENDPOINTS": "http://h1:1,h2:2"]).map(\.absoluteString)
                == ["http://h1:1", "http://h2:2"])
    }

    @Test(arguments: [
        ("etcd://127.0.0.1:2379", "names no suite"),
        ("etcd://127.0.0.1:2379/", "names no suite"),
        ("etcd://127.0.0.1:99999/s", "is not a port"),
        ("etcd://h:x/s", "is not a port"),
        ("etcd://a,,b/s", "empty endpoint"),
        ("etcd://user:pw@h/s", "ETCDCTL_USER"),
        ("etcd://h/..", "names a directory"),
    ])
    func aBadAddressIsAUsageErrorSayingWhatIsWrong(address: String, problem: String) {
        #expect(throws: CommandLineError.self) { try DefaultsCommand.parse(["read", address]) }
        do {
            _ = try DefaultsCommand.parse(["read", address])
        } catch {
            #expect(error.status == 255)
            #expect(error.problem.contains(problem), "\(error.problem)")
        }
    }

    @Test func credentialsComeFromTheEnvironmentAsEtcdctlTakesThem() throws {
        #expect(try RemoteCommandDomain.credentials(from: [:]) == nil)
        #expect(
            try RemoteCommandDomain.credentials(from: ["ETCDCTL_USER": "u:p:q"]).map { [$0.user, $0.password] } == [
                "u", "p:q",
            ])
        #expect(
            try RemoteCommandDomain.credentials(from: ["ETCDCTL_USER": "u", "ETCDCTL_PASSWORD": "p"]).map {
                [$0.user, $0.password]
            } == ["u", "p"])
        #expect(throws: RemoteSuiteAddress.AddressError.self) {
            try RemoteCommandDomain.credentials(from: ["ETCDCTL_USER": "u"])
        }
        let noEndpoint = try RemoteSuiteAddress("etcd:///s")
        #expect(throws: RemoteSuiteAddress.AddressError.self) { try noEndpoint.endpoints(environment: [:]) }
    }

    @Test func parsingGivesARemoteDomain() throws {
        let command = try DefaultsCommand.parse(["write", "etcd://h:1/com.x", "k", "-int", "3"])
        #expect(command == .write(.remote(try RemoteSuiteAddress("etcd://h:1/com.x")), key: "k", .set(.integer(3))))
    }
}

/// The built `defaults` binary on a remote suite: its run loop keeps `watch` following etcd.
@Suite(.requiresEtcd, .serialized)
struct EtcdDefaultsBinaryTests {
    /// The built `defaults`, next to the test bundle.
    static let binary: URL = {
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        while url.path != "/" {
            url.deleteLastPathComponent()
            let candidate = url.appendingPathComponent("defaults")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        return URL(fileURLWithPath: "defaults")
    }()

    /// Starts `defaults` with its output in files of `directory`, and `XDG_CONFIG_HOME` there too,
    /// so it never touches the real ~/.config.
    static func start(_ arguments: [String], in directory: borrowing TemporaryDirectory, name: String) throws -> Process
    {
        try startWithOutputInFiles(
            binary, arguments, environment: ["XDG_CONFIG_HOME": directory.path, "PATH": "/usr/bin:/bin"],
            output: directory.file(name + ".out"), errors: directory.file(name + ".err"))
    }

    static func text(_ directory: borrowing TemporaryDirectory, _ file: String) -> String {
        (try? String(contentsOf: directory.file(file), encoding: .utf8)) ?? ""
    }

    @Test func aWriteByTheBinaryReachesAWatchingBinaryAsAJSONLine() async throws {
        let server = try EtcdServer()
        try await server.start()
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let remote = "etcd://127.0.0.1:\(server.clientPort)/com.example.binary"
        let watcher = try Self.start(["watch", remote, "--json"], in: directory, name: "watch")
        defer {
            kill(watcher.processIdentifier, SIGKILL)
            watcher.waitUntilExit()
        }
        #expect(await eventually { Self.text(directory, "watch.err").contains("Watching \(remote)") })
        let writer = try Self.start(["write", remote, "theme", "-string", "dark"], in: directory, name: "write")
        writer.waitUntilExit()
        #expect(writer.terminationStatus == 0, "\(Self.text(directory, "write.err"))")
        let expected =
            "{\"domain\":\"\(remote)\",\"key\":\"theme\",\"old\":null,\"new\":\"dark\",\"origin\":\"external\"}\n"
        #expect(
            await eventually { Self.text(directory, "watch.out") == expected },
            "\(Self.text(directory, "watch.out"))")
        let reader = try Self.start(["read", remote, "theme"], in: directory, name: "read")
        reader.waitUntilExit()
        #expect(Self.text(directory, "read.out") == "dark\n")
        // Nothing was written locally.
        #expect(
            (try FileManager.default.contentsOfDirectory(atPath: directory.path)).allSatisfy { !$0.hasSuffix(".plist") }
        )
    }

    /// The client frozen for real (SIGSTOP of the watching process, its stream left open) while
    /// another client writes more than the socket buffers hold, deletes, and compacts the history:
    /// once it runs again, every key's chain of old → new is unbroken and its last value is etcd's.
    /// Depending on where the freeze catches the client, etcd either delivers the buffered events or
    /// cancels the watch with `compact_revision` (both seen): either way the output must chain.
    @Test func compactionWhileTheWatchingClientIsFrozenKeepsEveryChainUnbroken() async throws {
        let server = try EtcdServer()
        try await server.start()
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let suite = "com.example.frozen"
        let prefix = Data("/livedefaults/v1/\(suite)/".utf8)
        let remote = "etcd://127.0.0.1:\(server.clientPort)/\(suite)"
        let client = EtcdClient(endpoints: [server.endpoint])
        func put(_ key: String, _ value: String?) async throws {
            let etcdKey = prefix + Data(key.utf8)
            _ = try client.commit(
                puts: try value.map { [(etcdKey, try EtcdMirror.encode(.string($0)))] } ?? [],
                deletes: value == nil ? [etcdKey] : [])
        }
        for key in 0..<5 { try await put("k\(key)", "start") }
        let watcher = try Self.start(["watch", remote, "--json"], in: directory, name: "watch")
        defer {
            kill(watcher.processIdentifier, SIGCONT)
            kill(watcher.processIdentifier, SIGKILL)
            watcher.waitUntilExit()
        }
        #expect(await eventually { Self.text(directory, "watch.err").contains("Watching") })
        try await put("k0", "before the freeze")
        #expect(await eventually { Self.text(directory, "watch.out").contains("before the freeze") })

        kill(watcher.processIdentifier, SIGSTOP)
        let padding = String(repeating: "x", count: 8_000)
        for step in 0..<Stress.scaled(600, quick: 300) {
            let key = "k\(step % 5)"
            try await put(key, step % 7 == 6 ? nil : "\(step) \(padding)")
        }
        let head = try client.range(prefix: prefix).header.revisionValue
        try client.compact(revision: head)
        kill(watcher.processIdentifier, SIGCONT)
        try await put("done", "yes")

        var mirror = EtcdMirror(prefix: prefix)
        let (header, kvs) = try client.range(prefix: prefix)
        _ = mirror.resync(header: header, kvs: kvs)
        let keys = (0..<5).map { "k\($0)" } + ["done"]
        let expected = keys.map { key in
            mirror.values[key].flatMap { if case .string(let text) = $0 { text } else { nil } }
        }
        // Each line: {"domain":…,"key":…,"old":…,"new":…,"origin":"external"}, values strings or null.
        // The first change of a key starts from what it was when the watch began.
        func replay() throws -> (last: [String: String?], broken: [String]) {
            var last: [String: String?] = [:]
            var broken: [String] = []
            for line in Self.text(directory, "watch.out").split(separator: "\n") {
                let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                let key = try #require(object["key"] as? String)
                let previous: String?? = last[key]
                if (object["old"] as? String) != (previous ?? (key == "done" ? nil : "start")) { broken.append(key) }
                last[key] = .some(object["new"] as? String)
            }
            return (last, broken)
        }
        let caughtUp = await eventually(within: 30) {
            guard let (last, _) = try? replay() else { return false }
            return keys.map { last[$0] ?? (($0 == "done") ? nil : "start") } == expected
        }
        #expect(caughtUp, "the watch did not reach etcd's values")
        let (_, broken) = try replay()
        #expect(broken.isEmpty, "chains broke for \(broken)")
    }
}
