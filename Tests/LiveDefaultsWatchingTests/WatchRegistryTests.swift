import Testing

@testable import LiveDefaults
@testable import LiveDefaultsWatching

/// The rules of the registry, without threads or files.
@Suite struct WatchRegistryTests {
    private func registry() -> WatchRegistry {
        WatchRegistry(
            mode: .inotify, coalescingWindow: .milliseconds(5), deletionGrace: .milliseconds(100),
            pollInterval: .milliseconds(250))
    }

    private let path = WatchedPath(
        path: "/d/f", link: WatchedEntry(directory: "/d", name: "f"), target: nil)

    @Test func overflowCallsEveryWatchedFile() {
        var registry = registry()
        let first = registry.add(path, onChange: {}, now: 0).identifier
        let second = registry.add(WatchedPath.resolve("/e/g"), onChange: {}, now: 0).identifier
        _ = registry.apply(.directoryArmed("/d"), now: 0)
        _ = registry.apply(.directoryArmed("/e"), now: 0)
        _ = registry.takeDueWork(now: 1)
        let applied = registry.apply(.overflow, now: 10)
        #expect(applied)
        let work = registry.takeDueWork(now: 10 + 5_000_000)
        #expect(Set(work.calls) == [first, second])
    }

    @Test func burstsAreCoalesced() {
        var registry = registry()
        let identifier = registry.add(path, onChange: {}, now: 0).identifier
        _ = registry.apply(.directoryArmed("/d"), now: 0)
        _ = registry.takeDueWork(now: 1)
        for offset in 0..<4 {
            _ = registry.apply(.entry(path.link, .written), now: 100 + UInt64(offset) * 1_000_000)
        }
        let early = registry.takeDueWork(now: 100 + 4_000_000)
        let due = registry.takeDueWork(now: 100 + 5_000_000)
        #expect(early.calls.isEmpty)
        #expect(due.calls == [identifier])
        #expect(registry.nextDeadline() == nil)
    }

    /// Writes paced by the reader — each after the last one was read — are each called for at
    /// once, not at the end of the window.
    @Test func aWriteAfterTheLastCallsWorkIsDoneIsCalledAtOnce() {
        var registry = registry()
        let identifier = registry.add(path, onChange: {}, now: 0).identifier
        _ = registry.apply(.directoryArmed("/d"), now: 0)
        #expect(registry.takeDueWork(now: 1).calls == [identifier], "the first call")
        let finished = registry.callFinished(identifier, now: 50)
        #expect(!finished, "no write was waiting")
        for offset: UInt64 in [100, 1_100, 2_100] {
            _ = registry.apply(.entry(path.link, .written), now: offset)
            #expect(registry.takeDueWork(now: offset).calls == [identifier], "the write at \(offset) ns")
            #expect(registry.nextDeadline() == nil)
            _ = registry.callFinished(identifier, now: offset + 500)
        }
    }

    /// Writes that come while the last call's work runs are still gathered into one call, made
    /// when the work is done (or at the end of the window, when no one says so).
    @Test func writesDuringTheLastCallsWorkGiveOneCallWhenItIsDone() {
        var registry = registry()
        let identifier = registry.add(path, onChange: {}, now: 0).identifier
        _ = registry.apply(.directoryArmed("/d"), now: 0)
        _ = registry.takeDueWork(now: 1)
        for offset in 0..<4 {
            _ = registry.apply(.entry(path.link, .written), now: 100 + UInt64(offset) * 100_000)
        }
        #expect(registry.takeDueWork(now: 400_000).calls.isEmpty, "the burst waits while the work runs")
        let finished = registry.callFinished(identifier, now: 500_000)
        #expect(finished)
        #expect(registry.takeDueWork(now: 500_000).calls == [identifier], "one call for the four writes")
        #expect(registry.nextDeadline() == nil)
    }

    /// A kernel queue overflow's call (any file may have changed) falls due at the end of the
    /// work too: it is a full call.
    @Test func anOverflowsCallFallsDueWhenTheWorkIsDone() {
        var registry = registry()
        let identifier = registry.add(path, onChange: {}, now: 0).identifier
        _ = registry.apply(.directoryArmed("/d"), now: 0)
        _ = registry.takeDueWork(now: 1)
        _ = registry.apply(.overflow, now: 10)
        #expect(registry.takeDueWork(now: 20).calls.isEmpty)
        let finished = registry.callFinished(identifier, now: 30)
        #expect(finished)
        let work = registry.takeDueWork(now: 30)
        #expect(work.calls == [identifier])
        #expect(work.looks.isEmpty)
    }

    @Test func removalCancelsAPendingCallUntilTheGraceRunsOut() {
        var registry = registry()
        let identifier = registry.add(path, onChange: {}, now: 0).identifier
        _ = registry.apply(.directoryArmed("/d"), now: 0)
        _ = registry.takeDueWork(now: 1)
        _ = registry.apply(.entry(path.link, .written), now: 10)
        _ = registry.apply(.entry(path.link, .removed), now: 20)
        let duringGrace = registry.takeDueWork(now: 20 + 50_000_000)
        #expect(duringGrace.calls.isEmpty)
        let work = registry.takeDueWork(now: 20 + 100_000_000)
        #expect(work.settleChecks.map(\.id) == [identifier])
        // Back without a complete write (a hard link): call. Back and written: the write's call suffices.
        #expect(registry.settle(identifier, isPresent: true))
        _ = registry.apply(.entry(path.link, .removed), now: 200_000_000)
        _ = registry.apply(.entry(path.link, .written), now: 201_000_000)
        #expect(!registry.settle(identifier, isPresent: true))
        #expect(registry.settle(identifier, isPresent: false))
    }

    /// A file as `stat` might see it; `version` stands for its content.
    private func stamp(_ version: Int) -> FileStamp {
        FileStamp(
            device: 1, inode: UInt64(version), size: 10, modificationSeconds: version, modificationNanoseconds: 0,
            changeSeconds: version, changeNanoseconds: 0, linkInode: UInt64(version), linkChangeSeconds: version,
            linkChangeNanoseconds: 0)
    }

    /// Takes the due work at `now` and decides its calls the way the dispatcher does, with the
    /// file looking like `stamp`. Returns the calls made.
    private func calls(_ registry: inout WatchRegistry, at now: UInt64, seeing stamp: FileStamp?) -> [UInt64] {
        let work = registry.takeDueWork(now: now)
        return work.calls.filter {
            registry.admitCall($0, seeing: stamp, isLook: work.looks.contains($0), now: now)
        }
    }

    /// A directory deleted and made again (or moved away and replaced) while the file is away:
    /// arming the new directory must not call while the file is not back — a call then reads a
    /// file that is not there and reports every key removed. The grace decides.
    @Test(arguments: [false, true])
    func aDirectoryArmedAgainWithinTheGraceCallsOnlyWhenTheFileIsBack(foundByPolling: Bool) {
        var registry = registry()
        let identifier = registry.add(path, onChange: {}, now: 0).identifier
        _ = registry.apply(.directoryArmed("/d"), now: 0)
        #expect(calls(&registry, at: 1, seeing: stamp(1)) == [identifier], "the first call")
        _ = registry.apply(.entry(path.link, .removed), now: 10)
        _ = registry.apply(.directoryLost("/d"), now: 20)
        if foundByPolling {
            // The directory was not there yet when the old watch was lost; the poll for missing
            // directories found it.
            let reappeared = registry.directoryReappeared("/d")
            #expect(reappeared)
        }
        _ = registry.apply(.directoryArmed("/d"), now: 30)
        #expect(calls(&registry, at: 30, seeing: nil).isEmpty, "no call while the file is away")
        let work = registry.takeDueWork(now: 20 + 100_000_000)
        #expect(work.settleChecks.map(\.id) == [identifier])
        // Back, written while no watch saw it: call. Still away: call (a real deletion).
        #expect(registry.settle(identifier, isPresent: true))
        #expect(registry.settle(identifier, isPresent: false))
    }

    /// The file written in the new directory before it was armed: the look calls at once.
    @Test func aDirectoryArmedAgainWithTheFileBackCallsAtOnce() {
        var registry = registry()
        let identifier = registry.add(path, onChange: {}, now: 0).identifier
        _ = registry.apply(.directoryArmed("/d"), now: 0)
        _ = calls(&registry, at: 1, seeing: stamp(1))
        _ = registry.apply(.entry(path.link, .removed), now: 10)
        _ = registry.apply(.directoryLost("/d"), now: 20)
        _ = registry.apply(.directoryArmed("/d"), now: 30)
        #expect(calls(&registry, at: 30, seeing: stamp(2)) == [identifier])
        // The grace then has nothing to add: the call read the file as it is.
        _ = registry.takeDueWork(now: 20 + 100_000_000)
        #expect(!registry.settle(identifier, isPresent: true))
    }

    /// The directory deleted and made again while it was not watched (it was being polled for):
    /// no deletion event, no grace running — the look still must not call while the file is away.
    @Test func aLookAtAFileThatIsAwayStartsTheGrace() {
        var registry = registry()
        let identifier = registry.add(path, onChange: {}, now: 0).identifier
        _ = registry.apply(.directoryArmed("/d"), now: 0)
        _ = calls(&registry, at: 1, seeing: stamp(1))
        _ = registry.apply(.directoryMissing("/d"), now: 10)
        _ = registry.apply(.directoryArmed("/d"), now: 300_000_000)
        #expect(calls(&registry, at: 300_000_000, seeing: nil).isEmpty)
        #expect(registry.nextDeadline() == 400_000_000, "the grace runs")
        let work = registry.takeDueWork(now: 400_000_000)
        #expect(work.settleChecks.map(\.id) == [identifier])
        #expect(registry.settle(identifier, isPresent: false), "still away after the grace: a deletion")
    }

    /// A look at a file that is as the last call saw it is no change; a different one is.
    @Test func aLookCallsOnlyWhenTheFileDiffersFromTheLastCall() {
        var registry = registry()
        let identifier = registry.add(path, onChange: {}, now: 0).identifier
        _ = registry.apply(.directoryArmed("/d"), now: 0)
        _ = calls(&registry, at: 1, seeing: stamp(1))
        _ = registry.apply(.directoryMissing("/d"), now: 10)
        _ = registry.apply(.directoryArmed("/d"), now: 20)
        #expect(calls(&registry, at: 20, seeing: stamp(1)).isEmpty)
        _ = registry.apply(.directoryMissing("/d"), now: 30)
        _ = registry.apply(.directoryArmed("/d"), now: 40)
        #expect(calls(&registry, at: 40, seeing: stamp(2)) == [identifier])
        // A write is always a call.
        _ = registry.apply(.entry(path.link, .written), now: 50_000_000)
        #expect(calls(&registry, at: 50_000_000, seeing: stamp(2)) == [identifier])
    }

    /// The reader found the file absent after a call (it went in between): the absence counts
    /// only once the file has been away for the grace, and the grace's end calls again.
    @Test func anAbsenceTheReaderFindsCountsOnlyAfterTheGrace() {
        var registry = registry()
        let identifier = registry.add(path, onChange: {}, now: 0).identifier
        _ = registry.apply(.directoryArmed("/d"), now: 0)
        _ = calls(&registry, at: 1, seeing: stamp(1))
        // No deletion seen yet: the reader's finding starts the grace.
        let atFirst = registry.absenceCounts(identifier, now: 10)
        #expect(!atFirst)
        #expect(registry.nextDeadline() == 10 + 100_000_000)
        let withinTheGrace = registry.absenceCounts(identifier, now: 50_000_000)
        #expect(!withinTheGrace)
        let work = registry.takeDueWork(now: 10 + 100_000_000)
        #expect(work.settleChecks.map(\.id) == [identifier])
        #expect(registry.settle(identifier, isPresent: false), "the grace's end calls again")
        let afterTheGrace = registry.absenceCounts(identifier, now: 10 + 100_000_000)
        #expect(afterTheGrace)
        // The file back and written, then deleted: the absence counts from the deletion event.
        _ = registry.apply(.entry(path.link, .written), now: 200_000_000)
        _ = registry.apply(.entry(path.link, .removed), now: 300_000_000)
        let soonAfterTheDeletion = registry.absenceCounts(identifier, now: 350_000_000)
        #expect(!soonAfterTheDeletion)
        let aGraceAfterTheDeletion = registry.absenceCounts(identifier, now: 400_000_000)
        #expect(aGraceAfterTheDeletion)
    }

    /// The first call says the watch is in place, whether the file exists or not.
    @Test func theFirstCallIsMadeEvenWhenTheFileIsAbsent() {
        var registry = registry()
        let identifier = registry.add(path, onChange: {}, now: 0).identifier
        _ = registry.apply(.directoryArmed("/d"), now: 0)
        #expect(calls(&registry, at: 1, seeing: nil) == [identifier])
    }

    /// A chain longer than the bound is reported once, naming the path.
    @Test func aChainTooLongIsReportedNamingThePath() {
        var registry = registry()
        var watched = WatchedPath.resolve("/d/f")
        watched.isChainTooLong = true
        _ = registry.add(watched, onChange: {}, now: 0)
        // As the library reports it.
        let reports = registry.takeDueWork(now: 1).reports.map(DefaultsError.init)
        #expect(reports.count == 1)
        #expect(reports.first?.code == .watchingDegraded)
        #expect(reports.first?.path == "/d/f")
        #expect(reports.first?.message.contains("/d/f") == true)
        let later = registry.takeDueWork(now: 2)
        #expect(later.reports.isEmpty)
    }

    @Test func otherNamesAreIgnored() {
        var registry = registry()
        _ = registry.add(path, onChange: {}, now: 0)
        let otherName = registry.apply(.entry(WatchedEntry(directory: "/d", name: "f.tmp"), .written), now: 0)
        let otherDirectory = registry.apply(.entry(WatchedEntry(directory: "/x", name: "f"), .written), now: 0)
        #expect(!otherName)
        #expect(!otherDirectory)
    }

    @Test(arguments: [
        ("/a/b/../c//d/./e", "/a/c/d", "e"),
        ("/f", "/", "f"),
        ("/a/b/", "/a", "b"),
    ])
    func pathsAreSplitLexically(path: String, directory: String, name: String) {
        let watched = WatchedPath.resolve(path)
        #expect(watched.link == WatchedEntry(directory: directory, name: name))
        #expect(watched.target == nil)
    }
}
