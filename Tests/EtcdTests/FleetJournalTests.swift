import Foundation
import LiveDefaults
import LiveDefaultsTestHelpers
import TestSupport
import Testing

@testable import LiveDefaultsEtcd
@testable import LiveDefaultsEtcdClient

/// A fleet suite's pending writes outlive their process (docs/design.md, "The journal", its fleet
/// paragraph): written while etcd is away by a process that is then killed, they are sent by the
/// next process to open the suite, under the README's rules for queued writes.
@Suite(.requiresEtcd, .serialized)
struct FleetJournalTests {
    /// Runs TestHelper's `fleet-set-and-die`: a process that sets `key` to `value` in the suite and
    /// kills itself with SIGKILL. Returns once it is dead.
    private func setAndDie(_ scenario: FleetScenario, key: String, value: String) throws {
        let suite = try scenario.suite()
        let finished = try runToEndApart(
            FleetMigrationTests.helper.path,
            [
                "fleet-set-and-die", scenario.server.endpoint.absoluteString,
                try #require(suite.cacheDirectory).path, suite.name, key, value,
            ],
            environment: ["PATH": "/usr/bin:/bin"])
        #expect(finished.output == "set\n", "\(finished.errors)")
        #expect(finished.reason == .uncaughtSignal && finished.status == SIGKILL, "\(finished.errors)")
    }

    /// The journals beside the suite's cache file, but `excluding`.
    private func journals(_ scenario: FleetScenario, excluding: String? = nil) throws -> [String] {
        let directory = SuiteJournal.directory(forSuiteFile: try cachePath(scenario))
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.map { directory + "/" + $0 }.filter { $0 != excluding }
    }

    private func cachePath(_ scenario: FleetScenario) throws -> String {
        let suite = try scenario.suite()
        return suite.cacheLocationDirectory + "/" + suite.name + ".plist"
    }

    /// etcd's record of `key`: its value and how many times it was written since it was made.
    private func etcdKey(_ scenario: FleetScenario, _ key: String) throws -> (value: PropertyListValue?, version: Int64)
    {
        let kv = try scenario.raw.get(key: EtcdMirror.etcdKey(key, prefix: scenario.prefix)).kv
        let value = try kv.map { try PropertyListCodec.decode($0.value?.data ?? Data()).value }
        return (value, kv?.version?.value ?? 0)
    }

    @Test func aWriteMadeWhileEtcdIsDownByAKilledProcessReachesEtcdOnceWhenTheNextProcessOpensTheSuite() async throws {
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        scenario.server.stop()  // by its PID; it keeps its ports
        try setAndDie(scenario, key: "written", value: "from the dead")
        #expect(try journals(scenario).count == 1, "the dead process's journal is left")

        try await scenario.server.start()
        let defaults = try Defaults.fleet(scenario.suite())
        let connection = try #require(defaults.fleetConnection)
        // At once: the dead process's write is this process's pending write.
        #expect(defaults.string(forKey: "written") == "from the dead")
        #expect(await eventually(within: 30) { !connection.store.hasPendingChanges })
        let written = try etcdKey(scenario, "written")
        #expect(written.value == "from the dead")
        #expect(written.version == 1, "sent exactly once")
        // The dead journal went; this process's own holds nothing.
        let own = connection.backend.pendingJournal.path
        #expect(try journals(scenario, excluding: own).isEmpty)
        if let own {
            let contents = try Data(contentsOf: URL(fileURLWithPath: own)).withUnsafeBytes { JournalFormat.read($0) }
            #expect(contents.records.isEmpty && contents.problem == nil)
        }
        #expect(try await scenario.etcdValues() == ["written": "from the dead"])
    }

    @Test func aProcessFollowingTheSuiteSendsTheWriteOfOneKilledDuringTheOutageOnceEtcdIsBack() async throws {
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        let defaults = try Defaults.fleet(scenario.suite())
        let connection = try #require(defaults.fleetConnection)
        #expect(await eventually(within: 30) { connection.state.isLive })
        scenario.server.stop()
        #expect(await eventually(within: 30) { connection.lastError?.code == .remoteUnavailable })
        // Another process on this machine writes while etcd is away, and is killed.
        try setAndDie(scenario, key: "written", value: "from the dead")
        #expect(try journals(scenario).count == 1)

        // No process opens the suite again: the one following it takes the write over at the recovery.
        try await scenario.server.start()
        #expect(await eventually(within: 30) { (try? etcdKey(scenario, "written").value) == "from the dead" })
        #expect(try etcdKey(scenario, "written").version == 1, "sent exactly once")
        #expect(await eventually { defaults.string(forKey: "written") == "from the dead" })
        #expect(await eventually(within: 30) { !connection.store.hasPendingChanges })
        #expect(try journals(scenario, excluding: connection.backend.pendingJournal.path).isEmpty)
    }

    @Test func aDeadProcesssWriteLandsLateAndWinsOverANewerValueInEtcdAsAQueuedWriteDoes() async throws {
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        try await scenario.put(["written": "before", "other": 1])
        scenario.server.stop()
        try setAndDie(scenario, key: "written", value: "from the dead")
        try await scenario.server.start()
        // Another machine writes the key after the death, before any process here opens the suite.
        try await scenario.put(["written": "newer"])

        let defaults = try Defaults.fleet(scenario.suite())
        let connection = try #require(defaults.fleetConnection)
        #expect(await eventually(within: 30) { !connection.store.hasPendingChanges })
        // README, "Fleet settings": a queued write lands late and still wins per key; the dead
        // process's queued write is sent as this process's own.
        let written = try etcdKey(scenario, "written")
        #expect(written.value == "from the dead")
        #expect(written.version == 3, "before, newer, then the replayed write: once")
        #expect(try await scenario.etcdValues() == ["written": "from the dead", "other": 1])
        #expect(await eventually { defaults.string(forKey: "written") == "from the dead" })
    }

    @Test func aTornJournalSendsItsWholeRecordsAndACorruptOneIsKeptAsideWithAReport() async throws {
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        let cachePath = try cachePath(scenario)
        try FileManager.default.createDirectory(
            atPath: URL(fileURLWithPath: cachePath).deletingLastPathComponent().path,
            withIntermediateDirectories: true)
        // Two journals of "processes" that are gone: their locks are free (the PID in their names is
        // this live process's, which does not matter).
        let torn: (path: String, cut: Int)
        do {
            let journal = try SuiteJournal(suitePath: cachePath)
            #expect(journal.append(.set, key: "a", value: "one") == nil)
            #expect(journal.append(.remove, key: "gone", value: nil) == nil)
            #expect(journal.append(.set, key: "b", value: .array(["two"])) == nil)
            let whole = journal.mark()
            #expect(journal.append(.set, key: "c", value: "torn") == nil)
            torn = (journal.path, (whole + journal.mark()) / 2)
        }
        let corrupt: (path: String, flip: Int)
        do {
            let journal = try SuiteJournal(suitePath: cachePath)
            #expect(journal.append(.set, key: "x", value: 10) == nil)
            let good = journal.mark()
            #expect(journal.append(.set, key: "y", value: "flipped") == nil)
            corrupt = (journal.path, good + JournalFormat.recordHeaderSize + 9)
        }
        for path in [torn.path, corrupt.path] { try #require(waitUntilUnlocked(path), "\(path)'s lock was freed") }
        #expect(truncate(torn.path, off_t(torn.cut)) == 0)
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: corrupt.path))
        try handle.seek(toOffset: UInt64(corrupt.flip))
        let byte = try #require(try handle.read(upToCount: 1)?.first)
        try handle.seek(toOffset: UInt64(corrupt.flip))
        try handle.write(contentsOf: [byte ^ 0x40])
        try handle.close()
        try await scenario.put(["gone": true])

        let reports = Locked<[DefaultsError]>([])
        let reporting = DefaultsErrorReporting.listen { error in reports.withLock { $0.append(error) } }
        defer { reporting.cancel() }
        let defaults = try Defaults.fleet(scenario.suite())
        let connection = try #require(defaults.fleetConnection)
        #expect(await eventually(within: 30) { !connection.store.hasPendingChanges })
        // The whole records of both, not the torn one, not the one whose checksum fails.
        #expect(try await scenario.etcdValues() == ["a": "one", "b": ["two"], "x": 10])
        let report = try #require(reports.withLock { $0 }.first { $0.code == .corruptFile })
        let kept = try #require(report.path)
        #expect(kept.hasPrefix(cachePath + ".journal-corrupt-"))
        #expect(FileManager.default.fileExists(atPath: kept))
        #expect(report.message.contains("checksum"), "\(report.message)")
        #expect(report.message.contains("were made pending writes"), "\(report.message)")
        #expect(try journals(scenario, excluding: connection.backend.pendingJournal.path).isEmpty)
    }

    @Test func aPendingWriteIsInTheJournalUntilEtcdTakesIt() async throws {
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        let defaults = try Defaults.fleet(scenario.suite())
        let connection = try #require(defaults.fleetConnection)
        #expect(await eventually(within: 30) { connection.state.isLive })
        scenario.server.stop()
        #expect(await eventually(within: 30) { !connection.state.isLive })
        defaults.set("offline", forKey: "written")
        await #expect(throws: DefaultsError.self) { try await connection.synchronize() }
        let path = try #require(connection.backend.pendingJournal.path)
        func records() throws -> [JournalRecord] {
            try Data(contentsOf: URL(fileURLWithPath: path)).withUnsafeBytes { JournalFormat.read($0) }.records
        }
        let held = try records()
        #expect(held.map(\.kind) == [.set] && held.map(\.key) == ["written"] && held.first?.value == "offline")

        try await scenario.server.start()
        #expect(await eventually(within: 30) { !connection.store.hasPendingChanges })
        #expect(try records().isEmpty, "released once etcd took it")
        #expect(try etcdKey(scenario, "written").value == "offline")
    }
}
