import Foundation
import LiveDefaults
import TestSupport
import Testing

/// The store against other processes: Foundation's UserDefaults, concurrent writers, SIGKILL.
@Suite struct StoreProcessTests {
    @Test func foundationReadsWhatLiveDefaultsWrites() throws {
        let directory = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: "com.example.interop", directory: directory.url, watchesFiles: false)
        defaults.set("from LiveDefaults", forKey: "string")
        defaults.set(7, forKey: "int")
        defaults.set(true, forKey: "bool")
        defaults.set(["x", "y"], forKey: "array")
        defaults.set(URL(fileURLWithPath: "/tmp/some file"), forKey: "url")
        defaults.set(Date(timeIntervalSince1970: 1_700_000_000), forKey: "date")
        try defaults.synchronize()

        let result = try ProductRunner.run(
            "TestHelper", ["foundation-read", "com.example.interop"], environment: ["XDG_CONFIG_HOME": directory.path])
        #expect(result.status == 0, "\(result.standardError)")
        let lines = Set(result.standardOutput.split(separator: "\n").map(String.init))
        #expect(lines.contains("string=\"from LiveDefaults\""))
        #expect(lines.contains("int=7"))
        #expect(lines.contains("bool=true"))
        #expect(lines.contains("array=[\"x\", \"y\"]"))
        #expect(lines.contains("url()=/tmp/some file"), "Foundation reads the URL back: \(lines)")
        #expect(lines.contains { $0.hasPrefix("date=2023-11-14T22:13:20") })
    }

    @Test func liveDefaultsReadsWhatFoundationWrites() throws {
        let directory = try TemporaryDirectory()
        let result = try ProductRunner.run(
            "TestHelper", ["foundation-write", "com.example.fromfoundation"],
            environment: ["XDG_CONFIG_HOME": directory.path])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(FileManager.default.fileExists(atPath: directory.file("com.example.fromfoundation.plist").path))

        let defaults = try Defaults(
            suiteName: "com.example.fromfoundation", directory: directory.url, watchesFiles: false)
        #expect(defaults.string(forKey: "string") == "from Foundation")
        #expect(defaults.integer(forKey: "int") == 42)
        #expect(defaults.double(forKey: "double") == 2.5)
        #expect(defaults.bool(forKey: "bool"))
        #expect(defaults.object(forKey: "date") as? Date == Date(timeIntervalSince1970: 1_700_000_000))
        #expect(defaults.data(forKey: "data") == Data([1, 2, 3]))
        #expect(defaults.stringArray(forKey: "array") == ["a", "b"])
        #expect(defaults.propertyList(forKey: "dictionary") == ["k": "v", "n": 1])
        #expect(defaults.url(forKey: "url") == URL(fileURLWithPath: "/tmp/file"))
        // And the file stays Foundation's format (XML) when LiveDefaults writes it.
        defaults.set("both", forKey: "writer")
        try defaults.synchronize()
        let bytes = try Data(contentsOf: directory.file("com.example.fromfoundation.plist"))
        #expect(bytes.starts(with: Array("<?xml".utf8)))
    }

    /// With a system-wide file and a managed file present, the user's file stays Foundation's: what
    /// Foundation wrote reads through, what LiveDefaults writes (a set on a forced key among it)
    /// Foundation reads back, and no administered value is copied into it.
    @Test func foundationReadsAndWritesTheUsersFileBesideAdministeredLayers() throws {
        let directory = try TemporaryDirectory()
        let suite = "com.example.administered"
        let system = directory.file("xdg")
        let managed = directory.file("managed")
        for (folder, values) in [(system, ["fontSize": 12, "string": "site"]), (managed, ["theme": "managed"])] {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            chmod(folder.path, 0o755)
            let file = folder.appendingPathComponent(suite + ".plist")
            try PropertyListSerialization.data(fromPropertyList: values, format: .xml, options: 0).write(to: file)
            chmod(file.path, 0o644)
        }
        let written = try ProductRunner.run(
            "TestHelper", ["foundation-write", suite], environment: ["XDG_CONFIG_HOME": directory.path])
        #expect(written.status == 0, "\(written.standardError)")

        do {
            let defaults = try Defaults(
                suiteName: suite, directory: directory.url, watchesFiles: false,
                administeredSettings: AdministeredSettings(
                    systemDirectories: [system], managedDirectory: managed, trustedOwner: geteuid()))
            #expect(defaults.string(forKey: "string") == "from Foundation")
            #expect(defaults.integer(forKey: "fontSize") == 12)
            #expect(defaults.objectIsForced(forKey: "theme"))
            defaults.set("mine", forKey: "theme")
            defaults.set(3, forKey: "count")
            #expect(defaults.string(forKey: "theme") == "managed")
            try defaults.synchronize()
        }

        let bytes = try Data(contentsOf: directory.file(suite + ".plist"))
        #expect(bytes.starts(with: Array("<?xml".utf8)))
        let read = try ProductRunner.run(
            "TestHelper", ["foundation-read", suite], environment: ["XDG_CONFIG_HOME": directory.path])
        #expect(read.status == 0, "\(read.standardError)")
        let lines = Set(read.standardOutput.split(separator: "\n").map(String.init))
        let keys = Set(lines.compactMap { $0.split(separator: "=").first.map(String.init) })
        // Foundation's own keys and the two LiveDefaults set; no fontSize or forced theme copied in.
        #expect(
            keys == [
                "string", "int", "double", "bool", "date", "data", "array", "dictionary", "url", "url()", "theme",
                "count",
            ])
        #expect(lines.contains("theme=\"mine\""), "\(lines)")
        #expect(lines.contains("count=3"))
        #expect(lines.contains("string=\"from Foundation\""))
    }

    @Test func fourProcessesWritingDistinctKeysKeepEveryKey() async throws {
        let keys = Stress.scaled(500, quick: 100)
        let directory = try TemporaryDirectory()
        let writers = try (0..<4).map { index in
            try ProductRunner.start(
                "TestHelper", ["write-distinct", directory.path, "com.example.many", "p\(index)", "\(keys)"])
        }
        for writer in writers {
            #expect(writer.waitForExit().status == 0)
        }
        let bytes = try Data(contentsOf: directory.file("com.example.many.plist"))
        let values = try #require(
            try PropertyListSerialization.propertyList(from: bytes, format: nil) as? [String: Any])
        #expect(values.count == 4 * keys, "kept \(values.count) of \(4 * keys) keys")
        var kept = 0
        for writer in 0..<4 {
            for index in 0..<keys where values["p\(writer)-\(index)"] as? Int == index { kept += 1 }
        }
        #expect(kept == 4 * keys, "kept \(kept) of \(4 * keys) keys")
        Attachment.record(
            "4 processes × \(keys) distinct keys: \(kept) of \(4 * keys) kept", named: "distinct-keys.txt")
    }

    @Test func processKilledWhileFlushingLeavesACompleteEarlierState() async throws {
        // 1,000 kills in CI; 50 in a quick run. Two victims at a time, each lane of kills on a suite
        // of its own: a round mostly waits (the victim's start, the random moment of its death), so
        // two lanes take about half the time, and each lane checks what one did alone.
        let kills =
            Int(ProcessInfo.processInfo.environment["LIVEDEFAULTS_KILLS"] ?? "") ?? Stress.scaled(1_000, quick: 50)
        let lanes = kills > 1 ? 2 : 1
        let outcomes = try await withThrowingTaskGroup(of: KillLane.self) { group in
            for lane in 0..<lanes {
                group.addTask { try await Self.killLane(rounds: kills / lanes + (lane < kills % lanes ? 1 : 0)) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes.map(\.rounds).reduce(0, +) == kills)
        for outcome in outcomes {
            #expect(
                outcome.survived == outcome.rounds,
                "\(outcome.survived) of \(outcome.rounds) kills left a complete state")
            #expect(outcome.lastAcknowledged > 0, "the victims got as far as acknowledged writes")
            // Orphaned temporary files from killed writers are cleaned up by the next writer (the last
            // victim's may remain; no later writer ran).
            #expect(outcome.leftovers.count <= 1, "orphans left: \(outcome.leftovers)")
        }
        Attachment.record(
            "\(outcomes.map(\.survived).reduce(0, +)) of \(kills) kills left a complete earlier state; "
                + "\(outcomes.map(\.orphansSeen).reduce(0, +)) orphaned temporary files found and removed by the next "
                + "writer; last acknowledged generations \(outcomes.map(\.lastAcknowledged))",
            named: "kills.txt")
    }

    /// What one lane of kills saw.
    struct KillLane: Sendable {
        var rounds: Int
        var survived = 0
        var lastAcknowledged = 0
        var orphansSeen = 0
        var leftovers: [String] = []
    }

    /// `rounds` victims, one after another, each killed at a random moment while it flushes a suite of
    /// its own directory; after each, the file holds a state the writer had, with every write it
    /// acknowledged.
    static func killLane(rounds: Int) async throws -> KillLane {
        let keys = 2000  // about 250 KB of suite
        let directory = try TemporaryDirectory()
        let path = directory.file("com.example.crash.plist")
        var lane = KillLane(rounds: rounds)
        var orphansSeen = Set<String>()
        for round in 0..<rounds {
            let victim = try ProductRunner.start(
                "TestHelper", ["flush-forever", directory.path, "com.example.crash", "\(keys)"])
            // Every eighth victim is killed only once it has acknowledged a write, so that some kills
            // land after acknowledged writes whatever the load (at a load of 9, no victim got that far
            // within 60 ms of its start, and the test failed on that, not on a lost write).
            // The waits on a thread of their own, off the cooperative pool (a thousand rounds in CI).
            let output = try await onAThreadOfItsOwn {
                if round % 8 == 7 {
                    try victim.waitForLine(
                        on: .output, timeout: .seconds(60), where: { $0.hasPrefix("acked ") },
                        describedAs: "the victim's first acknowledged write")
                }
                // The kill lands at a random moment: before the first write, mid-write, or between
                // writes (the scenario under test, not synchronisation).
                usleep(UInt32.random(in: 0...60_000))
                victim.send(SIGKILL)
                return victim.waitForExit().standardOutput
            }
            if let last = output.split(separator: "\n").last(where: { $0.hasPrefix("acked ") }) {
                lane.lastAcknowledged = Int(last.dropFirst(6)) ?? lane.lastAcknowledged
            }
            for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) where name.contains(".tmp-")
            {
                orphansSeen.insert(name)
            }
            guard FileManager.default.fileExists(atPath: path.path) else {
                // Killed before its first write: no file is the complete earlier state.
                #expect(lane.lastAcknowledged == 0, "an acknowledged suite file vanished")
                if lane.lastAcknowledged == 0 { lane.survived += 1 }
                continue
            }
            let bytes = try Data(contentsOf: path)
            let values = try #require(
                try PropertyListSerialization.propertyList(from: bytes, format: nil) as? [String: Any],
                "the file parses after a kill (\(bytes.count) bytes)")
            // The writer sets key-0…key-(n-1) to generation g+1 one by one, then "generation" to g+1, and
            // background flushes may land anywhere in between. So a state the process really held is:
            // "generation" = g, a prefix of the keys at g+1 and the rest at g (absent when g = 0).
            let generation = Int(values["generation"] as? String ?? "0") ?? -1
            let keyGenerations = (0..<keys).map { index -> Int? in
                (values["key-\(index)"] as? String).flatMap { Int($0.prefix { $0 != "-" }) }
            }
            let advanced = keyGenerations.prefix { $0 == generation + 1 }.count
            let complete =
                keyGenerations.dropFirst(advanced).allSatisfy { $0 == (generation == 0 ? nil : generation) }
                && values.allSatisfy {
                    $0.key == "generation"
                        || ($0.value as? String)?.hasSuffix(String(repeating: "x", count: 100)) == true
                }
                && values.count == (generation == 0 ? advanced : keys + 1)
            #expect(
                complete, "the file holds a state the writer had (generation \(generation), \(advanced) keys ahead)")
            #expect(generation >= lane.lastAcknowledged, "every acknowledged write is present")
            if complete { lane.survived += 1 }
        }
        lane.orphansSeen = orphansSeen.count
        lane.leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter {
            $0.contains(".tmp-")
        }
        return lane
    }

    @Test func fileSizeLimitMakesSynchronizeThrowKeepingOldFileAndValues() throws {
        let directory = try TemporaryDirectory()
        let result = try ProductRunner.run("TestHelper", ["file-size-limit", directory.path, "com.example.full"])
        #expect(result.status == 0, "\(result.standardError)")
        let lines = result.standardOutput.split(separator: "\n").map(String.init)
        #expect(lines.first == "limited: threw writeFailed", "\(lines)")
        #expect(lines.contains { $0.hasPrefix("message: ") && $0.contains("file-size limit") })
        #expect(lines.contains("in memory: 200000"))
        #expect(lines.last == "unlimited: written")
        let values = try PropertyListValue.decodeForTest(Data(contentsOf: directory.file("com.example.full.plist")))
        #expect(values.dictionaryValue?["before"] == "small")
        #expect(values.dictionaryValue?["big"]?.stringValue?.count == 200_000)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter {
            $0.contains(".tmp-")
        }
        #expect(leftovers.isEmpty, "a failed write removes its temporary file")
    }

    @Test func valuesSetBeforeANormalExitAreWritten() throws {
        let directory = try TemporaryDirectory()
        let result = try ProductRunner.run(
            "TestHelper", ["set-and-exit", directory.path, "com.example.exit", "k", "v"])
        #expect(result.status == 0, "\(result.standardError)")
        let bytes = try Data(contentsOf: directory.file("com.example.exit.plist"))
        #expect(try PropertyListValue.decodeForTest(bytes) == ["k": "v"])
    }

    @Test func standardUsesTheProcessNameInXDGConfigHome() throws {
        let directory = try TemporaryDirectory()
        let result = try ProductRunner.run(
            "TestHelper", ["standard-set", "k", "v"], environment: ["XDG_CONFIG_HOME": directory.path])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput == "TestHelper\n")
        let bytes = try Data(contentsOf: directory.file("TestHelper.plist"))
        #expect(try PropertyListValue.decodeForTest(bytes) == ["k": "v"])
    }

    /// The global domain's store outlives its last `Defaults` while it is not watched, and is let
    /// go (with its watch) once an instance that watches has opened it and gone
    /// (docs/design.md, "Opening a suite: the global domain kept"). In a process of its own: every
    /// test in this one opens global domains, and the process keeps one.
    @Test func theGlobalDomainIsKeptOnlyWhileUnwatched() throws {
        let directory = try TemporaryDirectory()
        let result = try ProductRunner.run("TestHelper", ["kept-global-domain", directory.path, "com.example.kept"])
        #expect(result.status == 0, "\(result)")
        #expect(result.standardOutput.contains("kept after an unwatched open: true"), "\(result)")
        #expect(result.standardOutput.contains("kept after a watched open: false"), "\(result)")
    }
}

extension PropertyListValue {
    /// Decodes a whole file through Foundation (the oracle).
    static func decodeForTest(_ data: Data) throws -> PropertyListValue {
        try PropertyListValue(foundationObject: PropertyListSerialization.propertyList(from: data, format: nil))
    }
}
