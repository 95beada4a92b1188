import Foundation
import LiveDefaults
import LiveDefaultsTestHelpers
import TestSupport
import Testing

@testable import LiveDefaultsEtcd
@testable import LiveDefaultsEtcdClient

/// A fleet suite's migration raced by 3 processes (TestHelper's `fleet-migrate`): etcd's
/// compare-and-set lets exactly one commit each step, and an observer sees each step as one burst.
@Suite(.requiresEtcd, .serialized)
struct FleetMigrationTests {
    /// The built TestHelper, next to the test bundle.
    static let helper: URL = {
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        while url.path != "/" {
            url.deleteLastPathComponent()
            let candidate = url.appendingPathComponent("TestHelper")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        return URL(fileURLWithPath: "TestHelper")
    }()

    @Test func threeProcessesRacingCommitEachStepOnceAcrossTheFleet() async throws {
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        let suite = try scenario.suite()
        let raw = scenario.raw
        let prefix = suite.prefix
        _ = try raw.commit(
            puts: [(EtcdMirror.etcdKey("old", prefix: prefix), try EtcdMirror.encode("kept value"))], deletes: [])
        // An observer in this process, on the same suite.
        let defaults = try Defaults.fleet(suite)
        #expect(await eventually { defaults.string(forKey: "old") == "kept value" })
        let changes = Locked<[DefaultsChange<PropertyListValue?>]>([])
        let token = defaults.observeAll(options: [.new]) { change in changes.withLock { $0.append(change) } }
        // The log as each change notification finds it (the first may be the one for "old").
        let logs = Locked<[[Int]?]>([])
        let observer = NotificationCenter.default.addObserver(
            forName: Defaults.didChangeNotification, object: defaults, queue: nil
        ) { _ in logs.withLock { $0.append(defaults.array(forKey: "log") as? [Int]) } }
        defer { NotificationCenter.default.removeObserver(observer) }

        let go = scenario.scratch.file("go").path
        let processes = try (0..<3).map { index in
            try startWithOutputInFiles(
                Self.helper, ["fleet-migrate", scenario.server.endpoint.absoluteString, suite.name, go],
                environment: ["PATH": "/usr/bin:/bin"], output: scenario.scratch.file("\(index).out"),
                errors: scenario.scratch.file("\(index).err"))
        }
        #expect(FileManager.default.createFile(atPath: go, contents: Data()))
        #expect(await eventually(within: 60) { processes.allSatisfy { !$0.isRunning } }, "the racers finish")
        var ran: [String] = []
        for (index, process) in processes.enumerated() {
            let errors = (try? String(contentsOf: scenario.scratch.file("\(index).err"), encoding: .utf8)) ?? ""
            #expect(process.terminationStatus == 0, "\(errors)")
            let output = (try? String(contentsOf: scenario.scratch.file("\(index).out"), encoding: .utf8)) ?? ""
            ran += output.split(separator: "\n").map(String.init)
        }
        #expect(ran.sorted() == ["ran 1", "ran 2", "ran 3"], "each step committed by exactly one process: \(ran)")

        let (_, kvs) = try raw.range(prefix: prefix)
        var mirror = EtcdMirror(prefix: prefix)
        _ = mirror.resync(header: EtcdResponseHeader(), kvs: kvs)
        var values = mirror.values
        let record = try #require(values.removeValue(forKey: DefaultsMigration.recordKey)?.dictionaryValue)
        #expect(values == ["log": [1, 2, 3], "new": "kept value"])
        #expect(
            record["version"] == 3 && record["commit"]?.stringValue != nil, "the record names its commit: \(record)")
        #expect(await eventually { defaults.string(forKey: "new") == "kept value" })
        #expect(await eventually { defaults.array(forKey: "log")?.count == 3 })
        // The observer is called after a read can see a change (and by a thread delivering at that
        // moment, should one be): wait for its record of the rename too, not only for the values.
        #expect(
            await eventually {
                changes.withLock { seen in
                    seen.contains { $0.key == "old" && $0.newValue == nil } && seen.contains { $0.key == "new" }
                }
            })
        // One burst: the log goes from nothing to all three steps in one change, and no notification
        // finds it part way.
        #expect(await eventually { logs.withLock { $0.contains { $0 == [1, 2, 3] } } })
        #expect(logs.withLock { $0 }.allSatisfy { $0 == nil || $0 == [1, 2, 3] }, "\(logs.withLock { $0 })")
        #expect(changes.withLock { $0 }.filter { $0.key == "log" }.map(\.newValue) == [[1, 2, 3]])
        let seen = changes.withLock { $0 }
        #expect(seen.allSatisfy { $0.origin == .external }, "another process's migration")
        token.cancel()
    }

    /// The pending steps are committed together: when one throws, none is, and the message says so
    /// (the record and the values in etcd are as they were).
    @Test func aStepThatThrowsCommitsNoneOfThePendingStepsAndSaysSo() async throws {
        struct Refused: Error {}
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        let suite = try scenario.suite()
        #expect(try suite.migrate(to: 1) { step in step.set("one", forKey: "first") } == [1])
        #expect {
            try suite.migrate(to: 3) { step in
                step.set(.integer(Int64(step.number)), forKey: "step\(step.number)")
                if step.number == 3 { throw Refused() }
            }
        } throws: { error in
            guard let error = error as? DefaultsError, error.code == .migrationFailed else { return false }
            return error.message.contains("Step 3 ")
                && error.message.contains("no step of this run was committed. Step 1 is done.")
                && error.message.contains("tries again from step 2")
        }
        let (_, kvs) = try scenario.raw.range(prefix: suite.prefix)
        var mirror = EtcdMirror(prefix: suite.prefix)
        _ = mirror.resync(header: EtcdResponseHeader(), kvs: kvs)
        #expect(mirror.values["first"] == "one" && mirror.values.count == 2, "\(mirror.values)")
        #expect(mirror.values[DefaultsMigration.recordKey]?.dictionaryValue?["version"] == 1)
    }

    /// The process that migrates, with the suite open, sees its own migration with the origin
    /// `.migration`, in one burst, before `migrate` returns. Other processes see `.external` (the race above).
    @Test func theProcessThatMigratesSeesItsOwnMigrationAsMigration() async throws {
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        let suite = try scenario.suite()
        _ = try scenario.raw.commit(
            puts: [(EtcdMirror.etcdKey("old", prefix: suite.prefix), try EtcdMirror.encode("kept value"))], deletes: [])
        let defaults = try Defaults.fleet(suite)
        #expect(await eventually(within: 10) { defaults.string(forKey: "old") == "kept value" })
        let seen = Locked<[DefaultsChange<PropertyListValue?>]>([])
        let token = defaults.observeAll(options: [.new]) { change in seen.withLock { $0.append(change) } }
        defer { token.cancel() }

        let ran = try suite.migrate(to: 2) { step in
            if step.number == 1 { step.rename("old", to: "new") }
            if step.number == 2 { step.set(true, forKey: "added") }
        }
        #expect(ran == [1, 2])
        #expect(defaults.string(forKey: "new") == "kept value" && defaults.bool(forKey: "added"), "read on return")
        // The follower's thread may still be delivering the changes it applied.
        #expect(await eventually(within: 10) { seen.withLock { $0.count } >= 4 })
        let changes = seen.withLock { $0 }
        #expect(Set(changes.map(\.key)) == ["old", "new", "added", DefaultsMigration.recordKey], "\(changes)")
        #expect(changes.allSatisfy { $0.origin == .migration }, "\(changes.map { "\($0.key): \($0.origin)" })")
        #expect(changes.count == 4, "one change per key: one burst")
    }
}
