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

        let go = scenario.scratch.file("go").path
        let processes = try (0..<3).map { index in
            let process = Process()
            process.executableURL = Self.helper
            process.arguments = ["fleet-migrate", scenario.server.endpoint.absoluteString, suite.name, go]
            process.environment = ["PATH": "/usr/bin:/bin"]
            for stream in ["out", "err"] {
                _ = FileManager.default.createFile(
                    atPath: scenario.scratch.file("\(index).\(stream)").path, contents: nil)
            }
            process.standardOutput = try FileHandle(forWritingTo: scenario.scratch.file("\(index).out"))
            process.standardError = try FileHandle(forWritingTo: scenario.scratch.file("\(index).err"))
            try process.run()
            return process
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
        #expect(
            mirror.values == [
                "log": [1, 2, 3], "new": "kept value", DefaultsMigration.recordKey: ["version": 3],
            ])
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
        let seen = changes.withLock { $0 }
        #expect(seen.allSatisfy { $0.origin == .external }, "another process's migration")
        token.cancel()
    }
}
