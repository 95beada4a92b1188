import Foundation
import LiveDefaults
import TestSupport
import Testing

/// A local suite's history across processes (docs/design.md, "History"): concurrent writers,
/// a writer killed while it appends, rollback seen by observers in other processes, and secrets.
@Suite struct HistoryProcessTests {
    static func history(_ directory: borrowing TemporaryDirectory, _ suite: String) throws -> SuiteHistory {
        let location = try SuiteLocation(suiteName: suite, directory: directory.path)
        return try HistoryLog(suitePath: location.path, suite: suite).readHistory()
    }

    @Test func eightWritersAtOnceLeaveEveryFlushedChangeOnceInTheFilesOrder() throws {
        let directory = try TemporaryDirectory()
        let suite = "com.example.eight"
        let count = Stress.scaled(100, quick: 25)
        let writers = try (0..<8).map { index in
            try ProductRunner.start("TestHelper", ["write-chain", directory.path, suite, "p\(index)", "\(count)"])
        }
        var pids: [String: Int32] = [:]
        for (index, writer) in writers.enumerated() {
            let result = writer.waitForExit()
            #expect(result.status == 0, "\(result)")
            let pid = result.standardOutput.split(separator: " ").last.flatMap {
                Int32($0.trimmingCharacters(in: .whitespacesAndNewlines))
            }
            pids["p\(index)"] = pid
        }
        let entries = try Self.history(directory, suite).entries
        // Every distinct key once, by its writer.
        let distinct = entries.filter { $0.key != "last" }
        #expect(distinct.count == 8 * count, "\(distinct.count) of \(8 * count)")
        #expect(Set(distinct.map(\.key)).count == 8 * count)
        for entry in distinct {
            let prefix = String(entry.key.prefix { $0 != "-" })
            #expect(
                entry.writer?.processID == pids[prefix],
                "\(entry.key) names pid \(String(describing: entry.writer?.processID))")
            #expect(entry.oldValue == nil && entry.origin == .program)
        }
        // Numbered 1, 2, 3… with no gap.
        #expect(entries.map(\.id) == Array(1...UInt64(entries.count)))
        // The shared key's entries chain (each old value is the one before's new value), and end
        // at the file's value: the history's order is the file's order.
        let chain = entries.filter { $0.key == "last" }
        #expect(chain.count == 8 * count, "every flush changed \"last\": \(chain.count)")
        for (before, after) in zip(chain, chain.dropFirst()) {
            #expect(after.oldValue == before.newValue, "entry \(after.id) follows \(before.id)")
        }
        let file =
            try PropertyListSerialization.propertyList(
                from: Data(contentsOf: directory.file(suite + ".plist")), format: nil) as? [String: Any]
        #expect(chain.last?.newValue?.stringValue == file?["last"] as? String)
    }

    @Test func aWriterKilledWhileAppendingLeavesEveryWholeEntryReadable() async throws {
        let directory = try TemporaryDirectory()
        let suite = "com.example.killed"
        let keys = 200
        let kills = Stress.scaled(200, quick: 25)
        var acknowledged = 0
        for round in 0..<kills {
            let victim = try ProductRunner.start("TestHelper", ["flush-forever", directory.path, suite, "\(keys)"])
            try victim.waitForLine(on: .output, where: { $0.hasPrefix("acked") }, describedAs: "a first flush")
            // A moment into the next flushes, somewhere (the scenario under test: a kill at any point).
            usleep(UInt32((round * 1_373) % 20_000))
            victim.send(SIGKILL)
            _ = victim.waitForExit()
            let lines = victim.standardOutput.split(separator: "\n").filter { $0.hasPrefix("acked") }
            let generation = lines.last.flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
            acknowledged = generation
            // The next open: every whole entry reads, numbered without a gap; the acknowledged
            // generation's changes are all there.
            let defaults = try Defaults(suiteName: suite, directory: directory.url, watchesFiles: false)
            let entries = try defaults.history()
            #expect(entries.map(\.id) == Array(entries.first!.id...entries.last!.id), "round \(round)")
            let value = PropertyListValue.string("\(acknowledged)-" + String(repeating: "x", count: 100))
            let recorded = Set(entries.filter { $0.newValue == value }.map(\.key))
            #expect(
                recorded.count == keys,
                "round \(round): generation \(acknowledged) has \(recorded.count) entries; key-0: \(entries.filter { $0.key == "key-0" }.suffix(3).map { "\($0.id) \($0.origin) \(String(describing: $0.newValue).prefix(20))" }), \(entries.count)"
            )
            // Every change is the victims' own, those replayed from a dead journal included: the
            // process that replayed them (this one) is not named.
            let others = entries.filter { $0.writer?.executable.hasSuffix("TestHelper") != true }
            #expect(
                others.isEmpty,
                "round \(round): \(others.prefix(2).map { "\($0.id) \($0.origin) \(String(describing: $0.writer))" })")
        }
    }

    @Test func aRollbackReachesObserversInThreeOtherProcesses() throws {
        let directory = try TemporaryDirectory()
        let suite = "com.example.observed"
        let defaults = try Defaults(suiteName: suite, directory: directory.url, watchesFiles: false)
        defaults.set(.real(1.5), forKey: "ratio")
        try defaults.synchronize()
        let point = try #require(try defaults.history().last?.id)
        let watchers = try (0..<3).map { _ in
            try ProductRunner.start(
                "TestHelper", ["watch-key", directory.path, suite, "ratio"], keepingInputOpen: true)
        }
        for watcher in watchers { try watcher.waitForLine(on: .output, where: { $0.hasPrefix("ready") }) }
        defaults.set(.string("broken"), forKey: "ratio")
        try defaults.synchronize()
        for watcher in watchers {
            try watcher.waitForLine(on: .output, where: { $0.hasPrefix("changed") && $0.contains("broken") })
        }
        try defaults.rollBack("ratio", to: .entry(point))
        for watcher in watchers {
            try watcher.waitForLine(
                on: .output, where: { $0.hasPrefix("changed") && $0.contains("1.5") }, describedAs: "the rollback")
            watcher.write("quit\n")
            #expect(watcher.waitForExit().status == 0)
        }
        #expect(try defaults.history().last?.origin == .rollback)
    }

    @Test func aSecretValueAppearsInNoOutputWithoutShowSecrets() throws {
        let directory = try TemporaryDirectory()
        let suite = "com.example.secret"
        let schemaDirectory = directory.path + "/data/livedefaults/schemas"
        try FileManager.default.createDirectory(atPath: schemaDirectory, withIntermediateDirectories: true)
        let schema = DefaultsSchema(
            suite: suite,
            entries: [.init(name: "token", type: .string, isSecret: true), .init(name: "size", type: .integer)])
        try schema.propertyListData().write(to: URL(fileURLWithPath: schemaDirectory + "/\(suite).plist"))
        let command = ProductRunner.runner(
            "defaults",
            environment: [
                "XDG_CONFIG_HOME": directory.path, "HOME": directory.path, "XDG_DATA_HOME": directory.path + "/data",
            ])
        let secrets = ["hunter2-first", "hunter2-second"]
        for secret in secrets { #expect(try command.run(["write", suite, "token", secret]).status == 0) }
        #expect(try command.run(["write", suite, "size", "3"]).status == 0)
        let verbs: [[String]] = [
            ["history", suite], ["history", suite, "--json"], ["history", suite, "token"],
            ["diff", suite, "--since", "1"],
            ["diff", suite, "--since", "1", "--json"], ["read", suite], ["rollback", suite, "token", "--to", "1"],
            ["history", suite, "--json"],
        ]
        for arguments in verbs {
            let result = try command.run(arguments)
            #expect(result.status == 0, "\(arguments): \(result)")
            for secret in secrets {
                #expect(
                    !result.standardOutput.contains(secret) && !result.standardError.contains(secret), "\(arguments)")
            }
        }
        // The writer's command line was recorded with the value redacted.
        let history = try command.run(["history", suite, "token", "--show-secrets"])
        #expect(history.standardOutput.contains("defaults write \(suite) token <secret>"), "\(history.standardOutput)")
        #expect(history.standardOutput.contains("hunter2-second"), "--show-secrets shows the values")
        #expect(!history.standardOutput.contains("write \(suite) token hunter2"))
    }
}
