import Testing

@testable import LiveDefaults

/// The pure store model (docs/design.md, "Store model and backends"): this process's changes, the
/// one merge of flush and reload, and the old and new values every change returns.
@Suite struct SuiteValuesTests {
    @Test func setSaysWhetherReadsSeeAChange() {
        var values = SuiteValues(stored: ["a": 1], version: 1)
        let first = values.set(2, forKey: "a")
        let again = values.set(2, forKey: "a")
        let removal = values.set(nil, forKey: "a")
        let missing = values.set(nil, forKey: "missing")
        #expect(first)
        #expect(!again, "setting the value it already has changes nothing")
        #expect(removal)
        #expect(!missing)
        #expect(values.current == [:])
        #expect(values.stored == ["a": 1], "nothing is stored until a write")
        #expect(values.hasPendingChanges)
    }

    @Test func aReloadLaysUnwrittenChangesOverTheNewValues() {
        var values = SuiteValues(stored: ["a": 1, "b": 1, "c": 1], version: 1)
        _ = values.set(5, forKey: "a")
        // Another process changed a, b and c, and added d.
        let changes = values.install(["a": 9, "b": 2, "c": 1, "d": 4], version: 2, after: nil)
        #expect(Set(changes.map(\.key)) == ["b", "d"], "a keeps this process's unwritten value")
        #expect(changes.contains(StoredChange(key: "b", old: 1, new: 2)))
        #expect(changes.contains(StoredChange(key: "d", old: nil, new: 4)))
        #expect(values.current == ["a": 5, "b": 2, "c": 1, "d": 4])
        #expect(values.stored == ["a": 9, "b": 2, "c": 1, "d": 4])
        #expect(values.version == 2)
        #expect(values.outgoing() == .changes(["a": SuiteValues.Pending(value: 5, generation: 1)]))
    }

    @Test func aWriteClearsOnlyTheChangesItWrote() {
        var values = SuiteValues(stored: ["a": 1], version: 1)
        _ = values.set(2, forKey: "a")
        _ = values.set(3, forKey: "b")
        let outgoing = values.outgoing()
        // Made while the write was under way: stays pending.
        _ = values.set(4, forKey: "a")
        let written = outgoing.map { $0.applied(to: values.stored) } ?? [:]
        #expect(written == ["a": 2, "b": 3])
        let changes = values.install(written, version: 2, after: outgoing, unchangedByOthers: true)
        #expect(changes.isEmpty)
        #expect(values.current == ["a": 4, "b": 3])
        #expect(values.outgoing() == .changes(["a": SuiteValues.Pending(value: 4, generation: 3)]))
    }

    @Test func aWriteOverOthersValuesDeliversTheirsNetOfOurs() {
        var values = SuiteValues(stored: ["a": 1, "b": 1], version: 1)
        _ = values.set(2, forKey: "a")
        let outgoing = values.outgoing()
        // The backend held b = 7 (another process's write): the write starts from there.
        let written = outgoing.map { $0.applied(to: ["a": 1, "b": 7]) } ?? [:]
        let changes = values.install(written, version: 3, after: outgoing)
        #expect(changes == [StoredChange(key: "b", old: 1, new: 7)])
        #expect(values.current == ["a": 2, "b": 7])
        #expect(!values.hasPendingChanges)
    }

    @Test func aReplacementHidesReloadsUntilItIsWritten() {
        var values = SuiteValues(stored: ["a": 1], version: 1)
        let replaced = values.replaceAll(with: ["b": 2])
        #expect(Set(replaced.map(\.key)) == ["a", "b"])
        let reloaded = values.install(["a": 5], version: 2, after: nil)
        #expect(reloaded.isEmpty, "the replacement is not written yet")
        #expect(values.current == ["b": 2])
        let outgoing = values.outgoing()
        #expect(outgoing == .whole(["b": 2], generation: 1))
        #expect(outgoing?.applied(to: ["a": 5]) == ["b": 2])
        _ = values.install(["b": 2], version: 3, after: outgoing)
        #expect(!values.hasPendingChanges)
        #expect(values.current == ["b": 2])
    }

    @Test func aSecondReplacementDuringTheWriteOfTheFirstIsKept() {
        var values = SuiteValues()
        _ = values.replaceAll(with: ["a": 1])
        let first = values.outgoing()
        _ = values.replaceAll(with: ["b": 2])
        let changes = values.install(["a": 1], version: 1, after: first)
        #expect(changes.isEmpty)
        #expect(values.current == ["b": 2])
        #expect(values.outgoing() == .whole(["b": 2], generation: 2), "the second replacement is still to write")
    }

    @Test func anEmptyReplacementRemovesTheSuite() {
        #expect(SuiteWrite.whole([:], generation: 1).removesSuite)
        #expect(!SuiteWrite.whole(["a": 1], generation: 1).removesSuite)
        #expect(!SuiteWrite.changes([:]).removesSuite)
    }

    @Test func changesListEveryKeyThatDiffers() {
        let changes = SuiteValues.changes(from: ["a": 1, "b": 2, "c": 3], to: ["a": 1, "b": 5, "d": 4])
        #expect(changes.count == 3)
        #expect(changes.contains(StoredChange(key: "b", old: 2, new: 5)))
        #expect(changes.contains(StoredChange(key: "c", old: 3, new: nil)))
        #expect(changes.contains(StoredChange(key: "d", old: nil, new: 4)))
    }
}

/// When a store's background work runs: the coalesced flush, the back-off, coalesced reloads.
@Suite struct StoreScheduleTests {
    @Test func aBurstOfChangesArmsOneFlush() {
        var schedule = StoreSchedule()
        let delays = [schedule.changeMade(), schedule.changeMade(), schedule.changeMade()]
        #expect(delays == [StoreSchedule.flushDelay, nil, nil])
        schedule.flushStarted()
        let next = schedule.changeMade()
        #expect(next == StoreSchedule.flushDelay, "a change after the flush started arms another")
    }

    @Test func failuresBackOffToThirtySecondsAndASuccessResets() {
        var schedule = StoreSchedule()
        _ = schedule.changeMade()
        var delays: [Duration] = []
        var firsts: [Bool] = []
        for _ in 0..<10 {
            schedule.flushStarted()
            let failure = schedule.flushFailed()
            if let delay = failure.retryAfter { delays.append(delay) }
            firsts.append(failure.isFirstFailure)
        }
        #expect(
            delays == [
                .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(8),
                .seconds(16), .seconds(30), .seconds(30), .seconds(30),
            ])
        #expect(firsts == [true] + Array(repeating: false, count: 9), "only the first failure in a row is reported")
        let duringRetry = schedule.changeMade()
        #expect(duringRetry == nil, "the retry is armed: a change waits for it")
        schedule.flushStarted()
        schedule.flushSucceeded()
        let afterSuccess = schedule.changeMade()
        #expect(afterSuccess == StoreSchedule.flushDelay)
    }

    @Test func aChangeDuringBackOffWaitsForTheRetryDelay() {
        var schedule = StoreSchedule()
        _ = schedule.changeMade()
        schedule.flushStarted()
        _ = schedule.flushFailed()
        schedule.flushStarted()
        // The retry ran and found nothing to write (a synchronize wrote it meanwhile, say): the next
        // change still waits the back-off, since nothing has succeeded yet.
        let delay = schedule.changeMade()
        #expect(delay == .milliseconds(250))
    }

    @Test func reloadRequestsCoalesceUntilTheReloadStarts() {
        var schedule = StoreSchedule()
        let requests = [schedule.reloadRequested(), schedule.reloadRequested(), schedule.reloadRequested()]
        #expect(requests == [true, false, false])
        schedule.reloadStarted()
        let afterStart = schedule.reloadRequested()
        #expect(afterStart)
    }

    /// A reload reads the last request when it runs: a "gone for good" that later news overtook
    /// (the file came back) is not applied.
    @Test func theLastReloadRequestSaysWhatTheReloadIsFor() {
        var schedule = StoreSchedule()
        let first = schedule.reloadRequested(.goneForGood)
        #expect(first)
        #expect(schedule.lastRequest == .goneForGood)
        let second = schedule.reloadRequested(.mayHaveChanged)
        #expect(!second)
        schedule.reloadStarted()
        #expect(schedule.lastRequest == .mayHaveChanged)
    }

    /// The false removal of issue #39, replayed: a reload that started before a "gone for good" and
    /// ran after it took the request and read the file, back by then; the reload the request had
    /// armed ran next, when the file was away again for a moment (a directory made again), and must
    /// not take that for "gone for good" too — it would empty the suite.
    @Test func aGoneForGoodIsTakenByOneReloadOnly() {
        var schedule = StoreSchedule()
        // A save was seen: a reload is armed, and starts (its thread is slow to take the I/O lock).
        let armsFirst = schedule.reloadRequested(.mayHaveChanged)
        #expect(armsFirst)
        schedule.reloadStarted()
        // The file stayed away for the grace: "gone for good" arms the next reload.
        let armsSecond = schedule.reloadRequested(.goneForGood)
        #expect(armsSecond)
        schedule.reloadStarted()
        // The first reload runs now: it is for "gone for good" (and reads the file, back by then).
        let first = schedule.takeReloadRequest()
        #expect(first == .goneForGood)
        // The second runs while the file is away again: only "may have changed" (no change).
        let second = schedule.takeReloadRequest()
        #expect(second == .mayHaveChanged)
        // A new "gone for good" is taken again.
        let armsThird = schedule.reloadRequested(.goneForGood)
        #expect(armsThird)
        schedule.reloadStarted()
        let third = schedule.takeReloadRequest()
        #expect(third == .goneForGood)
    }
}
