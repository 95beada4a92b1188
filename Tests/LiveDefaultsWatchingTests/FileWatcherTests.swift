import Foundation
import TestSupport
import Testing

@testable import LiveDefaults
@testable import LiveDefaultsWatching

/// The calls one watch received: when, and whether the file existed at that moment.
private final class CallRecorder: Sendable {
    struct Call: Sendable {
        var time: ContinuousClock.Instant
        var fileExisted: Bool
        var change: FileChange
    }

    let path: String
    private let calls = Locked<[Call]>([])

    init(path: String) {
        self.path = path
    }

    var onChange: @Sendable (FileChange) -> Void {
        { [self] change in
            let existed = FileManager.default.fileExists(atPath: path)
            calls.withLock { $0.append(Call(time: .now, fileExisted: existed, change: change)) }
        }
    }

    var count: Int { calls.withLock { $0.count } }
    var all: [Call] { calls.withLock { $0 } }

    /// Each call, in order: when (after the first), whether the file existed then, and what the
    /// call said, for a failure's message.
    var described: String {
        let all = all
        guard let first = all.first?.time else { return "none" }
        return all.map { "+\($0.time - first) existed: \($0.fileExisted) \($0.change)" }.joined(separator: "; ")
    }
}

/// Runs `body` with the path of a fresh directory, removed when `body` is done.
private func withTemporaryDirectory<Result>(_ body: (String) async throws -> Result) async throws -> Result {
    let directory = try TemporaryDirectory()
    let result = try await body(directory.path)
    _ = consume directory
    return result
}

/// Watches `path` and waits for the first call, which every watch gets once it is in place.
private func startWatching(
    _ path: String, with watcher: FileWatcher = .shared
) async throws -> (FileWatch, CallRecorder) {
    let recorder = CallRecorder(path: path)
    let watch = watcher.watch(path: path, onChange: recorder.onChange)
    try #require(await eventually { recorder.count >= 1 && watch.isQuiet })
    return (watch, recorder)
}

/// Waits until `recorder` has `expected` calls and the watch has nothing pending, then checks
/// that no more came.
private func expectCalls(
    _ expected: Int, _ recorder: CallRecorder, _ watch: FileWatch, sourceLocation: SourceLocation = #_sourceLocation
) async {
    let settled = await eventually { recorder.count >= expected && watch.isQuiet }
    #expect(settled, "waiting for \(expected) calls", sourceLocation: sourceLocation)
    #expect(recorder.count == expected, "calls: \(recorder.described)", sourceLocation: sourceLocation)
}

/// Writes `text` to `path`: in place (truncate and write), or atomically the way the store does
/// it — a temporary file in the same directory, closed, then renamed over the file.
///
/// (Foundation's `.atomic` renames the temporary file before closing it, which gives two events
/// a few milliseconds apart and so, legitimately, sometimes two calls.)
///
/// The file is written by a child process, which has closed it when it exits. Written from this
/// process, the write's descriptor could outlive its close: a child that another suite spawns at
/// that moment gets a copy of the descriptor table and drops it only when it execs, and that last
/// close is the one the kernel reports (`IN_CLOSE_WRITE`), milliseconds late — after the watch
/// made next, or under the name the file was renamed to: a real close-after-write, and one more call.
private func write(_ text: String, to path: String, atomically: Bool) throws {
    let destination = atomically ? path + ".tmp-\(UUID().uuidString)" : path
    try run(["sh", "-c", "printf '%s' \"$1\" > \"$2\"", "sh", text, destination])
    if atomically { try #require(rename(destination, path) == 0) }
}

/// Runs a command-line tool and waits for it.
private func run(_ arguments: [String]) throws {
    let finished = try runToEnd("/usr/bin/env", arguments)
    try #require(finished.status == 0, "\(arguments) failed: \(finished.output)")
}

@Suite(.serialized) struct FileWatcherTests {
    @Test(.inotifyServes) func sharedWatcherUsesInotify() {
        #expect(FileWatcher.shared.mode == .inotify)
    }

    @Test func atomicReplaceGivesOneCall() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/suite.plist"
            try write("one", to: path, atomically: false)
            let (watch, recorder) = try await startWatching(path)
            try write("two", to: path, atomically: true)
            await expectCalls(2, recorder, watch)
            #expect(recorder.all.allSatisfy { $0.fileExisted })
        }
    }

    @Test func truncateAndWriteGivesOneCall() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/suite.plist"
            try write("one", to: path, atomically: false)
            let (watch, recorder) = try await startWatching(path)
            // In a child process, for the reason `write(_:to:atomically:)` gives.
            try run([
                "python3", "-c",
                "import os, sys; fd = os.open(sys.argv[1], os.O_WRONLY); os.ftruncate(fd, 0); "
                    + "os.write(fd, sys.argv[2].encode()); os.close(fd)",
                path, "two, longer",
            ])
            await expectCalls(2, recorder, watch)
        }
    }

    @Test func fileCreatedAfterWatchGivesOneCall() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/new.plist"
            let (watch, recorder) = try await startWatching(path)
            #expect(recorder.all.first?.fileExisted == false)
            try write("created", to: path, atomically: false)
            await expectCalls(2, recorder, watch)
            #expect(recorder.all.last?.fileExisted == true)
        }
    }

    /// An editor saving: the file is absent only for a moment, which must not count as a deletion.
    ///
    /// "A moment" is less than the deletion grace. A test thread held off the CPU between the
    /// removal and the write for the grace or longer (a loaded machine, the thread sanitizer, a
    /// test keeping every core busy) makes the absence count, rightly: such an attempt is not the
    /// scenario, and it is run again in a fresh directory (as `LiveReloadPathChangeTests` sets its
    /// slow rounds aside).
    @Test(arguments: ["remove then write", "rename to backup then write (vim)"])
    func briefAbsenceGivesOneCallWithTheFilePresent(pattern: String) async throws {
        let attempts = 10
        for _ in 1...attempts {
            let wasBrief = try await withTemporaryDirectory { directory -> Bool in
                let path = directory + "/suite.plist"
                try write("one", to: path, atomically: false)
                let (watch, recorder) = try await startWatching(path)
                let removed = ContinuousClock.now
                if pattern.hasPrefix("rename") {
                    try FileManager.default.moveItem(atPath: path, toPath: path + "~")
                    try write("two", to: path, atomically: false)
                } else {
                    try FileManager.default.removeItem(atPath: path)
                    try write("two", to: path, atomically: false)
                }
                // At most this long away: the write made the file again before it returned.
                let away = ContinuousClock.now - removed
                if pattern.hasPrefix("rename") { try FileManager.default.removeItem(atPath: path + "~") }
                guard away < FileWatcher.deletionGrace else { return false }
                await expectCalls(2, recorder, watch)
                #expect(recorder.all.allSatisfy { $0.fileExisted })
                return true
            }
            if wasBrief { return }
        }
        Issue.record("the file was away for the deletion grace or longer in all \(attempts) attempts")
    }

    @Test func deletionThatStaysGivesOneCallAfterTheGrace() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/suite.plist"
            try write("one", to: path, atomically: false)
            let (watch, recorder) = try await startWatching(path)
            let deleted = ContinuousClock.now
            try FileManager.default.removeItem(atPath: path)
            await expectCalls(2, recorder, watch)
            let call = try #require(recorder.all.last)
            #expect(!call.fileExisted)
            #expect(call.time - deleted >= FileWatcher.deletionGrace)
            // Coming back is a change again. (How many calls it gives is not this test's subject:
            // the contract allows a spurious call, and under load the create and the write of the
            // file coming back can be seen apart. The grace above is counted exactly.)
            let back = ContinuousClock.now
            try write("back", to: path, atomically: false)
            #expect(await eventually { recorder.all.contains { $0.time > back && $0.fileExisted } })
        }
    }

    @Test func otherFilesInTheDirectoryGiveNoCall() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/suite.plist"
            let other = directory + "/other.plist"
            try write("one", to: path, atomically: false)
            let (watch, recorder) = try await startWatching(path)
            // A second watch on the other file proves when its events have been handled: the
            // directory's events are read in order, so its call for the write made last comes after
            // the watcher has been through every event before it. (The other file's two writes may
            // merge into one call.)
            let (otherWatch, otherRecorder) = try await startWatching(other)
            try write("temporary", to: directory + "/suite.plist.tmp", atomically: false)
            try FileManager.default.removeItem(atPath: directory + "/suite.plist.tmp")
            try write("other", to: other, atomically: true)
            try write("other, again", to: other, atomically: false)
            #expect(await eventually { otherRecorder.count >= 2 && otherWatch.isQuiet })
            #expect(recorder.count == 1)
            try write("two", to: path, atomically: true)
            await expectCalls(2, recorder, watch)
        }
    }

    @Test func symbolicLinkIntoAnotherDirectoryFollowsItsTarget() async throws {
        try await withTemporaryDirectory { directory in
            let links = directory + "/links"
            let targets = directory + "/targets"
            try FileManager.default.createDirectory(atPath: links, withIntermediateDirectories: false)
            try FileManager.default.createDirectory(atPath: targets, withIntermediateDirectories: false)
            let path = links + "/suite.plist"
            try write("one", to: targets + "/real.plist", atomically: false)
            try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: "../targets/real.plist")
            let (watch, recorder) = try await startWatching(path)
            try write("two", to: targets + "/real.plist", atomically: true)
            await expectCalls(2, recorder, watch)

            // Re-pointing the link atomically is a change, and the new target is watched from then on.
            try write("three", to: targets + "/other.plist", atomically: false)
            try FileManager.default.createSymbolicLink(
                atPath: links + "/new-link", withDestinationPath: targets + "/other.plist")
            try run(["mv", "-T", links + "/new-link", path])
            await expectCalls(3, recorder, watch)
            try write("four", to: targets + "/other.plist", atomically: true)
            await expectCalls(4, recorder, watch)
            #expect(recorder.all.allSatisfy { $0.fileExisted })
        }
    }

    /// A plain file replaced by a symbolic link (renamed over it, as a dotfile manager does): the
    /// link's target is watched from then on, though the rename was only a write of the file's
    /// own name (the call looks whether the file became a link).
    @Test func aFileReplacedByALinkFollowsTheLinksTarget() async throws {
        try await withTemporaryDirectory { directory in
            let targets = directory + "/targets"
            try FileManager.default.createDirectory(atPath: targets, withIntermediateDirectories: false)
            let path = directory + "/suite.plist"
            try write("one", to: path, atomically: false)
            let (watch, recorder) = try await startWatching(path)
            try write("two", to: targets + "/real.plist", atomically: false)
            try FileManager.default.createSymbolicLink(
                atPath: directory + "/new-link", withDestinationPath: targets + "/real.plist")
            try run(["mv", "-T", directory + "/new-link", path])
            await expectCalls(2, recorder, watch)
            try write("three", to: targets + "/real.plist", atomically: true)
            await expectCalls(3, recorder, watch)
        }
    }

    @Test func pollingWatcherSeesChangesAndDeletions() async throws {
        let watcher = FileWatcher(forcePolling: true) { problem in Issue.record("a problem: \(problem.message)") }
        #expect(watcher.mode == .polling)
        try await withTemporaryDirectory { directory in
            let path = directory + "/suite.plist"
            try write("one", to: path, atomically: false)
            let (watch, recorder) = try await startWatching(path, with: watcher)
            try write("two, longer", to: path, atomically: false)
            await expectCalls(2, recorder, watch)
            try FileManager.default.removeItem(atPath: path)
            await expectCalls(3, recorder, watch)
            #expect(recorder.all.last?.fileExisted == false)
        }
    }

    @Test func cancelStopsCalls() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/suite.plist"
            try write("one", to: path, atomically: false)
            let (cancelled, cancelledRecorder) = try await startWatching(path)
            let (watch, recorder) = try await startWatching(path)
            cancelled.cancel()
            cancelled.cancel()
            try write("two", to: path, atomically: true)
            await expectCalls(2, recorder, watch)
            #expect(cancelledRecorder.count == 1)
        }
    }

    @Test func droppingTheWatchCancelsIt() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/suite.plist"
            var (dropped, droppedRecorder): (FileWatch?, CallRecorder) = try await startWatching(path)
            #expect(dropped != nil)
            dropped = nil
            let (watch, recorder) = try await startWatching(path)
            try write("two", to: path, atomically: true)
            await expectCalls(2, recorder, watch)
            #expect(droppedRecorder.count == 1)
        }
    }

    @Test func manyFilesInOneDirectory() async throws {
        try await withTemporaryDirectory { directory in
            let paths = (0..<40).map { directory + "/suite-\($0).plist" }
            // Written before the directory is watched, so no event of theirs can arrive late.
            for path in paths { try write("one", to: path, atomically: false) }
            var watches: [(FileWatch, CallRecorder)] = []
            for path in paths { watches.append(try await startWatching(path)) }
            for path in paths { try write("two", to: path, atomically: true) }
            // Every file's change is seen. (Exact counts are checked by the single-file tests; with 40
            // files and a loaded machine the contract's harmless spurious call may occur here.)
            for (watch, recorder) in watches {
                #expect(await eventually { recorder.count >= 2 && watch.isQuiet }, "\(recorder.path)")
            }
        }
    }

    /// A watch made while the inotify thread is blocked waiting for events is in place at once.
    @Test func changeOneMillisecondAfterWatchIsSeen() async throws {
        try await withTemporaryDirectory { directory in
            let fresh = directory + "/fresh"  // a directory nobody watches yet
            try FileManager.default.createDirectory(atPath: fresh, withIntermediateDirectories: false)
            let path = fresh + "/suite.plist"
            let recorder = CallRecorder(path: path)
            let watch = FileWatcher.shared.watch(path: path, onChange: recorder.onChange)
            usleep(1000)  // the scenario under test (a change 1 ms later), not synchronisation
            let written = ContinuousClock.now
            try write("one", to: path, atomically: true)
            #expect(await eventually { recorder.all.contains { $0.time > written && $0.fileExisted } })
            // How soon, in a process whose inotify wait is stretched so that "late" is unmistakable:
            // WatcherProcessTests.changeOneMillisecondAfterWatchIsSeenAtOnce.
            #expect(await eventually { watch.isQuiet })
        }
    }

    @Test func deletedAndRecreatedDirectoryIsWatchedAgain() async throws {
        try await withTemporaryDirectory { directory in
            let suites = directory + "/suites"
            try FileManager.default.createDirectory(atPath: suites, withIntermediateDirectories: false)
            let path = suites + "/suite.plist"
            try write("one", to: path, atomically: false)
            let (watch, recorder) = try await startWatching(path)
            try FileManager.default.removeItem(atPath: suites)
            await expectCalls(2, recorder, watch)
            #expect(recorder.all.last?.fileExisted == false)
            try FileManager.default.createDirectory(atPath: suites, withIntermediateDirectories: false)
            try write("two", to: path, atomically: false)
            #expect(await eventually { recorder.all.last?.fileExisted == true && watch.isQuiet })
            // The new directory is watched: a write in it is called for. (Counting the calls is not
            // this test's subject: the contract allows a spurious call, and under load the directory's
            // re-arming can give a look after the calls above.)
            let three = ContinuousClock.now
            try write("three", to: path, atomically: true)
            #expect(await eventually { recorder.all.contains { $0.time > three && $0.fileExisted } })
        }
    }

    /// A file whose directories do not exist yet: the watcher watches the nearest existing ancestor
    /// for them (no poll), and follows the file once `mkdir -p` makes them.
    @Test(.inotifyServes) func aFileInDirectoriesMadeLaterIsFollowedThroughTheirAncestor() async throws {
        try await withTemporaryDirectory { directory in
            let missing = directory + "/etc/managed"
            let path = missing + "/suite.plist"
            let recorder = CallRecorder(path: path)
            let watch = FileWatcher.shared.watch(path: path, onChange: recorder.onChange)
            let registry = FileWatcher.shared.core.registry
            let awaited = await eventually {
                registry.withLock {
                    $0.awaited[missing] == WatchedEntry(directory: directory, name: "etc")
                        && $0.directoryStatus[directory] == .armed
                }
            }
            #expect(awaited, "the ancestor is armed for the missing directories")
            try FileManager.default.createDirectory(atPath: missing, withIntermediateDirectories: true)
            try write("one", to: path, atomically: true)
            #expect(await eventually { recorder.all.contains { $0.fileExisted } })
            #expect(await eventually { registry.withLock { $0.directoryStatus[missing] } == .armed })
            #expect(registry.withLock { $0.awaited[missing] } == nil)
            let two = ContinuousClock.now
            try write("two", to: path, atomically: true)
            #expect(await eventually { recorder.all.contains { $0.time > two && $0.fileExisted } })
            watch.cancel()
        }
    }

    /// Every link of a chain is watched, in the directory it really is in, and so is the final
    /// target; re-pointing the middle link is a change, and the new target is watched from then on.
    @Test func everyLinkOfAChainIsWatched() async throws {
        try await withTemporaryDirectory { directory in
            for name in ["config", "dotfiles", "r1", "r2"] {
                try FileManager.default.createDirectory(
                    atPath: directory + "/" + name, withIntermediateDirectories: false)
            }
            try write("one", to: directory + "/r1/S.plist", atomically: false)
            try write("two", to: directory + "/r2/S.plist", atomically: false)
            let path = directory + "/config/suite.plist"
            try FileManager.default.createSymbolicLink(
                atPath: directory + "/dotfiles/current.plist", withDestinationPath: "../r1/S.plist")
            try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: "../dotfiles/current.plist")
            let real = try #require(
                realpath(directory, nil).map { pointer in
                    defer { free(pointer) }
                    return String(cString: pointer)
                })
            let watched = WatchedPath.resolve(path)
            #expect(
                watched.entries == [
                    WatchedEntry(directory: directory + "/config", name: "suite.plist"),
                    WatchedEntry(directory: real + "/dotfiles", name: "current.plist"),
                    WatchedEntry(directory: real + "/r1", name: "S.plist"),
                ])
            #expect(!watched.isChainTooLong)

            let (watch, recorder) = try await startWatching(path)
            let swapped = directory + "/dotfiles/.swap"
            try FileManager.default.createSymbolicLink(atPath: swapped, withDestinationPath: "../r2/S.plist")
            try #require(rename(swapped, directory + "/dotfiles/current.plist") == 0)
            #expect(await eventually { recorder.count >= 2 && watch.isQuiet }, "the swap was seen")
            let count = recorder.count
            try write("two, edited", to: directory + "/r2/S.plist", atomically: true)
            await expectCalls(count + 1, recorder, watch)
        }
    }

    @Test func aChainLongerThanTheBoundIsCutThere() async throws {
        try await withTemporaryDirectory { directory in
            let count = WatchedPath.maximumLinkHops + 1
            for index in 0..<count {
                try FileManager.default.createSymbolicLink(
                    atPath: directory + "/link-\(index)", withDestinationPath: "link-\(index + 1)")
            }
            let watched = WatchedPath.resolve(directory + "/link-0")
            #expect(watched.isChainTooLong)
            #expect(watched.entries.count <= WatchedPath.maximumLinkHops + 1)
            // A loop is a chain that never ends.
            try FileManager.default.createSymbolicLink(atPath: directory + "/loop-a", withDestinationPath: "loop-b")
            try FileManager.default.createSymbolicLink(atPath: directory + "/loop-b", withDestinationPath: "loop-a")
            #expect(WatchedPath.resolve(directory + "/loop-a").isChainTooLong)
            #expect(!WatchedPath.resolve(directory + "/link-1").isChainTooLong)
        }
    }

    // Assumes sed, mv and python3 on PATH (scripts/setup.sh installs python3); a missing tool fails the case.
    @Test(arguments: ["sed", "mv", "python3"])
    func realToolsGiveOneCall(tool: String) async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/suite.plist"
            try write("one", to: path, atomically: false)
            let (watch, recorder) = try await startWatching(path)
            switch tool {
            case "sed":
                try run(["sed", "-i", "s/one/two/", path])
            case "mv":
                try write("two", to: directory + "/incoming", atomically: false)
                try run(["mv", directory + "/incoming", path])
            default:
                try write("two", to: directory + "/incoming", atomically: false)
                try run([
                    "python3", "-c", "import os, sys; os.replace(sys.argv[1], sys.argv[2])", directory + "/incoming",
                    path,
                ])
            }
            await expectCalls(2, recorder, watch)
            #expect(try String(contentsOfFile: path, encoding: .utf8) == "two" || tool == "sed")
        }
    }

    @Test(.inotifyServes) func lowestFreeDescriptorIsTheNextOneOpened() throws {
        // Assumes no other thread opens or closes a descriptor between the probe and the open; other
        // suites run in parallel and do (under the thread sanitizer a try saw 3, then 38), so one of
        // up to 100 tries must agree.
        var tries: [(probed: Int32, opened: Int32)] = []
        while tries.count < 100, tries.last.map({ $0.probed != $0.opened }) ?? true {
            let probed = try #require(InotifyDescriptorCheck.lowestFreeDescriptor())
            let opened = open("/dev/null", O_RDONLY | O_CLOEXEC)
            close(opened)
            tries.append((probed, opened))
        }
        #expect(tries.last.map { $0.probed == $0.opened } == true, "\(tries.suffix(3))")
        _ = FileWatcher.shared.mode
        let inotify = try #require(InotifyDescriptorCheck.inotifyDescriptors())
        #expect(inotify.allSatisfy { $0 < InotifyDescriptorCheck.selectLimit })
        #expect(!inotify.isEmpty)
    }
}

/// Runs only on request, because it must be the first use of ``FileWatcher/shared`` in its process:
/// `LIVEDEFAULTS_WATCHER_HIGH_DESCRIPTORS=1 swift test --filter FileWatcherHighDescriptorTests`.
/// libinotifytools cannot serve from descriptor 1024 on (it waits with `select()`), so the default
/// build polls; the `KernelInotify` build waits with `poll()` and keeps inotify.
@Suite struct FileWatcherHighDescriptorTests {
    private final class Reports: Sendable {
        let errors = Locked<[DefaultsError]>([])
    }

    @Test(.enabled(if: ProcessInfo.processInfo.environment["LIVEDEFAULTS_WATCHER_HIGH_DESCRIPTORS"] != nil))
    func descriptorsFrom1024OnFallBackToPolling() async throws {
        var opened: [Int32] = []
        defer { opened.forEach { close($0) } }
        while let next = InotifyDescriptorCheck.lowestFreeDescriptor(), next < InotifyDescriptorCheck.selectLimit + 10 {
            let descriptor = open("/dev/null", O_RDONLY | O_CLOEXEC)
            try #require(descriptor >= 0)
            opened.append(descriptor)
        }
        let reports = Reports()
        let reporting = DefaultsErrorReporting.listen { error in
            if error.code == .watchingDegraded { reports.errors.withLock { $0.append(error) } }
        }
        defer { reporting.cancel() }

        if InotifyInterface.descriptorLimit != nil {
            #expect(FileWatcher.shared.mode == .polling)
            #expect(await eventually { reports.errors.withLock { !$0.isEmpty } })
            let errors = reports.errors.withLock { $0 }
            #expect(errors.count == 1)
            #expect(errors.first?.code == .watchingDegraded)
            #expect(errors.first?.message.contains("1024") == true)
        } else {
            #expect(FileWatcher.shared.mode == .inotify)
            let descriptors = try #require(InotifyDescriptorCheck.inotifyDescriptors())
            #expect(descriptors.contains { $0 >= InotifyDescriptorCheck.selectLimit })
        }

        try await withTemporaryDirectory { directory in
            let path = directory + "/suite.plist"
            try write("one", to: path, atomically: false)
            let (watch, recorder) = try await startWatching(path)
            try write("two, longer", to: path, atomically: true)
            await expectCalls(2, recorder, watch)
        }
    }
}
