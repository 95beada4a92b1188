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

    /// A removal calls nothing: it cancels a write's call still due, and makes a look due at once
    /// that only notes whether the file is away. The grace runs from that look, and only a look at
    /// its end that still finds the file away says "gone for good".
    @Test func aRemovalCallsNothingAndOnlyTheGraceSaysGoneForGood() {
        var registry = registry()
        let identifier = registry.add(path, onChange: { _ in }, now: 0).identifier
        _ = registry.apply(.directoryArmed("/d"), now: 0)
        #expect(decide(&registry, at: 1, seeing: stamp(1)) == [call(identifier, .mayHaveChanged)])
        _ = registry.apply(.entry(path.link, .written), now: 10)
        _ = registry.apply(.entry(path.link, .removed), now: 20)
        let work = registry.takeDueWork(now: 20)
        #expect(work.calls.isEmpty, "the write's call is cancelled")
        #expect(work.absenceChecks.map(\.id) == [identifier])
        #expect(registry.decide(work, looks(work, seeing: nil, at: 25)).calls.isEmpty, "no call while away")
        #expect(decide(&registry, at: 20 + grace, seeing: nil).isEmpty, "away since the look, not the event")
        #expect(registry.nextDeadline() == 25 + grace, "the grace runs from the look")
        #expect(decide(&registry, at: 25 + grace, seeing: nil) == [call(identifier, .goneForGood)])
    }

    /// A removal whose look finds the file back (the event was old news) starts no absence.
    @Test func aRemovalWhoseLookFindsTheFileBackStartsNoAbsence() {
        var registry = registry()
        let identifier = registry.add(path, onChange: { _ in }, now: 0).identifier
        _ = registry.apply(.directoryArmed("/d"), now: 0)
        _ = decide(&registry, at: 1, seeing: stamp(1))
        _ = registry.apply(.entry(path.link, .removed), now: 10)
        #expect(decide(&registry, at: 10, seeing: stamp(1)).isEmpty)
        // Away later, found by a look: the grace runs from that look.
        _ = registry.apply(.directoryLost("/d"), now: 50_000_000)
        _ = registry.apply(.directoryArmed("/d"), now: 60_000_000)
        #expect(decide(&registry, at: 60_000_000, seeing: nil).isEmpty)
        #expect(decide(&registry, at: 150_000_000, seeing: nil).isEmpty, "away for 90 ms only")
        #expect(decide(&registry, at: 160_000_000, seeing: nil) == [call(identifier, .goneForGood)])
    }

    /// Back without a complete write seen (a hard link): the grace's end calls; back and written:
    /// the write's call suffices.
    @Test func aFileBackWithoutAWriteSeenIsCalledForAtTheGracesEnd() {
        var registry = registry()
        let identifier = registry.add(path, onChange: { _ in }, now: 0).identifier
        _ = registry.apply(.directoryArmed("/d"), now: 0)
        _ = decide(&registry, at: 1, seeing: stamp(1))
        _ = registry.apply(.entry(path.link, .removed), now: 10)
        #expect(decide(&registry, at: 10, seeing: nil).isEmpty)
        #expect(decide(&registry, at: 10 + grace, seeing: stamp(2)) == [call(identifier, .mayHaveChanged)])
        #expect(registry.nextDeadline() == nil)
        _ = registry.apply(.entry(path.link, .removed), now: 200_000_000)
        #expect(decide(&registry, at: 200_000_000, seeing: nil).isEmpty)
        _ = registry.apply(.entry(path.link, .written), now: 201_000_000)
        #expect(decide(&registry, at: 201_000_000, seeing: stamp(3)) == [call(identifier, .mayHaveChanged)])
        #expect(decide(&registry, at: 200_000_000 + grace, seeing: stamp(3)).isEmpty, "written: no second call")
        #expect(registry.nextDeadline() == nil)
    }

    /// The failing round of `aDirectoryDeletedAndMadeAgainNeverRemovesAKey`, as the registry saw
    /// it under the thread sanitizer (a symbolic link's target directory moved away and replaced,
    /// the file written 70 ms later; times in ms from the log, rounded). The inotify thread was
    /// 110 ms behind: the loss of round 40's directory came after a look had already found round
    /// 40's file back. Taken as "away since now", that old loss made round 41's absence, 73 ms
    /// long, count as 139 ms: every key was reported removed. An event says nothing of when the
    /// file was away; only looks do.
    @Test func anOldLossOfTheDirectoryDoesNotLengthenTheNextAbsence() {
        var registry = registry()
        let identifier = registry.add(path, onChange: { _ in }, now: 0).identifier
        _ = registry.apply(.directoryArmed("/d"), now: 0)
        _ = decide(&registry, at: ms(1), seeing: stamp(39))
        // Round 40: the directory is moved away at 969 and the file written back at about 1,040,
        // unseen; the look at the grace's end of an earlier create finds it back, and calls.
        _ = registry.apply(.entry(path.link, .appeared), now: ms(979))
        #expect(decide(&registry, at: ms(1_079), seeing: stamp(40)) == [call(identifier, .mayHaveChanged)])
        // The inotify thread reports round 40's loss only now, and the new directory armed.
        _ = registry.apply(.directoryLost("/d"), now: ms(1_080))
        _ = registry.apply(.directoryArmed("/d"), now: ms(1_080))
        // Round 41 moves the directory away at 1,146; the look (made late, at 1,153) finds the
        // file away, and the file is written back at 1,219 + a few ms.
        #expect(decide(&registry, at: ms(1_153), seeing: nil).isEmpty)
        for now in stride(from: ms(1_154), through: ms(1_219), by: 1_000_000) {
            #expect(decide(&registry, at: now, seeing: nil).isEmpty, "away for \(now / 1_000_000 - 1_146) ms")
        }
        _ = registry.apply(.entry(path.link, .written), now: ms(1_225))
        #expect(decide(&registry, at: ms(1_225), seeing: stamp(41)) == [call(identifier, .mayHaveChanged)])
        #expect(decide(&registry, at: ms(1_400), seeing: stamp(41)).isEmpty)
    }

    /// The second cause of `aDirectoryDeletedAndMadeAgainNeverRemovesAKey`'s false removal under
    /// the thread sanitizer, replayed: the inotify thread was behind, and the event showing round
    /// N's file back was still queued in the kernel when the look at the end of round N's grace
    /// found the file away again (round N+1 had begun). Judged by looks alone, the absence ran
    /// the whole grace, and every key was reported removed. The verdict now waits for a barrier:
    /// the events read by then show the file back, and no "gone for good" is said.
    @Test func aVerdictWaitsForEventsStillQueuedWhenItWasReached() {
        var registry = registry()
        let identifier = watchAndCall(&registry, servesBarriers: true)
        // Round N: the file goes at 10 ms, and a look finds it away.
        _ = registry.apply(.entry(path.link, .removed), now: ms(10))
        #expect(decide(&registry, at: ms(10), seeing: nil).isEmpty)
        // Back at 80 ms and away again at 95 ms (round N+1): both events are still unread when
        // the grace ends, and the look then finds the file away.
        let work = registry.takeDueWork(now: ms(110))
        #expect(work.settleChecks.map(\.id) == [identifier])
        let verdict = registry.decide(work, looks(work, seeing: nil, at: ms(110)))
        registry.finished(work)
        #expect(verdict.calls.isEmpty, "no verdict before the queued events are read")
        #expect(verdict.wakesInotifyThread, "a barrier is asked for")
        #expect(registry.barriersRequested == 1)
        #expect(!registry.isQuiet(identifier), "a verdict waits")
        // The inotify thread reads the queued events, then the barrier.
        _ = registry.apply(.entry(path.link, .written), now: ms(111))
        _ = registry.apply(.entry(path.link, .removed), now: ms(111))
        _ = registry.apply(.barrierPassed(1), now: ms(112))
        var calls = decide(&registry, at: ms(112), seeing: nil)
        #expect(!calls.contains(call(identifier, .goneForGood)), "round N's file was back: \(calls)")
        // Round N+1's absence is judged on its own grace, from the look that found it.
        calls = decide(&registry, at: ms(200), seeing: nil)
        #expect(calls.isEmpty, "away for 88 ms only")
        calls = decide(&registry, at: ms(212), seeing: nil)
        #expect(calls.isEmpty, "the verdict waits for its barrier")
        _ = registry.apply(.barrierPassed(registry.barriersRequested), now: ms(213))
        #expect(decide(&registry, at: ms(213), seeing: nil) == [call(identifier, .goneForGood)])
    }

    /// A directory armed again was not watched for a while: the file may have been back with no
    /// event, so an absence seen before it no longer counts, and the look it makes due starts a
    /// new one. (A file written into a directory made again before it was armed, and gone again
    /// before the look, was back for a moment, and not gone for good.)
    @Test func aDirectoryArmedAgainStartsTheAbsenceAgain() {
        var registry = registry()
        let identifier = watchAndCall(&registry, servesBarriers: true)
        _ = registry.apply(.directoryLost("/d"), now: ms(10))
        #expect(decide(&registry, at: ms(10), seeing: nil).isEmpty)
        _ = registry.apply(.directoryArmed("/d"), now: ms(60))
        #expect(decide(&registry, at: ms(60), seeing: nil).isEmpty, "the look finds the file away")
        #expect(decide(&registry, at: ms(110), seeing: nil).isEmpty, "away since 60 ms only, as far as is known")
        #expect(registry.barriersRequested == 0)
        #expect(decide(&registry, at: ms(160), seeing: nil).isEmpty)
        _ = registry.apply(.barrierPassed(registry.barriersRequested), now: ms(161))
        #expect(decide(&registry, at: ms(161), seeing: nil) == [call(identifier, .goneForGood)])
    }

    /// Only events that may change where the path leads make the next call resolve it again: a
    /// write of the final file does not (every flush of this process is one), a link on the way
    /// re-pointed, a name made or removed, or a directory armed again does.
    @Test func onlyEventsOnTheWayMakeThePathResolvedAgain() {
        var registry = registry()
        let linked = WatchedPath(
            path: "/d/f", link: WatchedEntry(directory: "/d", name: "f"),
            hops: [WatchedEntry(directory: "/d", name: "f")], target: WatchedEntry(directory: "/t", name: "real"))
        let identifier = registry.add(linked, onChange: { _ in }, now: 0).identifier
        func events() -> UInt64 { registry.registrations[identifier]?.pathEvents ?? 0 }
        let first = events()
        _ = registry.apply(.entry(WatchedEntry(directory: "/t", name: "real"), .written), now: 1)
        _ = registry.apply(.entry(WatchedEntry(directory: "/t", name: "real"), .attributesChanged), now: 2)
        #expect(events() == first, "a write of the target is not an event on the way")
        _ = registry.apply(.entry(WatchedEntry(directory: "/d", name: "f"), .written), now: 3)
        #expect(events() == first + 1, "the link re-pointed")
        _ = registry.apply(.entry(WatchedEntry(directory: "/t", name: "real"), .appeared), now: 4)
        #expect(events() == first + 2, "the target made")
        _ = registry.apply(.directoryArmed("/t"), now: 5)
        #expect(events() == first + 3, "a directory armed again")
        _ = registry.update(identifier, to: linked, resolvedAt: first + 3)
        #expect(registry.registrations[identifier]?.resolvedAt == first + 3)
        _ = registry.update(identifier, to: linked, resolvedAt: first)
        #expect(registry.registrations[identifier]?.resolvedAt == first + 3, "an older resolution changes nothing")
    }

    /// Without barriers (polling, or no barrier channel), a verdict stands on the looks alone.
    @Test func withoutBarriersAVerdictStandsOnTheLooks() {
        var registry = registry()
        let identifier = watchAndCall(&registry, servesBarriers: false)
        _ = registry.apply(.entry(path.link, .removed), now: ms(10))
        _ = decide(&registry, at: ms(10), seeing: nil)
        #expect(decide(&registry, at: ms(110), seeing: nil) == [call(identifier, .goneForGood)])
        #expect(registry.barriersRequested == 0)
    }

    /// inotify stops while a verdict waits for its barrier: polling judges the absence again.
    @Test func aVerdictWaitingWhenInotifyStopsIsJudgedByPolling() {
        var registry = registry()
        let identifier = watchAndCall(&registry, servesBarriers: true)
        _ = registry.apply(.entry(path.link, .removed), now: ms(10))
        _ = decide(&registry, at: ms(10), seeing: nil)
        #expect(decide(&registry, at: ms(110), seeing: nil).isEmpty)
        _ = registry.apply(.inotifyStopped(reason: "test"), now: ms(120))
        #expect(decide(&registry, at: ms(120), seeing: nil).contains(call(identifier, .goneForGood)))
    }

    /// A look that saw the file away, made late: the grace runs from when the look ended, and an
    /// absence is judged by when the judging look began, so a look held up between reading the
    /// clock and `stat` never makes an absence seem longer than it was.
    @Test func aLookIsTimedByItsStartForAJudgementAndByItsEndForAGrace() {
        var registry = registry()
        let identifier = registry.add(path, onChange: { _ in }, now: 0).identifier
        _ = registry.apply(.directoryArmed("/d"), now: 0)
        _ = decide(&registry, at: 1, seeing: stamp(1))
        _ = registry.apply(.entry(path.link, .removed), now: ms(10))
        let work = registry.takeDueWork(now: ms(10))
        _ = registry.decide(work, looks(work, seeing: nil, at: ms(10), until: ms(40)))
        #expect(decide(&registry, at: ms(110), seeing: nil).isEmpty, "away for 70 ms only, at most")
        #expect(registry.nextDeadline() == ms(140), "the grace runs from the end of the look")
        let settle = registry.takeDueWork(now: ms(140))
        let calls = registry.decide(settle, looks(settle, seeing: nil, at: ms(140))).calls
        #expect(calls.map { call($0.0, $0.1) } == [call(identifier, .goneForGood)])
    }

    /// A look taken, and so no longer due, is not yet made: the watch is not quiet until the work
    /// is done, for the look may still find the file changed and call. (FileWatcherTests'
    /// `everyLinkOfAChainIsWatched` took the watch for quiet in that window on a loaded machine,
    /// wrote, and counted the look's call against its write: 4 calls where it expected 3.)
    @Test func workTakenButNotDoneIsNotQuiet() {
        var registry = registry()
        let identifier = registry.add(path, onChange: { _ in }, now: 0).identifier
        _ = registry.apply(.directoryArmed("/d"), now: 0)
        #expect(!registry.isQuiet(identifier), "the first call is due")
        let work = registry.takeDueWork(now: 1)
        #expect(work.calls == [identifier])
        #expect(!registry.isQuiet(identifier), "quiet while the taken call is still to be made")
        _ = registry.decide(work, looks(work, seeing: stamp(1), at: 1))
        #expect(!registry.isQuiet(identifier), "quiet while the call is being made")
        registry.finished(work)
        #expect(registry.isQuiet(identifier))
        // The same for a look made due by a directory armed again.
        _ = registry.apply(.directoryArmed("/d"), now: 10)
        let look = registry.takeDueWork(now: 11)
        #expect(look.looks == [identifier])
        #expect(!registry.isQuiet(identifier))
        registry.finished(look)
        #expect(registry.isQuiet(identifier))
    }

    /// Watches `path` in `registry` and makes its first call, the file there (at 1 ms).
    ///
    /// - Returns: The registration.
    private func watchAndCall(_ registry: inout WatchRegistry, servesBarriers: Bool) -> UInt64 {
        registry.servesBarriers = servesBarriers
        let identifier = registry.add(path, onChange: { _ in }, now: 0).identifier
        _ = registry.apply(.directoryArmed("/d"), now: 0)
        _ = decide(&registry, at: ms(1), seeing: stamp(1))
        return identifier
    }

    private let grace: UInt64 = 100_000_000
    private func ms(_ milliseconds: UInt64) -> UInt64 { milliseconds * 1_000_000 }

    private func call(_ identifier: UInt64, _ change: FileChange) -> Call {
        Call(identifier: identifier, change: change)
    }

    /// One call the watcher decided to make.
    private struct Call: Equatable, CustomStringConvertible {
        var identifier: UInt64
        var change: FileChange
        var description: String { "\(identifier): \(change)" }
    }

    /// The looks at every file of `work`, each finding `stamp`, made from `start` to `end`.
    private func looks(
        _ work: WatchRegistry.DueWork, seeing stamp: FileStamp?, at start: UInt64, until end: UInt64? = nil
    ) -> WatchRegistry.Looks {
        var looks = WatchRegistry.Looks(before: start, after: end ?? start)
        looks.calls = work.calls.map { ($0, stamp) }
        looks.settleChecks = work.settleChecks.map { ($0.id, stamp) }
        looks.absenceChecks = work.absenceChecks.map { ($0.id, stamp) }
        looks.polls = work.polls.map { ($0.id, stamp) }
        return looks
    }

    /// Takes the due work at `now` and decides it as the watcher does, every file looking like
    /// `stamp`. Returns the calls made.
    private func decide(_ registry: inout WatchRegistry, at now: UInt64, seeing stamp: FileStamp?) -> [Call] {
        let work = registry.takeDueWork(now: now)
        return registry.decide(work, looks(work, seeing: stamp, at: now)).calls.map {
            Call(identifier: $0.0, change: $0.1)
        }
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
        _ = decide(&registry, at: 1, seeing: stamp(1))
        _ = registry.apply(.entry(path.link, .attributesChanged), now: 10)
        #expect(
            decide(&registry, at: 10, seeing: stamp(1)) == [call(identifier, .mayHaveChanged)],
            "the same stamp: still a call")
        #expect(registry.takeDueWork(now: 11).calls.isEmpty)
        _ = registry.apply(.directoryAttributesChanged("/d"), now: 30)
        #expect(decide(&registry, at: 30, seeing: stamp(2)) == [call(identifier, .mayHaveChanged)])
    }

    /// A file as `stat` might see it; `version` stands for its content.
    private func stamp(_ version: Int) -> FileStamp {
        FileStamp(
            device: 1, inode: UInt64(version), size: 10, modificationSeconds: version, modificationNanoseconds: 0,
            changeSeconds: version, changeNanoseconds: 0, linkInode: UInt64(version), linkChangeSeconds: version,
            linkChangeNanoseconds: 0)
    }

    /// A directory deleted and made again (or moved away and replaced) while the file is away:
    /// arming the new directory must not call while the file is not back — a call then reads a
    /// file that is not there and reports every key removed. The grace decides.
    @Test(arguments: [false, true])
    func aDirectoryArmedAgainWithinTheGraceCallsOnlyWhenTheFileIsBack(foundByPolling: Bool) {
        var registry = registry()
        let identifier = registry.add(path, onChange: { _ in }, now: 0).identifier
        _ = registry.apply(.directoryArmed("/d"), now: 0)
        #expect(decide(&registry, at: 1, seeing: stamp(1)) == [call(identifier, .mayHaveChanged)], "the first call")
        _ = registry.apply(.entry(path.link, .removed), now: 10)
        _ = registry.apply(.directoryLost("/d"), now: 20)
        #expect(decide(&registry, at: 20, seeing: nil).isEmpty, "no call while the file is away")
        if foundByPolling {
            // The directory was not there yet when the old watch was lost; the poll for missing
            // directories found it.
            let reappeared = registry.directoryReappeared("/d")
            #expect(reappeared)
        }
        _ = registry.apply(.directoryArmed("/d"), now: 30)
        #expect(decide(&registry, at: 30, seeing: nil).isEmpty, "no call while the file is away")
        #expect(registry.nextDeadline() == 20 + grace)
        // The file was unwatched until the new directory was armed: the absence counts from the
        // look that followed.
        #expect(decide(&registry, at: 20 + grace, seeing: nil).isEmpty, "away since the look at 30 ns only")
        #expect(registry.nextDeadline() == 30 + grace)
        // Still away at that grace's end: a real deletion.
        #expect(decide(&registry, at: 30 + grace, seeing: nil) == [call(identifier, .goneForGood)])
    }

    /// The file written in the new directory before it was armed: the look calls at once.
    @Test func aDirectoryArmedAgainWithTheFileBackCallsAtOnce() {
        var registry = registry()
        let identifier = registry.add(path, onChange: { _ in }, now: 0).identifier
        _ = registry.apply(.directoryArmed("/d"), now: 0)
        _ = decide(&registry, at: 1, seeing: stamp(1))
        _ = registry.apply(.entry(path.link, .removed), now: 10)
        _ = registry.apply(.directoryLost("/d"), now: 20)
        _ = registry.apply(.directoryArmed("/d"), now: 30)
        #expect(decide(&registry, at: 30, seeing: stamp(2)) == [call(identifier, .mayHaveChanged)])
        // The grace then has nothing to add: the call read the file as it is.
        #expect(decide(&registry, at: 20 + grace, seeing: stamp(2)).isEmpty)
    }

    /// The directory deleted and made again while it was not watched (it was being polled for):
    /// no deletion event, no grace running — the look still must not call while the file is away.
    @Test func aLookAtAFileThatIsAwayStartsTheGrace() {
        var registry = registry()
        let identifier = registry.add(path, onChange: { _ in }, now: 0).identifier
        _ = registry.apply(.directoryArmed("/d"), now: 0)
        _ = decide(&registry, at: 1, seeing: stamp(1))
        _ = registry.apply(.directoryMissing("/d"), now: 10)
        _ = registry.apply(.directoryArmed("/d"), now: 300_000_000)
        #expect(decide(&registry, at: 300_000_000, seeing: nil).isEmpty)
        #expect(registry.nextDeadline() == 400_000_000, "the grace runs")
        #expect(decide(&registry, at: 400_000_000, seeing: nil) == [call(identifier, .goneForGood)])
    }

    /// A look at a file that is as the last call saw it is no change; a different one is.
    @Test func aLookCallsOnlyWhenTheFileDiffersFromTheLastCall() {
        var registry = registry()
        let identifier = registry.add(path, onChange: { _ in }, now: 0).identifier
        _ = registry.apply(.directoryArmed("/d"), now: 0)
        _ = decide(&registry, at: 1, seeing: stamp(1))
        _ = registry.apply(.directoryMissing("/d"), now: 10)
        _ = registry.apply(.directoryArmed("/d"), now: 20)
        #expect(decide(&registry, at: 20, seeing: stamp(1)).isEmpty)
        _ = registry.apply(.directoryMissing("/d"), now: 30)
        _ = registry.apply(.directoryArmed("/d"), now: 40)
        #expect(decide(&registry, at: 40, seeing: stamp(2)) == [call(identifier, .mayHaveChanged)])
        // A write is always a call.
        _ = registry.apply(.entry(path.link, .written), now: 50_000_000)
        #expect(decide(&registry, at: 50_000_000, seeing: stamp(2)) == [call(identifier, .mayHaveChanged)])
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
        let settled8 = registry.settle(identifier, isPresent: false, before: 10 + grace, after: 10 + grace)
        #expect(settled8, "still away after the grace: a deletion")
    }

    /// Polling sees no `IN_ATTRIB`: a full round compares its files' directories' mode, owner and
    /// group with the last round's, and calls for every polled file of one that changed, even when
    /// the file itself looks the same (a managed directory made writable by others).
    @Test func aPolledDirectorysNewModeCallsForItsFiles() {
        var registry = WatchRegistry(
            mode: .polling, deletionGrace: .milliseconds(100), pollInterval: .milliseconds(250))
        let inD = registry.add(path, onChange: { _ in }, now: 0).identifier
        let other = WatchedPath(path: "/e/g", link: WatchedEntry(directory: "/e", name: "g"), target: nil)
        let inE = registry.add(other, onChange: { _ in }, now: 0).identifier
        func round(at now: UInt64, modeOfD mode: UInt32) -> [Call] {
            let work = registry.takeDueWork(now: now)
            #expect(Set(work.polledDirectories) == ["/d", "/e"], "a full round looks at both directories")
            var looks = looks(work, seeing: stamp(1), at: now)
            looks.directoryAttributes = work.polledDirectories.map {
                ($0, FileStamp.DirectoryAttributes(mode: $0 == "/d" ? mode : 0o40700, owner: 0, group: 0))
            }
            return registry.decide(work, looks).calls.map { Call(identifier: $0.0, change: $0.1) }
        }
        #expect(
            Set(round(at: 10, modeOfD: 0o40700).map(\.identifier)) == [inD, inE],
            "the first round calls for each file, and only records the directories")
        #expect(round(at: 10 + ms(250), modeOfD: 0o40700).isEmpty, "nothing changed")
        #expect(round(at: 10 + ms(500), modeOfD: 0o40777) == [call(inD, .mayHaveChanged)], "chmod o+w /d")
        #expect(round(at: 10 + ms(750), modeOfD: 0o40777).isEmpty, "called once for it")
        #expect(round(at: 10 + ms(1000), modeOfD: 0o40700) == [call(inD, .mayHaveChanged)], "and back")
    }

    /// A write made a call due, and the file was deleted again before the call was made (after a
    /// call that found it absent): no call, and no "gone for good" until the grace has run.
    @Test func aFileWrittenAndDeletedBeforeItsCallWaitsForTheGrace() {
        var registry = registry()
        let identifier = registry.add(path, onChange: { _ in }, now: 0, initial: .absent).identifier
        _ = registry.apply(.directoryArmed("/d"), now: 0)
        #expect(
            decide(&registry, at: 1, seeing: nil) == [call(identifier, .goneForGood)], "the first call, the file absent"
        )
        _ = registry.apply(.entry(path.link, .written), now: 10)
        #expect(decide(&registry, at: 20, seeing: nil).isEmpty, "written, then gone before the call")
        #expect(registry.nextDeadline() == 20 + 100_000_000, "the grace runs")
        let work = registry.takeDueWork(now: 20 + 100_000_000)
        #expect(work.settleChecks.map(\.id) == [identifier])
    }

    /// The first call says the watch is in place, whether the file exists or not.
    @Test func theFirstCallIsMadeEvenWhenTheFileIsAbsent() {
        var registry = registry()
        let identifier = registry.add(path, onChange: { _ in }, now: 0).identifier
        _ = registry.apply(.directoryArmed("/d"), now: 0)
        #expect(decide(&registry, at: 1, seeing: nil) == [call(identifier, .goneForGood)])
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
