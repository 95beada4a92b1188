import Testing

@testable import LiveDefaults
@testable import LiveDefaultsWatching

/// The rules of the registry, without threads or files.
@Suite struct WatchRegistryTests {
    private func registry() -> WatchRegistry {
        WatchRegistry(
            mode: .inotify, deletionGrace: .milliseconds(100), pollInterval: .milliseconds(250))
    }

    private let path = WatchedPath(
        path: "/d/f", link: WatchedEntry(directory: "/d", name: "f"), target: nil)

    @Test func overflowCallsEveryWatchedFile() {
        var registry = registry()
        let first = registry.add(path, onChange: { _ in }, now: 0).identifier
        let second = registry.add(WatchedPath.resolve("/e/g"), onChange: { _ in }, now: 0).identifier
        _ = registry.apply(.directoryArmed("/d"), now: 0)
        _ = registry.apply(.directoryArmed("/e"), now: 0)
        _ = registry.takeDueWork(now: 1)
        let applied = registry.apply(.overflow, now: 10)
        #expect(applied)
        let work = registry.takeDueWork(now: 10 + 5_000_000)
        #expect(Set(work.calls) == [first, second])
    }

    /// Writes seen before the due call is made merge into it; that is all the watcher does with
    /// a burst (the store's schedule coalesces reloads).
    @Test func writesBeforeTheCallIsMadeMergeIntoIt() {
        var registry = registry()
        let identifier = registry.add(path, onChange: { _ in }, now: 0).identifier
        _ = registry.apply(.directoryArmed("/d"), now: 0)
        _ = registry.takeDueWork(now: 1)
        for offset in 0..<4 {
            _ = registry.apply(.entry(path.link, .written), now: 100 + UInt64(offset) * 1_000)
        }
        #expect(registry.takeDueWork(now: 5_000).calls == [identifier], "one call for the four writes")
        #expect(registry.nextDeadline() == nil)
    }

    /// A write right after a call is called for at once: the watcher holds nothing back, and
    /// needs no word from the reader that its work is done.
    @Test func everyWriteAfterACallIsCalledForAtOnce() {
        var registry = registry()
        let identifier = registry.add(path, onChange: { _ in }, now: 0).identifier
        _ = registry.apply(.directoryArmed("/d"), now: 0)
        #expect(registry.takeDueWork(now: 1).calls == [identifier], "the first call")
        for offset: UInt64 in [100, 1_100, 2_100] {
            _ = registry.apply(.entry(path.link, .written), now: offset)
            #expect(registry.takeDueWork(now: offset).calls == [identifier], "the write at \(offset) ns")
            #expect(registry.nextDeadline() == nil)
        }
    }

    /// A kernel queue overflow's call (any file may have changed) is due at once, and is a full
    /// call, not a look.
    @Test func anOverflowsCallIsAFullCallDueAtOnce() {
        var registry = registry()
        let identifier = registry.add(path, onChange: { _ in }, now: 0).identifier
        _ = registry.apply(.directoryArmed("/d"), now: 0)
        _ = registry.takeDueWork(now: 1)
        _ = registry.apply(.overflow, now: 10)
        let work = registry.takeDueWork(now: 10)
        #expect(work.calls == [identifier])
        #expect(work.looks.isEmpty)
    }

    @Test func removalCancelsAPendingCallUntilTheGraceRunsOut() {
        var registry = registry()
        let identifier = registry.add(path, onChange: { _ in }, now: 0).identifier
        _ = registry.apply(.directoryArmed("/d"), now: 0)
        _ = registry.takeDueWork(now: 1)
        _ = registry.apply(.entry(path.link, .written), now: 10)
        _ = registry.apply(.entry(path.link, .removed), now: 20)
        let duringGrace = registry.takeDueWork(now: 20 + 50_000_000)
        #expect(duringGrace.calls.isEmpty)
        let work = registry.takeDueWork(now: 20 + 100_000_000)
        #expect(work.settleChecks.map(\.id) == [identifier])
        // Back without a complete write (a hard link): call. Back and written: the write's call suffices.
        let settled1 = registry.settle(identifier, isPresent: true, now: 20 + 100_000_000)
        #expect(settled1)
        _ = registry.apply(.entry(path.link, .removed), now: 200_000_000)
        _ = registry.apply(.entry(path.link, .written), now: 201_000_000)
        let settled2 = registry.settle(identifier, isPresent: true, now: 300_000_000)
        #expect(!settled2)
        // Written since, and away again: not yet for the whole grace, which starts again.
        let settled3 = registry.settle(identifier, isPresent: false, now: 300_000_000)
        #expect(!settled3)
        let settled3b = registry.settle(identifier, isPresent: false, now: 400_000_000)
        #expect(settled3b, "away for the whole grace: a deletion")
    }

    /// A directory that does not exist is watched for through its nearest existing ancestor, not
    /// polled: the ancestor is wanted while it serves, the missing directory is tried again when
    /// the awaited name appears in it, and the ancestor is let go once the directory is armed.
    @Test func aMissingDirectoryIsAwaitedThroughItsAncestorNotPolled() {
        var registry = registry()
        let watched = WatchedPath.resolve("/a/b/c/f")
        _ = registry.add(watched, onChange: { _ in }, now: 0)
        let awaitedAt = WatchedEntry(directory: "/a", name: "b")
        _ = registry.apply(.directoryMissing("/a/b/c", awaitedAt: awaitedAt), now: 0)
        #expect(registry.directoryStatus["/a"] == .pending, "the ancestor is wanted")
        #expect(registry.nextDeadline() == nil, "no poll while the ancestor is watched for it")
        _ = registry.apply(.directoryArmed("/a"), now: 1)
        #expect(registry.directoryStatus["/a/b/c"] == .pending, "tried again once the ancestor is watched")
        _ = registry.apply(.directoryMissing("/a/b/c", awaitedAt: awaitedAt), now: 2)
        #expect(registry.takeDueWork(now: 300_000_000).missingDirectories.isEmpty)

        // Another name in the ancestor, or a removal of the awaited name: nothing to try.
        _ = registry.apply(.entry(WatchedEntry(directory: "/a", name: "x"), .appeared), now: 3)
        _ = registry.apply(.entry(awaitedAt, .removed), now: 3)
        #expect(registry.directoryStatus["/a/b/c"] == .missing)
        // `mkdir /a/b`: tried again; still missing deeper, awaited in /a/b instead.
        _ = registry.apply(.entry(awaitedAt, .appeared), now: 4)
        #expect(registry.directoryStatus["/a/b/c"] == .pending)
        _ = registry.apply(.directoryMissing("/a/b/c", awaitedAt: WatchedEntry(directory: "/a/b", name: "c")), now: 5)
        #expect(registry.directoryUsers["/a"] == nil, "the old ancestor is let go")
        #expect(registry.directoryStatus["/a/b"] == .pending)
        _ = registry.apply(.directoryArmed("/a/b"), now: 6)
        _ = registry.apply(.directoryArmed("/a/b/c"), now: 7)
        #expect(registry.directoryUsers["/a/b"] == nil, "armed: no ancestor serves it any more")
        #expect(registry.awaited.isEmpty)
    }

    /// With no ancestor to watch (its watch failed), a missing directory is polled as before.
    @Test func aMissingDirectoryWhoseAncestorCannotBeWatchedIsPolled() {
        var registry = registry()
        _ = registry.add(path, onChange: { _ in }, now: 0)
        _ = registry.apply(.directoryMissing("/d", awaitedAt: WatchedEntry(directory: "/", name: "d")), now: 0)
        _ = registry.apply(.directoryFailed("/", reason: nil), now: 0)
        #expect(registry.nextDeadline() == 0)
        #expect(registry.takeDueWork(now: 0).missingDirectories == ["/d"])
    }

    /// `chmod` of a file, or of its directory, is a full call, even when `stat` shows the file as
    /// the last call saw it (a `chmod` within one clock tick): the trust in a managed file depends
    /// on both, and is not in the stamp.
    @Test func attributeChangesCallForTheFilesTheyMayConcern() {
        var registry = registry()
        let identifier = registry.add(path, onChange: { _ in }, now: 0).identifier
        _ = registry.apply(.directoryArmed("/d"), now: 0)
        _ = calls(&registry, at: 1, seeing: stamp(1))
        _ = registry.apply(.entry(path.link, .attributesChanged), now: 10)
        #expect(calls(&registry, at: 10, seeing: stamp(1)) == [identifier], "the same stamp: still a call")
        #expect(registry.takeDueWork(now: 11).calls.isEmpty)
        _ = registry.apply(.directoryAttributesChanged("/d"), now: 30)
        #expect(calls(&registry, at: 30, seeing: stamp(2)) == [identifier])
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
        let identifier = registry.add(path, onChange: { _ in }, now: 0).identifier
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
        let settled4 = registry.settle(identifier, isPresent: true, now: 20 + 100_000_000)
        #expect(settled4)
        let settled5 = registry.settle(identifier, isPresent: false, now: 20 + 100_000_000)
        #expect(settled5)
    }

    /// The file written in the new directory before it was armed: the look calls at once.
    @Test func aDirectoryArmedAgainWithTheFileBackCallsAtOnce() {
        var registry = registry()
        let identifier = registry.add(path, onChange: { _ in }, now: 0).identifier
        _ = registry.apply(.directoryArmed("/d"), now: 0)
        _ = calls(&registry, at: 1, seeing: stamp(1))
        _ = registry.apply(.entry(path.link, .removed), now: 10)
        _ = registry.apply(.directoryLost("/d"), now: 20)
        _ = registry.apply(.directoryArmed("/d"), now: 30)
        #expect(calls(&registry, at: 30, seeing: stamp(2)) == [identifier])
        // The grace then has nothing to add: the call read the file as it is.
        _ = registry.takeDueWork(now: 20 + 100_000_000)
        let settled6 = registry.settle(identifier, isPresent: true, now: 20 + 100_000_000)
        #expect(!settled6)
    }

    /// The directory deleted and made again while it was not watched (it was being polled for):
    /// no deletion event, no grace running — the look still must not call while the file is away.
    @Test func aLookAtAFileThatIsAwayStartsTheGrace() {
        var registry = registry()
        let identifier = registry.add(path, onChange: { _ in }, now: 0).identifier
        _ = registry.apply(.directoryArmed("/d"), now: 0)
        _ = calls(&registry, at: 1, seeing: stamp(1))
        _ = registry.apply(.directoryMissing("/d"), now: 10)
        _ = registry.apply(.directoryArmed("/d"), now: 300_000_000)
        #expect(calls(&registry, at: 300_000_000, seeing: nil).isEmpty)
        #expect(registry.nextDeadline() == 400_000_000, "the grace runs")
        let work = registry.takeDueWork(now: 400_000_000)
        #expect(work.settleChecks.map(\.id) == [identifier])
        let settled7 = registry.settle(identifier, isPresent: false, now: 400_000_000)
        #expect(settled7, "still away after the grace: a deletion")
    }

    /// A look at a file that is as the last call saw it is no change; a different one is.
    @Test func aLookCallsOnlyWhenTheFileDiffersFromTheLastCall() {
        var registry = registry()
        let identifier = registry.add(path, onChange: { _ in }, now: 0).identifier
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

    /// What a call says follows from how the file looked when the watcher decided: there, "may
    /// have changed"; absent (the grace ran out, or it was already absent), "gone for good".
    @Test func aCallSaysGoneForGoodOnlyForAFileFoundAbsent() {
        #expect(FileChange(seeing: stamp(1)) == .mayHaveChanged)
        #expect(FileChange(seeing: nil) == .goneForGood)
    }

    /// Polling that starts (inotify stopped) while a file that was there is away: the absence is
    /// not a call at once, the deletion grace decides, and its end calls.
    @Test func aFirstPollThatFindsAFileAwayStartsTheGrace() {
        var registry = WatchRegistry(
            mode: .polling, deletionGrace: .milliseconds(100), pollInterval: .milliseconds(250))
        let identifier = registry.add(path, onChange: { _ in }, now: 0, initial: .present(stamp(1))).identifier
        _ = registry.takeDueWork(now: 10)  // the first poll falls due
        let first = registry.record(identifier, stamp: nil, now: 10)
        #expect(!first, "no call while the file may be away for a moment only")
        #expect(registry.nextDeadline() == 10 + 100_000_000, "the grace runs")
        let work = registry.takeDueWork(now: 10 + 100_000_000)
        #expect(work.settleChecks.map(\.id) == [identifier])
        let settled8 = registry.settle(identifier, isPresent: false, now: 10 + 100_000_000)
        #expect(settled8, "still away after the grace: a deletion")
    }

    /// A write made a call due, and the file was deleted again before the call was made (after a
    /// call that found it absent): no call, and no "gone for good" until the grace has run.
    @Test func aFileWrittenAndDeletedBeforeItsCallWaitsForTheGrace() {
        var registry = registry()
        let identifier = registry.add(path, onChange: { _ in }, now: 0, initial: .absent).identifier
        _ = registry.apply(.directoryArmed("/d"), now: 0)
        #expect(calls(&registry, at: 1, seeing: nil) == [identifier], "the first call, the file absent")
        _ = registry.apply(.entry(path.link, .written), now: 10)
        #expect(calls(&registry, at: 20, seeing: nil).isEmpty, "written, then gone before the call")
        #expect(registry.nextDeadline() == 20 + 100_000_000, "the grace runs")
        let work = registry.takeDueWork(now: 20 + 100_000_000)
        #expect(work.settleChecks.map(\.id) == [identifier])
    }

    /// The first call says the watch is in place, whether the file exists or not.
    @Test func theFirstCallIsMadeEvenWhenTheFileIsAbsent() {
        var registry = registry()
        let identifier = registry.add(path, onChange: { _ in }, now: 0).identifier
        _ = registry.apply(.directoryArmed("/d"), now: 0)
        #expect(calls(&registry, at: 1, seeing: nil) == [identifier])
    }

    /// A chain longer than the bound is reported once, naming the path.
    @Test func aChainTooLongIsReportedNamingThePath() {
        var registry = registry()
        var watched = WatchedPath.resolve("/d/f")
        watched.isChainTooLong = true
        _ = registry.add(watched, onChange: { _ in }, now: 0)
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
        _ = registry.add(path, onChange: { _ in }, now: 0)
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
