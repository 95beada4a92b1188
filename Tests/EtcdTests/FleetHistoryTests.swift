import Foundation
import LiveDefaults
import LiveDefaultsCommand
import LiveDefaultsPropertyList
import LiveDefaultsTestHelpers
import TestSupport
import Testing

@testable import LiveDefaultsEtcd
@testable import LiveDefaultsEtcdClient

/// A fleet suite's history (docs/design.md, "History: a fleet suite's audit keys"): audit keys
/// written in each change's own transaction, against a real member — by the library, the built
/// `defaults` binary as two machines, and the command in this process.
@Suite(.requiresEtcd, .serialized)
struct FleetHistoryTests {
    typealias Command = EtcdDefaultsCommandTests.Command

    /// Runs the built `defaults` as the machine whose ID `machineID` holds, to its end.
    static func runBinary(
        _ arguments: [String], machineID: String, in directory: borrowing TemporaryDirectory,
        environment: [String: String] = [:]
    ) throws -> (status: Int32, output: String, errors: String) {
        let file = directory.file("machine-id-\(machineID)")
        try Data((machineID + "\n").utf8).write(to: file)
        let name = "run-" + UUID().uuidString.prefix(8)
        let process = try startWithOutputInFiles(
            EtcdDefaultsBinaryTests.binary, arguments,
            environment: [
                "XDG_CONFIG_HOME": directory.path, "PATH": "/usr/bin:/bin", "LIVEDEFAULTS_MACHINE_ID_FILE": file.path,
            ]
            .merging(environment) { _, given in given },
            output: directory.file(name + ".out"), errors: directory.file(name + ".err"))
        process.waitUntilExit()
        return (
            process.terminationStatus, EtcdDefaultsBinaryTests.text(directory, name + ".out"),
            EtcdDefaultsBinaryTests.text(directory, name + ".err")
        )
    }

    static func address(_ scenario: FleetScenario) -> String {
        "etcd://127.0.0.1:\(scenario.server.clientPort)/\(scenario.name)"
    }

    /// The etcd keys of the suite's history entries.
    static func entryKeys(_ scenario: FleetScenario) throws -> [String] {
        let entries = FleetAudit.Keys(prefix: scenario.prefix).entries
        return try scenario.raw.range(prefix: entries).kvs.compactMap {
            $0.key.map { String(decoding: $0.data, as: UTF8.self) }
        }
    }

    @Test func twoHostsWriteOneSuiteAndTheHistoryNamesTheWriterOfEachChange() async throws {
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        let directory = try TemporaryDirectory()
        let remote = Self.address(scenario)
        let hostA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        let hostB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
        let first = try Self.runBinary(["write", remote, "theme", "-string", "dark"], machineID: hostA, in: directory)
        #expect(first.status == 0, "\(first.errors)")
        let second = try Self.runBinary(["write", remote, "theme", "light"], machineID: hostB, in: directory)
        #expect(second.status == 0, "\(second.errors)")
        let removal = try Self.runBinary(["delete", remote, "theme"], machineID: hostA, in: directory)
        #expect(removal.status == 0, "\(removal.errors)")
        // And this process, through the API, as a third writer.
        let defaults = try Defaults.fleet(scenario.suite())
        let connection = try #require(defaults.fleetConnection)
        #expect(await eventually(within: 30) { connection.state.isLive })
        defaults.set(14, forKey: "fontSize")
        defaults.set("blue", forKey: "theme")
        try await connection.synchronize()

        let history = try defaults.history()
        #expect(history.map(\.id) == [1, 2, 3, 4, 5], "\(history)")
        let theme = try defaults.history(forKey: "theme")
        #expect(theme.map(\.oldValue) == [nil, "dark", "light", nil])
        #expect(theme.map(\.newValue) == ["dark", "light", nil, "blue"])
        #expect(theme.map { $0.writer?.machineID } == [hostA, hostB, hostA, Defaults.Host.current.identifier])
        #expect(theme.map(\.origin) == [.command, .command, .command, .program])
        #expect(theme[0].writer?.command == ["write", remote, "theme", "-string", "dark"])
        #expect(theme[2].writer?.command == ["delete", remote, "theme"])
        #expect(theme[3].writer?.processID == getpid() && theme[3].writer?.command == [])
        #expect(theme.allSatisfy { $0.writer?.userID == geteuid() && $0.suite == scenario.name })
        #expect(history.first { $0.key == "fontSize" }?.newValue == .integer(14))
        // The command shows the same, with each writer's machine.
        let shown = try Self.runBinary(["history", remote, "theme", "--json"], machineID: hostB, in: directory)
        #expect(shown.status == 0, "\(shown.errors)")
        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(shown.output.utf8)) as? [[String: Any]], "\(shown)")
        #expect(
            json.map { ($0["writer"] as? [String: Any])?["machineID"] as? String } == theme.map { $0.writer?.machineID }
        )
    }

    @Test func theOldValueRecordedIsTheValueTheTransactionReplacedEvenWhenTheWriterWasBehind() async throws {
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        let remote = EtcdRemoteSuite(try scenario.suite())
        try remote.commit(set: ["mode": "a"], remove: [])
        // The writer read "a"; then etcdctl changed it to "b" (unaudited), then another writer to "c".
        let stale = try remote.read()
        try await scenario.put(["mode": "b"])
        try remote.commit(set: ["mode": "d"], remove: [], over: stale)
        let older = try remote.read()
        try await scenario.put(["mode": "e"])
        try remote.commit(set: ["mode": "f"], remove: [], over: stale)
        try remote.commit(set: ["mode": "g"], remove: [], over: older)
        let entries = try remote.history().entries
        #expect(entries.map(\.oldValue) == [nil, "b", "e", "f"], "\(entries)")
        #expect(entries.map(\.newValue) == ["a", "d", "f", "g"])
        #expect(entries.map(\.id) == [1, 2, 3, 4])
        // A fleet store behind etcd writes the same way: many writers, one chain.
        let first = try Defaults.fleet(scenario.suite())
        let second = try Defaults.fleet(scenario.suite(variant: 1, sharesCache: false))
        let connection = try #require(first.fleetConnection)
        let secondConnection = try #require(second.fleetConnection)
        #expect(connection.store !== secondConnection.store)
        #expect(await eventually(within: 30) { connection.state.isLive && secondConnection.state.isLive })
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (writer, connection) in [(first, connection), (second, secondConnection)] {
                group.addTask {
                    for round in 0..<15 {
                        writer.set("\(round)-\(writer === first ? "first" : "second")", forKey: "mode")
                        try await connection.synchronize()
                    }
                }
            }
            try await group.waitForAll()
        }
        let chain = try remote.history().entries.filter { $0.key == "mode" && $0.id >= 4 }
        for (before, after) in zip(chain, chain.dropFirst()) {
            #expect(after.oldValue == before.newValue, "\(before) → \(after)")
            #expect(after.id == before.id + 1)
        }
        #expect(chain.count == 1 + 30)
        #expect(chain.last?.newValue == (try await scenario.etcdValues())["mode"])
    }

    @Test func compareAndSetUpdatesAndMigrationsAreRecordedWithTheirOrigin() async throws {
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        let defaults = try Defaults.fleet(scenario.suite())
        let connection = try #require(defaults.fleetConnection)
        #expect(await eventually(within: 30) { connection.state.isLive })
        for _ in 0..<3 {
            try await connection.update("launches") { old in
                if case .integer(let count)? = old { .integer(count + 1) } else { 1 }
            }
        }
        // Another writer moves the head first: the update starts from a head the mirror may not have yet.
        let other = EtcdRemoteSuite(try scenario.suite())
        try other.commit(set: ["theme": "dark"], remove: [])
        try await connection.update("launches") { old in
            if case .integer(let count)? = old { .integer(count + 1) } else { 1 }
        }
        try scenario.suite().migrate(to: 1) { step in step.rename("launches", to: "launchCount") }
        let entries = try defaults.history()
        let launches = entries.filter { $0.key == "launches" }
        #expect(launches.map(\.newValue) == [1, 2, 3, 4, nil], "\(entries)")
        #expect(launches.map(\.oldValue) == [nil, 1, 2, 3, 4])
        #expect(launches.prefix(4).allSatisfy { $0.origin == .program })
        #expect(launches.last?.origin == .migration)
        let renamed = try #require(entries.first { $0.key == "launchCount" })
        #expect(renamed.origin == .migration && renamed.oldValue == nil && renamed.newValue == 4)
        #expect(entries.map(\.id) == Array(1...UInt64(entries.count)))
    }

    @Test func afterEtcdctlCompactTheFleetHistoryIsStillComplete() async throws {
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        let defaults = try Defaults.fleet(scenario.suite())
        let connection = try #require(defaults.fleetConnection)
        #expect(await eventually(within: 30) { connection.state.isLive })
        for round in 1...6 {
            defaults.set(round, forKey: "level")
            if round % 2 == 0 { defaults.removeObject(forKey: "flag") } else { defaults.set(true, forKey: "flag") }
            try await connection.synchronize()
        }
        let before = try defaults.history()
        #expect(before.count == 12)
        let revision = try await scenario.revision()
        try scenario.server.control(["compact", String(revision)])
        // Old revisions are gone: a read at one fails.
        #expect(throws: (any Error).self) {
            let _: EtcdRangeResponse = try scenario.raw.call(
                "/v3/kv/range", EtcdRangeRequest(key: EtcdBytes(scenario.prefix), revision: EtcdInt64(2)))
        }
        let after = try defaults.history()
        #expect(after == before)
        #expect(after.filter { $0.key == "level" }.map(\.newValue) == (1...6).map { .integer(Int64($0)) })
        #expect(after.filter { $0.key == "level" }.map(\.oldValue) == [nil] + (1...5).map { .integer(Int64($0)) })
        #expect(after.filter { $0.key == "flag" }.map(\.newValue) == [true, nil, true, nil, true, nil])
        // A rollback still reaches back past the compaction.
        let firstLevel = try #require(after.first { $0.key == "level" })
        let rolled = try defaults.rollBack("level", to: .entry(firstLevel.id))
        let now = try defaults.history()
        #expect(defaults.integer(forKey: "level") == 1, "\(rolled) \(now)")
    }

    @Test func theRetentionBoundTheOperatorSetsHolds() async throws {
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        let keys = FleetAudit.Keys(prefix: scenario.prefix)
        try scenario.server.control(["put", String(decoding: keys.retention, as: UTF8.self), "3"])
        let defaults = try Defaults.fleet(scenario.suite())
        let connection = try #require(defaults.fleetConnection)
        #expect(await eventually(within: 30) { connection.state.isLive })
        for round in 1...10 {
            defaults.set(round, forKey: "level")
            try await connection.synchronize()
            #expect(try Self.entryKeys(scenario).count == min(round, 3))
        }
        let history = try defaults.history()
        #expect(history.map(\.id) == [8, 9, 10])
        #expect(history.map(\.newValue) == [8, 9, 10])
        // A point whose later changes were pruned is refused, and nothing changes.
        #expect(throws: DefaultsError.self) { try defaults.rollBack("level", to: .entry(3)) }
        #expect(defaults.integer(forKey: "level") == 10)
        // The bound moved up: nothing more is pruned until the history reaches it.
        try scenario.server.control(["put", String(decoding: keys.retention, as: UTF8.self), "5"])
        #expect(await eventually { connection.backend.follower.auditBase(for: []).maxEntries == 5 })
        for round in 11...14 {
            defaults.set(round, forKey: "level")
            try await connection.synchronize()
        }
        #expect(try defaults.history().map(\.id) == [10, 11, 12, 13, 14])
    }

    @Test func aFleetRollbackRestoresValueAndTypeAndEveryObserverIsTold() async throws {
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        let directory = try TemporaryDirectory()
        let remote = Self.address(scenario)
        let defaults = try Defaults.fleet(scenario.suite())
        let connection = try #require(defaults.fleetConnection)
        #expect(await eventually(within: 30) { connection.state.isLive })
        // Another machine's store in this process, and a `defaults watch` in another process.
        let other = try scenario.localDefaults()
        let otherConnection = other.addFleetSuite(try scenario.suite(variant: 1, sharesCache: false))
        #expect(await eventually(within: 30) { otherConnection.state.isLive })
        let otherLog = ChangeLog(other)
        let watcher = try EtcdDefaultsBinaryTests.start(["watch", remote, "--json"], in: directory, name: "watch")
        defer {
            kill(watcher.processIdentifier, SIGKILL)
            watcher.waitUntilExit()
        }
        #expect(await eventually { EtcdDefaultsBinaryTests.text(directory, "watch.err").contains("Watching") })

        defaults.set(12, forKey: "size")
        try await connection.synchronize()
        defaults.set("big", forKey: "size")
        try await connection.synchronize()
        defaults.set(["a", 1], forKey: "list")
        try await connection.synchronize()
        #expect(await eventually { other.propertyList(forKey: "size") == "big" })
        // A schema that refuses the old value refuses the rollback: nothing changes.
        let schema = DefaultsSchema(suite: scenario.name, entries: [.init(name: "size", type: .string)])
        #expect(throws: DefaultsError.self) { try defaults.rollBack(to: .entry(1), schema: schema) }
        #expect(defaults.propertyList(forKey: "size") == "big")

        let changed = try defaults.rollBack(to: .entry(1))
        #expect(Set(changed) == ["size", "list"])
        #expect(defaults.propertyList(forKey: "size") == .integer(12))
        #expect(defaults.propertyList(forKey: "list") == nil)
        #expect(try await scenario.etcdValues()["size"] == .integer(12))
        let last = try defaults.history().suffix(2)
        #expect(last.allSatisfy { $0.origin == .rollback })
        #expect(last.first { $0.key == "size" }.map { [$0.oldValue, $0.newValue] } == [.string("big"), .integer(12)])
        // Told on the other machine, with old and new values and the type restored.
        #expect(
            await eventually {
                otherLog.of("size").last.map { $0.oldValue == "big" && $0.newValue == .integer(12) } ?? false
            }, "\(otherLog.all)")
        #expect(other.propertyList(forKey: "size") == .integer(12))
        #expect(otherLog.of("list").last?.newValue == nil)
        #expect(otherLog.brokenChains().isEmpty)
        // And in the other process.
        let line = "{\"domain\":\"\(remote)\",\"key\":\"size\",\"old\":\"big\",\"new\":12,\"origin\":\"external\"}"
        #expect(
            await eventually { EtcdDefaultsBinaryTests.text(directory, "watch.out").contains(line) },
            "\(EtcdDefaultsBinaryTests.text(directory, "watch.out")) \(EtcdDefaultsBinaryTests.text(directory, "watch.err"))"
        )

        // The command rolls back too: a new change, recorded as a rollback by the command.
        let rolled = try Self.runBinary(["rollback", remote, "size", "--to", "2"], machineID: "c0ffee", in: directory)
        #expect(rolled.status == 0, "\(rolled.errors)")
        #expect(await eventually { defaults.propertyList(forKey: "size") == "big" })
        let entry = try #require(try defaults.history(forKey: "size").last)
        #expect(entry.origin == .rollback && entry.writer?.machineID == "c0ffee")
        #expect(entry.oldValue == .integer(12) && entry.newValue == "big")
    }

    /// The watch behind this process's own writes (its follower stopped, as a watch that has not
    /// delivered yet): each write's answer keeps the writes before it, so reads and a rollback's
    /// plan start from every value this process wrote (docs/design.md, "Fleet settings: the
    /// remote store", "Write's answer"). Before, a write's answer laid its changes over a mirror
    /// that lacked the previous one, and reads went back to it.
    @Test func aRollbackPlansFromEveryWriteOfThisProcessWhileTheWatchIsBehind() async throws {
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        let defaults = try Defaults.fleet(scenario.suite())
        let connection = try #require(defaults.fleetConnection)
        #expect(await eventually(within: 30) { connection.state.isLive })
        let follower = connection.backend.follower
        defaults.set(12, forKey: "size")
        try await connection.synchronize()
        #expect(await eventually { follower.values["size"] == .integer(12) })
        // The watch brings nothing more: the mirror stays at the first write.
        follower.stop()
        defaults.set("big", forKey: "size")
        try await connection.synchronize()
        defaults.set(["a", 1], forKey: "list")
        try await connection.synchronize()
        #expect(follower.values["size"] == .integer(12))
        #expect(defaults.propertyList(forKey: "size") == "big")
        #expect(defaults.propertyList(forKey: "list") == ["a", 1])
        // The plan includes "size" (from "big" back to 12), which this schema refuses.
        let schema = DefaultsSchema(suite: scenario.name, entries: [.init(name: "size", type: .string)])
        let refusal = #expect(throws: DefaultsError.self) { try defaults.rollBack(to: .entry(1), schema: schema) }
        #expect(refusal?.code == .schemaMismatch)
        #expect(defaults.propertyList(forKey: "size") == "big")
        #expect(try Set(defaults.rollBack(to: .entry(1))) == ["size", "list"])
        #expect(defaults.propertyList(forKey: "size") == .integer(12))
        #expect(defaults.propertyList(forKey: "list") == nil)
        #expect(try await scenario.etcdValues() == ["size": .integer(12)])
        // Following again, the store shows etcd's values: the same.
        follower.start()
        #expect(await eventually { follower.resyncCount == 2 })
        #expect(follower.values == ["size": .integer(12)])
        #expect(await eventually { connection.backend.installedRevision == follower.position.revision })
        #expect(defaults.propertyList(forKey: "size") == .integer(12))
        #expect(defaults.propertyList(forKey: "list") == nil)
    }

    @Test func aSecretValueNeverAppearsInHistoryOutputWithoutShowSecrets() async throws {
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        let directory = try TemporaryDirectory()
        let remote = Self.address(scenario)
        let machine = Command(directory: directory.url)
        let schema = DefaultsSchema(
            suite: scenario.name, entries: [.init(name: "apiToken", type: .string, isSecret: true)])
        let file = directory.file("schema.plist")
        try schema.propertyListData().write(to: file)
        #expect(await machine.run(["install-schema", file.path, remote]).status == 0)
        let secret = "tok-4f1b9"
        let wrote = try Self.runBinary(["write", remote, "apiToken", secret], machineID: "a1", in: directory)
        #expect(wrote.status == 0, "\(wrote.errors)")
        let rewrote = try Self.runBinary(["write", remote, "apiToken", secret + "-2"], machineID: "a1", in: directory)
        #expect(rewrote.status == 0, "\(rewrote.errors)")
        // Recorded as given to etcd (readers of the suite read the value anyway), with the command's
        // argument redacted.
        let history = try EtcdRemoteSuite(scenario.suite()).history()
        #expect(history.entries.last?.newValue == .string(secret + "-2"))
        let written = history.entries.filter { $0.key == "apiToken" }
        #expect(written.count == 2 && written.allSatisfy { $0.writer?.command.last == "<secret>" }, "\(written)")
        for arguments in [["history", remote], ["history", remote, "--json"], ["diff", remote, "--since", "1"]] {
            let shown = await machine.run(arguments)
            #expect(shown.status == 0, "\(shown)")
            #expect(!shown.standardOutput.contains(secret) && !shown.standardError.contains(secret), "\(shown)")
            #expect(shown.standardOutput.contains("<secret>"), "\(arguments): \(shown)")
            let revealed = await machine.run(arguments + ["--show-secrets"])
            #expect(revealed.standardOutput.contains(secret), "\(revealed)")
        }
        let binary = try Self.runBinary(["history", remote], machineID: "a1", in: directory)
        #expect(!binary.output.contains(secret) && !binary.errors.contains(secret), "\(binary)")
        // A rollback prints the values it changed: redacted too.
        let rolled = await machine.run(["rollback", remote, "apiToken", "--to", "1"])
        #expect(rolled.status == 0, "\(rolled)")
        #expect(!rolled.standardOutput.contains(secret) && rolled.standardOutput.contains("<secret>"), "\(rolled)")
    }

    @Test func aReadOnlyUserReadsTheHistoryAndCannotWriteIt() async throws {
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        let directory = try TemporaryDirectory()
        let server = scenario.server
        try server.control(["user", "add", "root", "--new-user-password", "rootpw"])
        try server.control(["role", "add", "reader"])
        try server.control(["role", "grant-permission", "reader", "read", "/livedefaults/", "--prefix=true"])
        try server.control(["role", "add", "writer"])
        try server.control(["role", "grant-permission", "writer", "readwrite", "/livedefaults/", "--prefix=true"])
        try server.control(["user", "add", "auditor", "--new-user-password", "auditpw"])
        try server.control(["user", "grant-role", "auditor", "reader"])
        try server.control(["user", "add", "service", "--new-user-password", "servicepw"])
        try server.control(["user", "grant-role", "service", "writer"])
        try server.control(["user", "grant-role", "root", "root"])
        try server.control(["auth", "enable"])
        let remote = Self.address(scenario)
        let asService = ["ETCDCTL_USER": "service:servicepw"]
        let asAuditor = ["ETCDCTL_USER": "auditor:auditpw"]
        let wrote = try Self.runBinary(
            ["write", remote, "theme", "dark"], machineID: "a1", in: directory, environment: asService)
        #expect(wrote.status == 0, "\(wrote.errors)")
        // The auditor reads the history.
        let shown = try Self.runBinary(["history", remote], machineID: "a2", in: directory, environment: asAuditor)
        #expect(shown.status == 0, "\(shown.errors)")
        #expect(shown.output.contains("theme: (none) → dark"), "\(shown.output)")
        let auditor = try scenario.suite(credentials: FleetCredentials(user: "auditor", password: "auditpw"))
        #expect(try EtcdRemoteSuite(auditor).history().entries.map(\.key) == ["theme"])
        // …and can neither add an entry, nor change or delete one, nor write the suite.
        let client = auditor.makeClient()
        let keys = FleetAudit.Keys(prefix: scenario.prefix)
        for attempt in [
            { _ = try client.commit(puts: [(keys.entry(2), Data("forged".utf8))], deletes: []) },
            { _ = try client.commit(puts: [(keys.entry(1), Data("forged".utf8))], deletes: []) },
            { _ = try client.commit(puts: [], deletes: [keys.entry(1)]) },
            { _ = try client.commit(puts: [(keys.head, Data("1".utf8))], deletes: []) },
        ] as [() throws -> Void] {
            #expect(throws: EtcdError.self) { try attempt() }
        }
        let refused = try Self.runBinary(
            ["write", remote, "theme", "light"], machineID: "a2", in: directory, environment: asAuditor)
        #expect(refused.status != 0)
        #expect(refused.errors.contains("permission denied"), "\(refused.errors)")
        let history = try EtcdRemoteSuite(auditor).history().entries
        #expect(history.map(\.newValue) == ["dark"])
        #expect(history.first?.writer?.machineID == "a1")
    }

    @Test func auditKeysNeverAppearAsSettings() async throws {
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        let directory = try TemporaryDirectory()
        let remote = Self.address(scenario)
        let defaults = try Defaults.fleet(scenario.suite())
        let connection = try #require(defaults.fleetConnection)
        #expect(await eventually(within: 30) { connection.state.isLive })
        defaults.set("dark", forKey: "theme")
        defaults.set(3, forKey: "level")
        try await connection.synchronize()
        // They are in etcd, under the suite's prefix…
        let all = try scenario.raw.range(prefix: scenario.prefix).kvs.compactMap {
            $0.key.map { String(decoding: $0.data, as: UTF8.self) }
        }
        #expect(all.contains { $0.contains("LiveDefaults.history/entries/") })
        #expect(all.contains { $0.hasSuffix("LiveDefaults.history/head") })
        // …and no reader takes them for settings: this store, another machine's, the mirror, the command.
        let expected: [String: PropertyListValue] = ["theme": "dark", "level": 3]
        #expect(defaults.persistentValues() == expected)
        #expect(defaults.dictionaryRepresentation().keys.allSatisfy { !$0.hasPrefix("LiveDefaults.history") })
        let other = try scenario.localDefaults()
        let otherConnection = other.addFleetSuite(try scenario.suite(variant: 1, sharesCache: false))
        #expect(
            await eventually(within: 30) { otherConnection.state.isLive && other.string(forKey: "theme") == "dark" })
        #expect(other.dictionaryRepresentation().keys.allSatisfy { !$0.hasPrefix("LiveDefaults.history") })
        #expect(try await scenario.etcdValues() == expected)
        #expect(try EtcdRemoteSuite(scenario.suite()).read().values == expected)
        let machine = Command(directory: directory.url)
        let read = await machine.run(["read", remote])
        #expect(!read.standardOutput.contains("LiveDefaults.history"), "\(read)")
        let exported = await machine.run(["export", remote, "-"])
        #expect(exported.status == 0 && !exported.standardOutput.contains("LiveDefaults.history"), "\(exported)")
        // A key of the history's namespace cannot be written as a setting.
        let forged = await machine.run(["write", remote, "LiveDefaults.history/head", "1"])
        #expect(forged.status != 0, "\(forged)")
        // Importing (a merge, as macOS's) and deleting the whole domain leave the history, which records both.
        let plist = directory.file("import.plist")
        try PropertyListCodec.encode(.dictionary(["only": "this"]), format: .xml).write(to: plist)
        let imported = await machine.run(["import", remote, plist.path])
        #expect(imported.status == 0, "\(imported)")
        let values = try await scenario.etcdValues()
        #expect(values == expected.merging(["only": "this"]) { $1 }, "\(values)")
        #expect(await machine.run(["delete", remote]).status == 0)
        #expect(try await scenario.etcdValues() == [:])
        let history = try EtcdRemoteSuite(scenario.suite()).history().entries
        #expect(history.count == 2 + 1 + 3, "\(history)")
        #expect(history[2].key == "only" && history[2].oldValue == nil && history[2].newValue == "this")
        #expect(Set(history.suffix(3).map(\.key)) == ["theme", "level", "only"])
        #expect(history.suffix(3).allSatisfy { $0.newValue == nil && $0.oldValue != nil && $0.origin == .program })
        #expect(
            await eventually { defaults.persistentValues().isEmpty },
            "\(defaults.persistentValues()) \(connection.state) \(connection.backend.follower.snapshot)")
    }
}

/// The audit namespace's two decimal keys, read by one rule: a number (white space around it
/// allowed), at least 1; anything else is the key's default.
@Suite struct FleetAuditNumberTests {
    @Test(
        arguments: [
            ("7", 7), (" 42\n", 42), ("0", 1), ("-3", nil), ("ten", nil), ("", nil),
        ] as [(String, UInt64?)])
    func theHeadAndTheRetentionAreReadAlike(text: String, number: UInt64?) {
        let data = Data(text.utf8)
        #expect(FleetAudit.next(fromHead: data) == (number ?? 1))
        #expect(FleetAudit.maxEntries(fromRetention: data) == (number ?? FleetAudit.defaultMaxEntries))
    }

    @Test func anAbsentKeyIsItsDefault() {
        #expect(FleetAudit.next(fromHead: nil) == 1)
        #expect(FleetAudit.maxEntries(fromRetention: nil) == FleetAudit.defaultMaxEntries)
    }
}
