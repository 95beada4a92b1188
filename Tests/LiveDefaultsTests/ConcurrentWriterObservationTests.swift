import Foundation
import LiveDefaultsTestHelpers
import TestSupport
import Testing

@testable import LiveDefaults

/// Several threads writing one key: every observer, of every kind, receives every change once,
/// with the old and new value that change made, in the order the changes were applied.
@Suite struct ConcurrentWriterObservationTests {
    static let threads = 8
    /// 10,000 in CI, 2,000 in a quick run (``Stress``).
    static let writesPerThread = Stress.scaled(10_000, quick: 2_000)

    static func integer(_ value: PropertyListValue?) -> Int? {
        if case .integer(let number)? = value { return Int(number) }
        return nil
    }

    /// The new values an observer received, in order.
    static func values(_ log: ChangeLog) -> [Int] { log.all.compactMap { integer($0.newValue) } }

    /// Writes distinct values from real threads (the task pool of a 2-core machine would run only two).
    static func writeConcurrently(_ write: @escaping @Sendable (Int) -> Void) async -> Bool {
        let group = DispatchGroup()
        for thread in 0..<threads {
            group.enter()
            Thread.detachNewThread {
                for step in 0..<writesPerThread { write(thread * writesPerThread + step + 1) }
                group.leave()
            }
        }
        return await wait(for: group, within: 300)
    }

    /// Checks one observer's record against the changes made: every change once, each old value the
    /// previous new value, ending on the stored value.
    static func expectComplete(_ log: ChangeLog, stored: Int?, _ name: String) {
        let values = values(log)
        let total = threads * writesPerThread
        let last = integer(log.all.last?.newValue)
        #expect(values.count == total, "\(name): \(values.count) of \(total) changes delivered")
        #expect(Set(values).count == values.count, "\(name): a change was delivered twice")
        #expect(log.brokenChains().isEmpty, "\(name): an old value was not the previous new value")
        #expect(last == stored, "\(name): ends on \(last as Any), the store holds \(stored as Any)")
        // Each writer's own values arrive in the order it wrote them.
        var lastPerThread = [Int: Int]()
        var outOfOrder = 0
        for value in values {
            let thread = (value - 1) / writesPerThread
            if let previous = lastPerThread[thread], previous > value { outOfOrder += 1 }
            lastPerThread[thread] = value
        }
        #expect(outOfOrder == 0, "\(name): \(outOfOrder) changes of one writer arrived out of its order")
    }

    @Test func everyObserverKindReceivesEveryChangeOfOneKeyExactlyOnce() async throws {
        let directory = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: "com.example.writers", directory: directory.url, watchesFiles: false)
        let counter = Defaults.Key<Int>("counter", default: 0)

        let direct = ChangeLog()
        let directToken = defaults.observe("counter") { direct.record($0) }
        let queued = ChangeLog()
        let queue = DispatchQueue(label: "queued-observer")
        let queuedToken = defaults.observe("counter", queue: queue) { queued.record($0) }
        let typed = ChangeLog()
        let typedToken = defaults.observe(counter) { change in
            // The typed key reads absence as its default, 0: the first old value is then 0, not nil.
            typed.record(
                ChangeLog.Entry(
                    key: change.key, old: change.oldValue == 0 ? nil : .integer(Int64(change.oldValue)),
                    new: .integer(Int64(change.newValue)), origin: change.origin))
        }
        let everyKey = ChangeLog()
        let everyKeyToken = defaults.observeAll { everyKey.record($0) }
        let streamed = ChangeLog()
        let total = Self.threads * Self.writesPerThread
        let stream = defaults.changes(of: "counter")
        let consumer = Task {
            var received = 0
            for await change in stream {
                streamed.record(change)
                received += 1
                if received == total { break }
            }
        }

        #expect(await Self.writeConcurrently { defaults.set($0, forKey: "counter") })
        // Every change was made: delivery to the queue and the stream may still be under way.
        #expect(await eventually(within: 60) { queued.all.count >= total && streamed.all.count >= total })
        // Ends the stream's loop should a change be missing (it would otherwise wait for it forever).
        consumer.cancel()
        _ = await consumer.value
        queue.sync {}

        let stored = defaults.integer(forKey: "counter")
        Self.expectComplete(direct, stored: stored, "direct token")
        Self.expectComplete(queued, stored: stored, "queued token")
        Self.expectComplete(typed, stored: stored, "typed token")
        Self.expectComplete(streamed, stored: stored, "AsyncSequence")
        Self.expectComplete(everyKey, stored: stored, "observeAll")
        for token in [directToken, queuedToken, typedToken, everyKeyToken] { token.cancel() }
    }

    @Test func observersOfOneSuiteThroughTwoInstancesBothReceiveEveryChange() async throws {
        // Two `Defaults` of one suite share its store: a write through either reaches both.
        let directory = try TemporaryDirectory()
        let first = try Defaults(suiteName: "com.example.shared", directory: directory.url, watchesFiles: false)
        let second = try Defaults(suiteName: "com.example.shared", directory: directory.url, watchesFiles: false)
        let logs = (ChangeLog(), ChangeLog())
        let tokens = [first.observe("k") { logs.0.record($0) }, second.observe("k") { logs.1.record($0) }]
        #expect(await Self.writeConcurrently { value in (value % 2 == 0 ? first : second).set(value, forKey: "k") })
        let stored = first.integer(forKey: "k")
        #expect(second.integer(forKey: "k") == stored)
        Self.expectComplete(logs.0, stored: stored, "first instance")
        Self.expectComplete(logs.1, stored: stored, "second instance")
        tokens.forEach { $0.cancel() }
    }

    @Test func priorCallsComeJustBeforeTheirChangeWithTheSameOldValue() async throws {
        let directory = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: "com.example.prior", directory: directory.url, watchesFiles: false)
        let calls = Locked<[DefaultsChange<PropertyListValue?>]>([])
        let token = defaults.observe("k", options: [.old, .new, .prior]) { change in
            calls.withLock { $0.append(change) }
        }
        #expect(await Self.writeConcurrently { defaults.set($0, forKey: "k") })
        let all = calls.withLock { $0 }
        #expect(all.count == 2 * Self.threads * Self.writesPerThread)
        var mismatched = 0
        for index in stride(from: 0, to: all.count - 1, by: 2) {
            let prior = all[index]
            let change = all[index + 1]
            if !prior.isPrior || change.isPrior || prior.oldValue != change.oldValue { mismatched += 1 }
        }
        #expect(mismatched == 0, "\(mismatched) prior calls were not followed by their own change")
        token.cancel()
    }

    /// Runs `writers` threads of `count` writes each; counts the writes that returned.
    static func startWriters(
        _ defaults: Defaults, writers: Int, count: Int, completed: Locked<Int>, base: Int = 1_000
    ) -> DispatchGroup {
        let group = DispatchGroup()
        for thread in 0..<writers {
            group.enter()
            Thread.detachNewThread {
                for step in 0..<count {
                    defaults.set(base + thread * count + step, forKey: "k")
                    completed.withLock { $0 += 1 }
                }
                group.leave()
            }
        }
        return group
    }

    @Test func aSlowObserverMakesWritersWaitAtTheBacklogLimit() async throws {
        let directory = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: "com.example.backlog", directory: directory.url, watchesFiles: false)
        let limit = 64
        defaults.setObservationBacklogLimit(limit)
        let log = ChangeLog()
        let release = DispatchSemaphore(value: 0)
        let blocked = Locked(false)
        let token = defaults.observe("k") { change in
            log.record(change)
            if blocked.withLock({ state in
                defer { state = true }; return !state
            }) {
                release.wait()
            }
        }
        // The first write's thread delivers, and stays in the observer until released.
        let first = DispatchGroup()
        first.enter()
        Thread.detachNewThread {
            defaults.set(1, forKey: "k")
            first.leave()
        }
        #expect(await eventually { blocked.withLock { $0 } })
        let completed = Locked(0)
        let writers = Self.startWriters(defaults, writers: 4, count: 200, completed: completed)
        let queued = { defaults.state.withLock { $0.observers.queue.count } }
        #expect(await eventually(within: 30) { queued() >= limit })
        // The writers wait: at most one change each beyond the limit, and no more writes return.
        #expect(queued() <= limit + 4)
        #expect(completed.withLock { $0 } <= limit)
        release.signal()
        #expect(await wait(for: writers, within: 60))
        #expect(await wait(for: first, within: 60))
        #expect(Self.values(log).count == 801)
        #expect(log.brokenChains().isEmpty)
        #expect(Self.integer(log.all.last?.newValue) == defaults.integer(forKey: "k"))
        token.cancel()
    }

    @Test func aQueueThatDoesNotRunMakesWritersWaitAtTheBacklogLimit() async throws {
        let directory = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: "com.example.backlogq", directory: directory.url, watchesFiles: false)
        let limit = 32
        defaults.setObservationBacklogLimit(limit)
        let log = ChangeLog()
        let queue = DispatchQueue(label: "stalled-observer")
        queue.suspend()
        let token = defaults.observe("k", queue: queue) { log.record($0) }
        let completed = Locked(0)
        let writers = Self.startWriters(defaults, writers: 4, count: 100, completed: completed)
        // The deliverer waits for the stalled queue; then the observers' queue fills and writers wait.
        let queued = { defaults.state.withLock { $0.observers.queue.count } }
        #expect(await eventually(within: 30) { queued() >= limit })
        // Held at most: the stalled queue's `limit`, the batch the deliverer claimed and is handing
        // to it (what the observers' queue held then: at most `limit` and one change per writer),
        // and the observers' queue again (`limit` and one per writer) — never more, however slow.
        #expect(completed.withLock { $0 } <= 3 * limit + 2 * 4)
        queue.resume()
        #expect(await wait(for: writers, within: 60))
        #expect(await eventually(within: 30) { log.all.count == 400 })
        #expect(log.brokenChains().isEmpty)
        #expect(Self.integer(log.all.last?.newValue) == defaults.integer(forKey: "k"))
        token.cancel()
    }
}
