import Dispatch
import Foundation
import Testing

@testable import LiveDefaults

/// The timer thread that times a store's background flush: work runs once, not before its delay,
/// in deadline order, on the queue it names.
@Suite struct DeadlineTimerTests {
    /// What ran, and when, from any thread.
    final class Record: @unchecked Sendable {
        private let lock = NSLock()
        private var entries: [(label: String, at: ContinuousClock.Instant)] = []
        private let finished = DispatchSemaphore(value: 0)

        func note(_ label: String) {
            lock.withLock { entries.append((label, .now)) }
            finished.signal()
        }

        /// Waits for `count` notes, at most `seconds` in all; returns the labels in the order run.
        func wait(for count: Int, seconds: Double = 10) -> [(label: String, at: ContinuousClock.Instant)] {
            let end = DispatchTime.now() + seconds
            for _ in 0..<count where finished.wait(timeout: end) == .timedOut { break }
            return lock.withLock { entries }
        }
    }

    static func timer() throws -> DeadlineTimer {
        try #require(DeadlineTimer.shared, "this Linux gives a timerfd")
    }

    /// A serial queue for a test's work, not Dispatch's global queue: a serial queue is served by a
    /// thread of its own when every worker is busy, where the global queue waits. In the thread
    /// sanitizer's run of the whole suite, the stress tests keep the global queue's workers busy
    /// for minutes, and none of 800 pieces of work there ran within 20 s
    /// (`workArmedFromManyThreadsAllRunsOnce`); what these tests judge is the timer, not Dispatch.
    static func queueOfItsOwn() -> DispatchQueue {
        DispatchQueue(label: "deadline-timer-test-\(UUID().uuidString)")
    }

    /// Three delays armed longest first: they run shortest first, each once and none before its
    /// delay, on the queue they name.
    @Test func workRunsOnceAfterItsDelayInDeadlineOrderOnItsQueue() throws {
        let timer = try Self.timer()
        let record = Record()
        let queue = DispatchQueue(label: "deadline-timer-test")
        let key = DispatchSpecificKey<Int>()
        queue.setSpecific(key: key, value: 7)
        let start = ContinuousClock.now
        for milliseconds in [60, 20, 40] {
            timer.run(after: .milliseconds(milliseconds), on: queue) {
                record.note(DispatchQueue.getSpecific(key: key) == 7 ? "\(milliseconds)" : "wrong queue")
            }
        }
        let ran = record.wait(for: 3)
        #expect(ran.map(\.label) == ["20", "40", "60"])
        for entry in ran {
            let delay = Duration.milliseconds(Int(entry.label) ?? 0)
            #expect(entry.at - start >= delay, "\(entry.label) ms ran after \(entry.at - start)")
        }
    }

    /// A deadline armed after a far one, and earlier than it, is not held up by it.
    @Test func anEarlierDeadlineArmedLaterRunsFirst() throws {
        let timer = try Self.timer()
        let record = Record()
        let queue = Self.queueOfItsOwn()
        timer.run(after: .seconds(600), on: queue) { record.note("far") }
        timer.run(after: .milliseconds(10), on: queue) { record.note("near") }
        #expect(record.wait(for: 1).map(\.label) == ["near"])
    }

    /// Many threads arming at once: every piece of work runs exactly once (on a queue of the
    /// test's own, ``queueOfItsOwn()``).
    @Test func workArmedFromManyThreadsAllRunsOnce() throws {
        let timer = try Self.timer()
        let record = Record()
        let queue = Self.queueOfItsOwn()
        let threads = 8
        let each = 100
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for index in 0..<each {
                timer.run(after: .microseconds((thread * 37 + index * 11) % 3_000), on: queue) {
                    record.note("\(thread)-\(index)")
                }
            }
        }
        let ran = record.wait(for: threads * each, seconds: 20).map(\.label)
        #expect(ran.count == threads * each)
        #expect(Set(ran).count == threads * each)
    }

    /// No delay runs the work at once, on its queue.
    @Test func noDelayRunsAtOnce() throws {
        let timer = try Self.timer()
        let record = Record()
        timer.run(after: .zero, on: Self.queueOfItsOwn()) { record.note("now") }
        #expect(record.wait(for: 1).map(\.label) == ["now"])
    }
}
