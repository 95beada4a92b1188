import Foundation
import LiveDefaults
import LiveDefaultsCommand
import LiveDefaultsTestHelpers
import TestSupport
import Testing

@testable import LiveDefaultsEtcd
@testable import LiveDefaultsEtcdClient

/// What an operator trying fleet suites met (issue 34, "Fleet for operators"): a first read that
/// gave registered defaults while the suite was still connecting, an outage measured from its
/// detection rather than from the last contact, and the library's own keys counted and shown as
/// settings.
@Suite(.requiresEtcd, .serialized)
struct FleetOperatorTests {
    // MARK: Waiting for the first sync

    @Test func aServiceThatWaitsUntilLiveReadsEtcdsValueOnItsFirstStart() async throws {
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        try await scenario.put(["newCheckout": true, "limit": 7])
        let defaults = try scenario.localDefaults()
        defaults.register(defaults: ["limit": 1])
        // No cache yet: without the wait, these reads give registered defaults (`.connecting`).
        let connection = defaults.addFleetSuite(try scenario.suite())
        let revision = try await connection.waitUntilLive(timeout: .seconds(30))
        #expect(defaults.integer(forKey: "limit") == 7)
        #expect(defaults.bool(forKey: "newCheckout"))
        #expect(revision == (try await scenario.revision()))
        // Already live: returns at once with the revision.
        #expect(try await connection.waitUntilLive(timeout: .seconds(30)) >= revision)
    }

    @Test func waitingUntilLiveThrowsNamingTheStateAndTheEndpointWhenEtcdDoesNotAnswer() async throws {
        let scratch = try TemporaryDirectory()
        // A loopback port nothing listens on.
        let endpoint = try #require(URL(string: "http://127.0.0.1:\(try EtcdServer.freePort())"))
        let suite = try FleetSuite(
            name: "com.example.fleet-" + UUID().uuidString.prefix(8).lowercased(), endpoints: [endpoint],
            cacheDirectory: scratch.url.appendingPathComponent("cache"), requestTimeout: .seconds(1))
        let defaults = try Defaults(suiteName: suite.name, directory: scratch.url.appendingPathComponent("config"))
        let connection = defaults.addFleetSuite(suite)
        do {
            try await connection.waitUntilLive(timeout: .milliseconds(500))
            Issue.record("the wait returned while nothing listens on \(endpoint)")
        } catch let error as DefaultsError {
            #expect(error.code == .remoteUnavailable)
            #expect(error.message.contains(endpoint.absoluteString), "\(error)")
            #expect(error.message.contains("is not in step"), "\(error)")
        }
        // It goes on trying: still not live, and no values.
        #expect(!connection.state.isLive)
    }

    // MARK: The outage, from the last contact

    /// etcd frozen (SIGSTOP): `stale(since:)` is the last contact, before the freeze, not the
    /// moment the stall check noticed it (at least its timeout later); the recovery report counts
    /// from there too.
    @Test func anOutageIsMeasuredFromTheLastContactNotFromItsDetection() async throws {
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        try await scenario.put(["theme": "dark"])
        // A check after 0.5 s of silence, given 1.5 s, then a range given 1.5 s: noticing the freeze
        // takes 3 s and more.
        let suite = try FleetSuite(
            name: scenario.name, endpoints: [scenario.server.endpoint],
            cacheDirectory: scenario.scratch.url.appendingPathComponent("cache"), requestTimeout: .seconds(30),
            stallCheckInterval: .milliseconds(500), stallCheckTimeout: .milliseconds(1500))
        let defaults = try scenario.localDefaults()
        let connection = defaults.addFleetSuite(suite)
        try await connection.waitUntilLive(timeout: .seconds(30))
        defer { scenario.server.send(SIGCONT) }
        #expect(await scenario.server.freeze(), "the member was not stopped")
        let frozenAt = Date()
        #expect(await eventually(within: 30) { connection.lastError?.code == .remoteUnavailable })
        guard case .stale(_, let since, _) = connection.state else {
            Issue.record("the suite says \(connection.state) with its only member frozen")
            return
        }
        // A message already on its way at the freeze may be read just after it (later still on a
        // loaded machine): 1.5 s of slack. Noticing the freeze takes more than twice that: 0.5 s of
        // silence, the check's 1.5 s, then the range's 1.5 s.
        #expect(
            since <= frozenAt.addingTimeInterval(1.5),
            "stale since \(since), \(since.timeIntervalSince(frozenAt)) s after the freeze")
        let resumedAt = Date()
        scenario.server.send(SIGCONT)
        #expect(await eventually(within: 30) { connection.backend.reported.contains { $0.code == .remoteRecovered } })
        let recovery = try #require(connection.backend.reported.last { $0.code == .remoteRecovered })
        let seconds = try #require(
            recovery.message.firstMatch(of: /after an outage of ([0-9.]+) s/).flatMap { Double($0.1) })
        // From the last contact (at most that slack after the freeze) to the recovery (after the
        // resume): at least the whole freeze, less the slack and the rounding. Counted from the
        // detection, it would miss the 3 s and more that noticing took.
        let frozen = resumedAt.timeIntervalSince(frozenAt)
        #expect(seconds >= frozen - 1.5 - 0.05, "reported \(seconds) s; the member was frozen \(frozen) s")
    }

    // MARK: The library's own keys are no settings

    /// The library's own keys of suite `name`: a schema (valid: the command checks against it) and
    /// a migration record.
    static func reserved(_ name: String, version: Int = 2) -> [String: PropertyListValue] {
        let schema = DefaultsSchema(suite: name, entries: [.init(name: "theme", type: .string, defaultValue: "system")])
        let record: PropertyListValue = ["version": .integer(Int64(version))]
        return ["LiveDefaults.schema": schema.propertyList, DefaultsMigration.recordKey: record]
    }

    @Test func theOutageAndRecoveryReportsCountSettingsNotTheLibrarysOwnKeys() async throws {
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        try await scenario.put(
            ["theme": "dark", "limit": 3, "same": true].merging(Self.reserved(scenario.name)) { $1 })
        do {
            let first = try scenario.localDefaults()
            let connection = first.addFleetSuite(try scenario.suite())
            try await connection.waitUntilLive(timeout: .seconds(30))
            await connection.backend.cacheSaved()
            first.removeFleetSuite(try scenario.suite())
        }
        let firstSuite = try scenario.suite()
        #expect(await eventually { FleetStores.existing(firstSuite) == nil })
        // While no process follows it, etcd changes one setting and both reserved keys; then it
        // goes away (stopped by its PID).
        let changedSchema = DefaultsSchema(suite: scenario.name, entries: [])
        try await scenario.put(
            ["theme": "light", "LiveDefaults.schema": changedSchema.propertyList].merging(
                Self.reserved(scenario.name, version: 3).filter { $0.key == DefaultsMigration.recordKey }
            ) { $1 })
        scenario.server.stop()
        let defaults = try scenario.localDefaults()
        let connection = defaults.addFleetSuite(try scenario.suite(variant: 1))
        #expect(await eventually(within: 30) { connection.lastError?.code == .remoteUnavailable })
        let outage = try #require(connection.lastError)
        #expect(outage.message.contains("The 3 values cached"), "\(outage)")
        try await scenario.server.start()
        #expect(await eventually(within: 30) { connection.backend.reported.contains { $0.code == .remoteRecovered } })
        let recovery = try #require(connection.backend.reported.first { $0.code == .remoteRecovered })
        #expect(recovery.message.contains("1 key changed meanwhile"), "\(recovery)")
        // Live now: a loss reports the values last seen, settings only.
        #expect(await eventually { connection.state.isLive })
        scenario.server.stop()
        #expect(await eventually(within: 30) { connection.lastError?.code == .remoteUnavailable })
        let lost = try #require(connection.lastError)
        #expect(lost.message.contains("The 3 values last seen"), "\(lost)")
    }

    @Test func dictionaryRepresentationLeavesOutTheLibrarysOwnKeysThatReadsByNameStillGive() async throws {
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        try await scenario.put(["theme": "dark"].merging(Self.reserved(scenario.name)) { $1 })
        let defaults = try scenario.localDefaults()
        let connection = defaults.addFleetSuite(try scenario.suite())
        try await connection.waitUntilLive(timeout: .seconds(30))
        let listed = defaults.dictionaryRepresentation()
        #expect(listed["theme"] as? String == "dark")
        for key in Self.reserved(scenario.name).keys {
            #expect(listed[key] == nil, "\(key) is listed as a setting")
            #expect(defaults.object(forKey: key) != nil, "\(key) no longer reads by name")
        }
    }

    @Test func theCommandsReadAndWatchOfAWholeSuiteLeaveOutTheLibrarysOwnKeys() async throws {
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        try await scenario.put(["theme": "dark"].merging(Self.reserved(scenario.name)) { $1 })
        let directory = scenario.scratch.url.appendingPathComponent("cmd")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let command = EtcdDefaultsCommandTests.Command(directory: directory)
        let address = "etcd://127.0.0.1:\(scenario.server.clientPort)/\(scenario.name)"
        // A local domain with a migration record too, for `read` of every domain and `find`.
        let local = "com.example.local-" + UUID().uuidString.prefix(8).lowercased()
        #expect(await command.run(["write", local, "theme", "dark"]).status == 0)
        let recordWritten = await command.run([
            "write", local, DefaultsMigration.recordKey, "-dict", "version", "-int", "2",
        ])
        #expect(recordWritten.status == 0, "\(recordWritten)")
        for arguments in [["read", address], ["--show-secrets", "read", address], ["read"], ["find", "migration"]] {
            let read = await command.run(arguments)
            for key in Self.reserved(scenario.name).keys {
                #expect(!read.standardOutput.contains(key), "\(arguments): \(read)")
            }
        }
        let read = await command.run(["read", address])
        #expect(read.status == 0 && read.standardOutput.contains("theme = dark"), "\(read)")
        // By name, it is read as stored.
        let record = await command.run(["read", address, DefaultsMigration.recordKey])
        #expect(record.status == 0 && record.standardOutput.contains("version = 2"), "\(record)")
        // A watch of the whole suite shows a migration's settings, not its record; named, it does.
        let streams = CapturedCommandIO()
        guard case .watching(let session) = command.runner(streams).run(["watch", address]) else {
            Issue.record("watch did not start: \(streams.standardError)")
            return
        }
        let named = CapturedCommandIO()
        guard
            case .watching(let namedSession) = command.runner(named).run([
                "watch", address, DefaultsMigration.recordKey,
            ])
        else {
            Issue.record("watch of the record did not start")
            return
        }
        try await scenario.put(["theme": "light", DefaultsMigration.recordKey: ["version": 3]])
        #expect(await eventually { streams.standardOutput.contains("theme") })
        #expect(await eventually { named.standardOutput.contains(DefaultsMigration.recordKey) })
        // A later transaction: once it shows, the first one has been printed whole.
        try await scenario.put(["after": 1])
        #expect(await eventually { streams.standardOutput.contains("after") })
        withExtendedLifetime((session, namedSession)) {}
        #expect(!streams.standardOutput.contains(DefaultsMigration.recordKey), "\(streams.standardOutput)")
    }
}
