import Dispatch
import Foundation
import LiveDefaultsWatching
import Synchronization
import TestSupport
import Testing

@testable import LiveDefaults

/// Where an outside change's reload runs (issue 40; docs/design.md, "Live reload: where reloads
/// run"): on the watcher's inotify thread while the suite's reloads are fast, on a worker once one
/// is measured slow, back after fast ones in a row; a slow observer never holds up another suite's
/// outside changes, and the inotify thread never waits for a store's I/O lock.
@Suite struct InlineReloadTests {
    /// What the observer notes for a delivery on the thread reading inotify (the first, or one
    /// that took over).
    static let inotifyThread = "inotify"

    /// Where the calling thread is: reading inotify, or elsewhere (a worker). (Thread names do
    /// not tell: Linux gives a new thread its creator's.)
    static func threadName() -> String { FileWatcher.isOnInotifyThread ? inotifyThread : "elsewhere" }

    /// Writes `values` to `path` as an outside tool does: a new file renamed over the old one.
    static func replace(_ path: String, with values: [String: Any]) throws {
        let data = try PropertyListSerialization.data(fromPropertyList: values, format: .binary, options: 0)
        let temporary = path + ".outside"
        try data.write(to: URL(fileURLWithPath: temporary))
        guard rename(temporary, path) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    }

    /// Stamps seen, with their threads.
    final class Seen: @unchecked Sendable {
        private let lock = NSLock()
        private var stamps: [Int64: String] = [:]

        func withLock<Result>(_ body: (inout [Int64: String]) -> Result) -> Result {
            lock.withLock { body(&stamps) }
        }
    }

    /// A suite written from outside, its `Defaults`, and what its observer of `stamp` saw: each
    /// stamp with the name of the thread it was delivered on.
    final class Watched: Sendable {
        let path: String
        let defaults: Defaults
        /// Under an `NSLock` (pthread), which the thread sanitizer sees; it does not see `Mutex`'s futex.
        let seen = Seen()
        /// Called in the observer before the stamp is noted (the slow observer waits there).
        let hold: @Sendable (Int64) -> Void

        init(
            _ name: String, in directory: borrowing TemporaryDirectory,
            hold: @escaping @Sendable (Int64) -> Void = { _ in }
        )
            throws
        {
            path = directory.file("\(name).plist").path
            try InlineReloadTests.replace(path, with: ["stamp": 0])
            defaults = try Defaults(suiteName: name, directory: directory.url)
            self.hold = hold
        }

        func observe() -> ObservationToken {
            defaults.observe("stamp") { [self] change in
                guard case .integer(let stamp) = change.newValue else { return }
                let thread = InlineReloadTests.threadName()
                hold(stamp)
                seen.withLock { $0[stamp] = thread }
            }
        }

        func write(_ stamp: Int64) throws { try InlineReloadTests.replace(path, with: ["stamp": stamp]) }

        /// What counts as a slow reload for this suite, judged afresh from now on. The tests that
        /// need reloads to count as fast raise it: how long a reload takes is the machine's (a
        /// thread-sanitizer build on a loaded machine takes over 1 ms for any), not what they
        /// test. Afresh, because a reload made before (the directory's first look, a late close
        /// of the file written to start with) may have moved the suite to a worker already.
        func countAsSlowAfter(_ limit: Duration) {
            defaults.suite.state.withLock { $0.schedule.judgeReloads(slowAfter: limit) }
        }

        /// Where the suite's next reload runs, for a failure's message.
        var reloadPlace: StoreSchedule.ReloadPlace { defaults.suite.state.withLock { $0.schedule.reloadPlace } }

        /// The name of the thread `stamp` was delivered on, once it is (nil: not within 30 s).
        func delivered(_ stamp: Int64) async -> String? {
            _ = await eventually { seen.withLock { $0[stamp] } != nil }
            return seen.withLock { $0[stamp] }
        }
    }

    /// While observers are fast, an outside change is reloaded and delivered on the inotify thread
    /// itself: no hand-off to a worker. (A call the watcher's dispatcher thread happens to make
    /// goes to a worker, so a few changes are tried.)
    @Test(.inotifyServes) func anOutsideChangeIsDeliveredOnTheInotifyThreadWhileObserversAreFast() async throws {
        let directory = try TemporaryDirectory()
        let suite = try Watched("com.example.inline.fast", in: directory)
        suite.countAsSlowAfter(.seconds(10))
        let token = suite.observe()
        defer { token.cancel() }
        var threads: [String] = []
        for stamp in Int64(1)...20 {
            try suite.write(stamp)
            let delivered = await suite.delivered(stamp)
            let thread = try #require(delivered, "change \(stamp) was never delivered")
            threads.append(thread)
            if thread == Self.inotifyThread { break }
        }
        #expect(
            threads.last == Self.inotifyThread,
            "delivered on \(threads), never on the inotify thread; the next reload runs \(suite.reloadPlace)")
    }

    /// A slow observer, called inline (before it is measured slow), does not hold up another
    /// suite's outside change: a new thread takes over reading inotify. The slow suite then moves
    /// to a worker.
    @Test(.inotifyServes) func aSlowObserverIsTakenOverFromThenMovesItsSuiteToAWorker() async throws {
        let directory = try TemporaryDirectory()
        // The stamp whose delivery blocks: the first delivered on the inotify thread. (A call the
        // watcher's dispatcher thread makes goes to a worker, and other suites' tests share the
        // process's watcher, so the first change is not always inline.)
        let blocked = Atomic<Int64>(0)
        let release = DispatchSemaphore(value: 0)
        let slow = try Watched("com.example.inline.slow", in: directory) { stamp in
            guard InlineReloadTests.threadName() == InlineReloadTests.inotifyThread,
                blocked.compareExchange(expected: 0, desired: stamp, ordering: .acquiringAndReleasing).exchanged
            else { return }
            release.wait()
        }
        let other = try Watched("com.example.inline.other", in: directory)
        // Until its observer blocks, the slow suite's reloads count as fast wherever they take
        // place; the blocked one is then judged by the library's own limit.
        slow.countAsSlowAfter(.seconds(10))
        let slowToken = slow.observe()
        let otherToken = other.observe()
        defer {
            slowToken.cancel()
            otherToken.cancel()
        }
        let takeoversBefore = FileWatcher.readerTakeovers

        // The slow suite's changes until one is reloaded inline: its observer blocks there.
        var stamp: Int64 = 0
        while stamp < 20 && blocked.load(ordering: .acquiring) == 0 {
            stamp += 1
            try slow.write(stamp)
            let current = stamp
            _ = await eventually {
                blocked.load(ordering: .acquiring) != 0 || slow.seen.withLock { $0[current] } != nil
            }
        }
        let stuck = blocked.load(ordering: .acquiring)
        guard stuck != 0 else {
            release.signal()
            let place = slow.reloadPlace
            Issue.record("no change of the slow suite was reloaded inline in \(stamp) tries; next: \(place)")
            return
        }

        // With it still blocked, the other suite's outside change is delivered all the same.
        try other.write(1)
        let otherThread = await other.delivered(1)
        let takeoversAfter = FileWatcher.readerTakeovers
        slow.countAsSlowAfter(StoreSchedule.slowReload)
        release.signal()
        #expect(otherThread != nil, "another suite's outside change waited for a slow observer")
        #expect(takeoversAfter > takeoversBefore, "no thread took over reading from the held one")
        #expect(await slow.delivered(stuck) != nil, "the blocked change was never delivered")

        // Measured slow (it waited for the takeover, over 10 ms): its next change goes to a worker.
        // The reload is judged once it has finished, a moment after its observer returned: a change
        // written before then is placed by the judgement from before (inline), so wait for it
        // (a thread-sanitizer run on a loaded machine once wrote into that moment).
        #expect(
            await eventually { slow.reloadPlace != .inline },
            "the blocked reload was never measured slow; the next runs \(slow.reloadPlace)")
        try slow.write(stuck + 1)
        let next = await slow.delivered(stuck + 1)
        #expect(next != nil && next != Self.inotifyThread, "the slow suite's next reload ran on \(next ?? "none")")
        // Coming back after fast reloads in a row is checked on the schedule itself
        // (theScheduleMovesASlowSuiteAndBringsItBackAfterFastReloads): here it would hang on every
        // reload staying under 1 ms, which a loaded machine or the thread sanitizer does not give.
    }

    /// The inotify thread never waits for a store's I/O lock: a reload that finds it held goes to
    /// a worker (and is delivered from there once the lock is free), and meanwhile another suite's
    /// outside change is delivered.
    @Test func aHeldInputOutputLockIsNotWaitedFor() async throws {
        let directory = try TemporaryDirectory()
        let held = try Watched("com.example.inline.held", in: directory)
        let other = try Watched("com.example.inline.free", in: directory)
        let heldToken = held.observe()
        let otherToken = other.observe()
        defer {
            heldToken.cancel()
            otherToken.cancel()
        }
        // A thread of the test's own holds the store's I/O lock until told.
        let isHeld = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let holder = Thread {
            held.defaults.suite.inputOutput.withLock { _ in
                isHeld.signal()
                release.wait()
            }
        }
        holder.start()
        isHeld.wait()
        let takeoversBefore = FileWatcher.readerTakeovers

        try held.write(1)
        try other.write(1)
        // The other suite's change is read after the held one's, by the same watcher.
        let otherThread = await other.delivered(1)
        let heldBeforeRelease = held.seen.withLock { $0[1] }
        let takeoversWhileHeld = FileWatcher.readerTakeovers - takeoversBefore
        release.signal()
        #expect(otherThread != nil, "another suite's outside change was not delivered while the lock was held")
        #expect(heldBeforeRelease == nil, "the held suite's change was delivered while its lock was held")
        let heldThread = await held.delivered(1)
        #expect(heldThread != nil, "the held suite's change was never delivered")
        // Had the inotify thread waited for the lock, the watchdog would have had another thread
        // take over reading (that is how the other suite's change got through), and the held
        // change would come from the waiting thread once the lock was free. Delivered inline with
        // no takeover, it came from a later call after the release (the worker's reload and a
        // later inline one race for the free lock); a takeover with an inline delivery is the
        // wait (or, rarely, another test's slow observer at the same moment).
        #expect(
            heldThread != Self.inotifyThread || takeoversWhileHeld == 0,
            "the inotify thread waited for the held I/O lock")
    }

    /// The schedule: a slow reload moves the suite to a worker; the fast reloads in a row that
    /// bring it back double with each move, up to the most; a slow one on the worker starts the
    /// count again.
    @Test func theScheduleMovesASlowSuiteAndBringsItBackAfterFastReloads() {
        var schedule = StoreSchedule()
        let fast = Duration.microseconds(50)
        let slow = StoreSchedule.slowReload + .microseconds(1)
        #expect(schedule.reloadsInline)
        schedule.reloadFinished(taking: fast)
        #expect(schedule.reloadsInline)
        var needed = StoreSchedule.fewestFastReloadsToReturn
        for _ in 0..<9 {
            schedule.reloadFinished(taking: slow)
            #expect(!schedule.reloadsInline)
            for _ in 0..<(needed - 1) { schedule.reloadFinished(taking: fast) }
            // A slow one before the last starts the count again.
            schedule.reloadFinished(taking: slow)
            for _ in 0..<(needed - 1) { schedule.reloadFinished(taking: fast) }
            #expect(!schedule.reloadsInline)
            schedule.reloadFinished(taking: fast)
            #expect(schedule.reloadsInline, "not back after \(needed) fast reloads")
            needed = min(needed * 2, StoreSchedule.mostFastReloadsToReturn)
        }
        #expect(needed == StoreSchedule.mostFastReloadsToReturn)
    }

    /// A new limit judges the suite afresh: moved to a worker under the old one, it runs inline
    /// again, and a later move asks for the fewest fast reloads to come back.
    @Test func aNewLimitJudgesTheSuiteAfresh() {
        var schedule = StoreSchedule()
        let slow = StoreSchedule.slowReload + .microseconds(1)
        for _ in 0..<3 {
            schedule.reloadFinished(taking: slow)
            for _ in 0..<StoreSchedule.mostFastReloadsToReturn { schedule.reloadFinished(taking: .zero) }
        }
        schedule.reloadFinished(taking: slow)
        #expect(!schedule.reloadsInline)
        schedule.judgeReloads(slowAfter: .seconds(10))
        #expect(schedule.reloadsInline, "still on a worker after the limit changed")
        schedule.reloadFinished(taking: slow)
        #expect(schedule.reloadsInline, "a reload under the new limit counted as slow")
        schedule.judgeReloads(slowAfter: StoreSchedule.slowReload)
        schedule.reloadFinished(taking: slow)
        #expect(schedule.reloadPlace == .worker(fastInARow: 0, needed: StoreSchedule.fewestFastReloadsToReturn))
    }
}
