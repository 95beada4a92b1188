import Foundation
import LiveDefaults
import LiveDefaultsPropertyList
import LiveDefaultsTestHelpers
import TestSupport
import Testing

/// Stress and fault tests that need other processes, mounts or a clean process of their own:
/// concurrent writers, orphaned temporary files, hostile directories, a full or read-only disk,
/// the watcher's limits, and leaks. (The SIGKILL loop, distinct-key writers and the file-size
/// limit are in ``StoreProcessTests``; queue overflow in ``WatcherProcessTests``.)
///
/// The heavy counts are CI's with `LIVEDEFAULTS_STRESS` set (`.ci/run` sets 1; a factor multiplies
/// them) and smaller in a plain `swift test` (``Stress``). Each test records its figures as an
/// attachment (`swift test --attachments-path <dir>` keeps them).
@Suite struct ReliabilityTests {
    // MARK: Processes

    @Test func twoProcessesWritingOneKeyEndOnTheLastWriteEverywhere() throws {
        let directory = try TemporaryDirectory()
        let count = Stress.scaled(200)
        let writers = try ["a", "b"].map { name in
            try ProductRunner.start(
                "TestHelper", ["same-key-writer", directory.path, "com.example.same", name, "\(count)"],
                keepingInputOpen: true)
        }
        for writer in writers { try writer.waitForLine(on: .output, where: { $0 == "ready" }) }
        for writer in writers { writer.write("go\n") }
        for writer in writers {
            try writer.waitForLine(on: .output, timeout: .seconds(60), where: { $0 == "done" })
        }
        let values = try PropertyListValue.decodeForTest(Data(contentsOf: directory.file("com.example.same.plist")))
        let final = try #require(values.dictionaryValue?["shared"]?.stringValue)
        // The file holds one writer's last write: no earlier value came back over a later one.
        #expect(["a-\(count - 1)", "b-\(count - 1)"].contains(final), "the file ended on \(final)")
        for writer in writers {
            writer.write("expect \(final)\n")
            let line = try writer.waitForLine(on: .output, timeout: .seconds(20), where: { $0.hasPrefix("observer=") })
            #expect(line == "observer=\(final) read=\(final)", "both processes' observers end on the last write")
        }
        for writer in writers {
            try writer.closeInput()
            #expect(writer.waitForExit().status == 0)
        }
        Attachment.record("2 processes × \(count) writes of one key: both ended on \(final)", named: "same-key.txt")
    }

    // MARK: Files and paths

    @Test func anOrphanedTemporaryFileIsNeverReadAndIsCleanedUp() throws {
        let directory = try TemporaryDirectory()
        let suite = "com.example.orphan"
        try PropertyListCodec.encode(["source": "suite file"], format: .binary)
            .write(to: directory.file(suite + ".plist"))
        // A writer that died mid-write (its process is gone) left a complete-looking temporary file.
        let deadProcess = try deadProcessIdentifier()
        let orphan = directory.file(".\(suite).plist.tmp-\(deadProcess)-42")
        try PropertyListCodec.encode(["source": "orphan"], format: .binary).write(to: orphan)

        let defaults = try Defaults(suiteName: suite, directory: directory.url, watchesFiles: false)
        #expect(defaults.string(forKey: "source") == "suite file", "the orphan is never read as the suite")
        defaults.set("written", forKey: "k")
        try defaults.synchronize()
        #expect(!FileManager.default.fileExists(atPath: orphan.path), "the next writer removed the orphan")
        let values = try PropertyListValue.decodeForTest(Data(contentsOf: directory.file(suite + ".plist")))
        #expect(values == ["source": "suite file", "k": "written"])
    }

    /// A reporting handler may use the library, even when the report comes from opening a suite.
    @Test func aHandlerThatOpensASuiteWhileABadFileIsReportedDoesNotDeadlock() throws {
        let directory = try TemporaryDirectory()
        try Data("garbage".utf8).write(to: directory.file("com.example.bad.plist"))
        let result = try ProductRunner.run("TestHelper", ["open-from-handler", directory.path, "com.example.bad"])
        #expect(result.status == 0, "\(result)")
        #expect(result.standardOutput == "handled corruptFile\nopened\n", "\(result)")
    }

    /// The identifier of a process that has exited (and not been reused).
    private func deadProcessIdentifier() throws -> pid_t {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/true")
        try process.run()
        process.waitUntilExit()
        let identifier = process.processIdentifier
        try #require(kill(identifier, 0) != 0 && errno == ESRCH)
        return identifier
    }

    /// Suite directories others can write are used, with one `insecureDirectory` warning per
    /// directory; a sticky directory (such as /tmp) or one of one's own is not warned about.
    @Test(arguments: [
        ("0777", 0o777, nil as uid_t?, true),
        ("0775", 0o775, nil, true),
        ("1777 (sticky)", 0o1777, nil, false),
        ("0755", 0o755, nil, false),
        ("0755, another user's", 0o755, 12_345, true),
    ])
    func aDirectoryOthersCanWriteIsWarnedAboutOnce(name: String, mode: Int, owner: uid_t?, warns: Bool) throws {
        let parent = try TemporaryDirectory()
        let directory = parent.file("suites")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
        #expect(chmod(directory.path, mode_t(mode)) == 0)
        if let owner { #expect(chown(directory.path, owner, owner) == 0) }
        let result = try ProductRunner.run(
            "TestHelper", ["open-reporting", directory.path, "com.example.one", "com.example.two"])
        #expect(result.status == 0, "\(result)")
        let warnings = result.standardOutput.split(separator: "\n").filter {
            $0.hasPrefix("reported insecureDirectory")
        }
        #expect(warnings == (warns ? ["reported insecureDirectory \(directory.path)"] : []), "\(result)")
        // Warned or not, the suites were written.
        #expect(FileManager.default.fileExists(atPath: directory.appendingPathComponent("com.example.two.plist").path))
    }

    @Test func suiteAndLockFilesArePrivateWhateverTheUmask() throws {
        let parent = try TemporaryDirectory()
        let directory = parent.file("new/config")
        let helper = ProductRunner.productsDirectory.appendingPathComponent("TestHelper").path
        let result = try CommandRunner(executable: URL(fileURLWithPath: "/bin/sh")).run([
            "-c", "umask 000 && exec \"$0\" \"$@\"", helper, "open-reporting", directory.path, "com.example.modes",
        ])
        #expect(result.status == 0, "\(result)")
        func mode(_ path: String) throws -> Int? {
            try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        }
        #expect(try mode(directory.path + "/com.example.modes.plist") == 0o600)
        #expect(try mode(directory.path + "/com.example.modes.plist.lock") == 0o600)
        #expect(try mode(directory.path) == 0o700)
        #expect(try mode(parent.file("new").path) == 0o700)
    }

    // MARK: Disk

    /// A 1 MB tmpfs, mounted for the test (needs root); nil where mounting is not allowed.
    final class SmallDisk {
        let path: String
        private let parent: TemporaryDirectory

        init?(megabytes: Int) throws {
            parent = try TemporaryDirectory()
            path = parent.path + "/disk"
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
            guard Self.mount(["-t", "tmpfs", "-o", "size=\(megabytes)m,mode=0700", "tmpfs", path]) else { return nil }
        }

        deinit { _ = Self.mount(["-l", path], command: "/usr/bin/umount") }

        func remount(readOnly: Bool) -> Bool {
            Self.mount(["-o", readOnly ? "remount,ro" : "remount,rw", path])
        }

        @discardableResult
        static func mount(_ arguments: [String], command: String = "/usr/bin/mount") -> Bool {
            guard let result = try? CommandRunner(executable: URL(fileURLWithPath: command)).run(arguments) else {
                return false
            }
            return result.status == 0
        }

        static let isAvailable: Bool = (try? SmallDisk(megabytes: 1)) != nil
    }

    @Test(.enabled(if: SmallDisk.isAvailable, "mounting a tmpfs needs root"))
    func aFullDiskMakesSynchronizeThrowAndTheValuesAreWrittenOncePossible() async throws {
        let disk = try #require(try SmallDisk(megabytes: 1))
        let directory = URL(fileURLWithPath: disk.path)
        let path = disk.path + "/com.example.full.plist"
        let defaults = try Defaults(suiteName: "com.example.full", directory: directory, watchesFiles: false)
        defaults.set("small", forKey: "before")
        try defaults.synchronize()
        let old = try Data(contentsOf: URL(fileURLWithPath: path))
        // Fill the disk.
        let filler = disk.path + "/filler"
        #expect(FileManager.default.createFile(atPath: filler, contents: nil))
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: filler))
        while (try? handle.write(contentsOf: Data(count: 64 << 10))) != nil {}
        try handle.close()

        defaults.set(String(repeating: "z", count: 300_000), forKey: "big")
        let error = try #require(throws: DefaultsError.self) { try defaults.synchronize() }
        #expect(error.code == .writeFailed)
        #expect(error.message.contains("disk is full"), "\(error.message)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == old, "the old file is intact")
        #expect(defaults.string(forKey: "big")?.count == 300_000, "the value stays in memory")

        // Space comes back: the background flush writes the value without being asked.
        try FileManager.default.removeItem(atPath: filler)
        let written = await eventually(within: 40) {
            guard let data = try? Data(contentsOf: URL(fileURLWithPath: path)),
                let values = try? PropertyListValue.decodeForTest(data)
            else { return false }
            return values.dictionaryValue?["big"]?.stringValue?.count == 300_000
        }
        #expect(written, "written once space was free")
        #expect(defaults.lastError == nil)
        // Checked here, not after the failed `synchronize`: the flush the `set` armed may be
        // failing at that moment, its temporary file not yet removed. Here every failed attempt
        // (ours and the background's) is over, and none left its temporary file.
        #expect(try FileManager.default.contentsOfDirectory(atPath: disk.path).filter { $0.contains(".tmp-") } == [])
    }

    @Test(.enabled(if: SmallDisk.isAvailable, "mounting a tmpfs needs root"))
    func aReadOnlyDirectoryMakesSynchronizeThrowAndTheValuesAreWrittenOncePossible() async throws {
        let disk = try #require(try SmallDisk(megabytes: 1))
        let location = try SuiteLocation(suiteName: "com.example.readonly", directory: disk.path)
        let path = location.path
        // A journal open for writing would keep the file system busy (no read-only remount): its
        // mapping fails, as a process at its mapping limit sees, and the store goes on without one.
        let operations = FailingFileOperations()
        operations.fail(.mmap, with: ENOMEM)
        // Nor may the history's log stay open between flushes.
        let store = SuiteStore(
            location: location,
            backend: FileBackend(location: location, operations: operations, keepsHistoryLogOpen: false))
        #expect(store.load().isEmpty)
        let defaults = try Defaults(primaryStore: store, watchesFiles: false)
        defaults.set("small", forKey: "before")
        try defaults.synchronize()
        let old = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(disk.remount(readOnly: true))

        defaults.set("after", forKey: "k")
        let error = try #require(throws: DefaultsError.self) { try defaults.synchronize() }
        #expect([.writeFailed, .lockFailed].contains(error.code))
        #expect(error.message.contains("com.example.readonly"), "\(error.message)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == old, "the old file is intact")
        #expect(defaults.string(forKey: "k") == "after", "the value stays in memory")

        #expect(disk.remount(readOnly: false))
        let written = await eventually(within: 40) {
            (try? Data(contentsOf: URL(fileURLWithPath: path))).flatMap { try? PropertyListValue.decodeForTest($0) }
                == ["before": "small", "k": "after"]
        }
        #expect(written, "written once the directory was writable again")
    }

    /// A directory that is read-only before the first `set`: the journal cannot be made (EROFS, for
    /// real), which gives one report naming its path; the value stays in memory and is written once
    /// the directory is writable (docs/design.md, "The journal": failure).
    @Test(.enabled(if: SmallDisk.isAvailable, "mounting a tmpfs needs root"))
    func aReadOnlyDirectoryGivesOneJournalReportAndTheValueIsWrittenOncePossible() async throws {
        let disk = try #require(try SmallDisk(megabytes: 1))
        let suite = "com.example.readonly-journal"
        let journals = disk.path + "/.\(suite).plist.journals"
        let reported = Locked<[DefaultsError]>([])
        let token = DefaultsErrorReporting.listen { error in
            if error.path?.hasPrefix(journals) == true { reported.withLock { $0.append(error) } }
        }
        defer { token.cancel() }
        #expect(disk.remount(readOnly: true))
        let defaults = try Defaults(suiteName: suite, directory: URL(fileURLWithPath: disk.path), watchesFiles: false)
        defaults.set("kept", forKey: "k")
        defaults.set("also kept", forKey: "j")
        #expect(await eventually { !reported.withLock(\.isEmpty) }, "the journal's failure is reported")
        #expect(defaults.string(forKey: "k") == "kept", "the value stays in memory")
        #expect(throws: DefaultsError.self) { try defaults.synchronize() }

        #expect(disk.remount(readOnly: false))
        try defaults.synchronize()
        #expect(
            (try? Data(contentsOf: URL(fileURLWithPath: disk.path + "/\(suite).plist")))
                .flatMap { try? PropertyListValue.decodeForTest($0) } == ["k": "kept", "j": "also kept"])
        let reports = reported.withLock { $0 }
        #expect(reports.count == 1, "\(reports)")
        #expect(reports.first?.message.contains("Read-only file system") == true, "\(reports)")
        let path = try #require(reports.first?.path)
        #expect(reports.first?.message.contains(path) == true, "the report names the journal's path")
    }

    // MARK: Watcher

    /// Runs `watch-key` (through `prefix`, a command and its arguments, when given), waits for it to
    /// be ready, changes the key from another process, and returns what the watcher printed.
    private func watchKey(
        in directory: borrowing TemporaryDirectory, extraDescriptors: Int = 0, through prefix: [String] = []
    ) throws -> (reports: [String], changed: String) {
        let helper = ProductRunner.productsDirectory.appendingPathComponent("TestHelper").path
        let arguments = ["watch-key", directory.path, "com.example.watched", "k", "\(extraDescriptors)"]
        let watcher =
            try prefix.isEmpty
            ? ProductRunner.start("TestHelper", arguments, keepingInputOpen: true)
            : CommandRunner(executable: URL(fileURLWithPath: prefix[0])).start(
                Array(prefix.dropFirst()) + [helper] + arguments, keepingInputOpen: true)
        defer { watcher.terminate() }
        try watcher.waitForLine(on: .output, where: { $0.hasPrefix("ready") })
        // The fallback is reported from the watcher's thread; wait for it before changing the file.
        try watcher.waitForLine(on: .output, where: { $0.hasPrefix("reported ") })
        let set = try ProductRunner.run(
            "TestHelper", ["set", directory.path, "com.example.watched", "k", "from another process"])
        #expect(set.status == 0)
        let changed = try watcher.waitForLine(on: .output, where: { $0.hasPrefix("changed") })
        let reports = watcher.standardOutput.split(separator: "\n").filter { $0.hasPrefix("reported ") }
        return (reports.map(String.init), changed)
    }

    @Test(.inotifyServes) func elevenHundredOpenDescriptorsBeforeFirstUseFallBackToPollingWithoutAbort() throws {
        let directory = try TemporaryDirectory()
        let (reports, changed) = try watchKey(in: directory, extraDescriptors: 1_100)
        #expect(reports.count == 1, "reported once: \(reports)")
        #expect(reports.first?.hasPrefix("reported watchingDegraded: File watching fell back to polling") == true)
        #expect(reports.first?.contains("1024") == true)
        #expect(changed == "changed \"from another process\"" || changed == "changed from another process")
    }

    static let canLimitWatchesInAUserNamespace: Bool = {
        guard
            let result = try? CommandRunner(executable: URL(fileURLWithPath: "/usr/bin/unshare")).run([
                "--user", "--map-root-user", "/bin/sh", "-c", "echo 1 > /proc/sys/user/max_inotify_watches",
            ])
        else { return false }
        return result.status == 0
    }()

    /// The inotify watch limit, reached: lowered to one watch (the watcher's own wake channel) in a
    /// user namespace of the helper's own, so nothing else on the machine is affected.
    @Test(.inotifyServes, .enabled(if: canLimitWatchesInAUserNamespace, "needs unshare --user"))
    func theInotifyWatchLimitFallsBackToPollingAndChangesAreStillSeen() throws {
        let directory = try TemporaryDirectory()
        let (reports, changed) = try watchKey(
            in: directory,
            through: [
                "/usr/bin/unshare", "--user", "--map-root-user", "/bin/sh", "-c",
                "echo 1 > /proc/sys/user/max_inotify_watches && exec \"$0\" \"$@\"",
            ])
        #expect(reports.count == 1, "reported once: \(reports)")
        #expect(reports.first?.hasPrefix("reported watchingDegraded:") == true)
        #expect(reports.first?.contains("watch limit") == true, "\(reports)")
        #expect(changed.contains("from another process"))
    }

    // MARK: Resources

    /// Opening and closing many watched stores with observation tokens, in a process of its own:
    /// descriptors and threads come back exactly (dispatch's worker pool aside, which only has
    /// to shrink back), and memory grows by less than 8 MB over all, under 512 KB over one of the
    /// last two quarters. CI opens 10,000 (a leak of 200 bytes a store would show in each quarter);
    /// a quick run opens 1,000 (a leak of 2 KB a store would).
    @Test(.inotifyServes) func openingAndClosingManyStoresLeaksNothing() throws {
        let directory = try TemporaryDirectory()
        let count = Stress.scaled(10_000, quick: 1_000)
        let result = try ProductRunner.run("TestHelper", ["open-close-stores", directory.path, "\(count)"])
        #expect(result.status == 0, "\(result)")
        func figures(_ label: String) throws -> [String: Int] {
            let line = try #require(result.standardOutput.split(separator: "\n").first { $0.hasPrefix(label + " ") })
            return Dictionary(
                uniqueKeysWithValues: line.split(separator: " ").dropFirst().compactMap { field in
                    let parts = field.split(separator: "=")
                    return parts.count == 2 ? Int(parts[1]).map { (String(parts[0]), $0) } : nil
                })
        }
        let before = try figures("before")
        let middle = try figures("middle")
        let late = try figures("late")
        let after = try figures("after")
        #expect(
            after["watches"] == 2, "the watcher let go of every directory (its wake and barrier channels stay)")
        // Unused directories stay watched for a second; letting go of thousands took minutes when
        // each removal re-read the kernel's list of watches (at CI's 5,000 a half; a quick run's 500
        // took 1.6 s instead of 1.0, which no bound can tell from load). Not a speed target: the bound
        // is far above a second so that a loaded machine cannot reach it, and far below minutes.
        for phase in [middle, after] {
            let settling = try #require(phase["watches-settled-ms"])
            #expect(settling >= 0 && settling < 20_000, "the watcher took \(settling) ms to let go")
        }
        #expect(after["descriptors"] == before["descriptors"])
        #expect(after["own-threads"] == before["own-threads"])
        #expect(try #require(after["threads"]) <= #require(before["threads"]))
        let growth = try #require(after["rss"]) - #require(before["rss"])
        // Each quarter of the second half, measured apart: a leak grows both; a one-off (a new
        // malloc arena or thread stack of dispatch's pool, which follows the machine's load: 1.1 MB
        // once in CI's full run) grows one. So the smaller of the two is held to half the old bound.
        let thirdQuarter = try #require(late["rss"]) - #require(middle["rss"])
        let lastQuarter = try #require(after["rss"]) - #require(late["rss"])
        #expect(growth < 8 << 20, "resident memory grew by \(growth) bytes")
        #expect(
            min(thirdQuarter, lastQuarter) < 512 << 10,
            "the last two quarters of \(count / 4) stores each added \(thirdQuarter) and \(lastQuarter) bytes")
        Attachment.record(result.standardOutput, named: "resources.txt")
    }
}
