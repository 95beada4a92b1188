import Foundation
import TestSupport
import Testing

@testable import LiveDefaults

/// Several threads writing one key: every observer, of every kind, receives every change once,
/// with the old and new value that change made, in the order the changes were applied.
@Suite struct ConcurrentWriterObservationTests {
    static let threads = 8
    /// 10,000 in CI, 2,000 in a quick run (``Stress``).
    static let writesPerThread = Stress.scaled(10_000, quick: 2_000)

    /// The new values an observer received, and whether each old value was the previous new value.
    final class Chain: Sendable {
        private let state = Locked<(values: [Int], broken: Int, last: Int?)>(([], 0, nil))

        func record(old: Int?, new: Int?) {
            state.withLock { state in
                if old != state.last { state.broken += 1 }
                if let new { state.values.append(new) }
                state.last = new
            }
        }

        var values: [Int] { state.withLock { $0.values } }
        var brokenLinks: Int { state.withLock { $0.broken } }
        var last: Int? { state.withLock { $0.last } }
    }

    static func integer(_ value: PropertyListValue?) -> Int? {
        if case .integer(let number)? = value { return Int(number) }
        return nil
    }

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

    /// Checks one observer's record against the changes made.
    static func expectComplete(_ chain: Chain, stored: Int?, _ name: String) {
        let values = chain.values
        let total = threads * writesPerThread
        #expect(values.count == total, "\(name): \(values.count) of \(total) changes delivered")
        #expect(Set(values).count == values.count, "\(name): a change was delivered twice")
        #expect(chain.brokenLinks == 0, "\(name): \(chain.brokenLinks) old values were not the previous new value")
        #expect(chain.last == stored, "\(name): ends on \(chain.last as Any), the store holds \(stored as Any)")
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

        let direct = Chain()
        let directToken = defaults.observe("counter") {
            direct.record(old: Self.integer($0.oldValue), new: Self.integer($0.newValue))
        }
        let queued = Chain()
        let queue = DispatchQueue(label: "queued-observer")
        let queuedToken = defaults.observe("counter", queue: queue) {
            queued.record(old: Self.integer($0.oldValue), new: Self.integer($0.newValue))
        }
        let typed = Chain()
        // The typed key reads absence as its default, 0: the first old value is then 0, not nil.
        typed.record(old: nil, new: nil)
        let typedToken = defaults.observe(counter) { change in
            typed.record(old: change.oldValue == 0 ? nil : change.oldValue, new: change.newValue)
        }
        let everyKey = Chain()
        let everyKeyToken = defaults.observeAll {
            everyKey.record(old: Self.integer($0.oldValue), new: Self.integer($0.newValue))
        }
        let streamed = Chain()
        let total = Self.threads * Self.writesPerThread
        let stream = defaults.changes(of: "counter")
        let consumer = Task {
            var received = 0
            for await change in stream {
                streamed.record(old: Self.integer(change.oldValue), new: Self.integer(change.newValue))
                received += 1
                if received == total { break }
            }
        }

        #expect(await Self.writeConcurrently { defaults.set($0, forKey: "counter") })
        // Every change was made: delivery to the queue and the stream may still be under way.
        #expect(await eventually(within: 60) { queued.values.count >= total && streamed.values.count >= total })
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
        let chains = (Chain(), Chain())
        let tokens = [
            first.observe("k") { chains.0.record(old: Self.integer($0.oldValue), new: Self.integer($0.newValue)) },
            second.observe("k") { chains.1.record(old: Self.integer($0.oldValue), new: Self.integer($0.newValue)) },
        ]
        #expect(await Self.writeConcurrently { value in (value % 2 == 0 ? first : second).set(value, forKey: "k") })
        let stored = first.integer(forKey: "k")
        #expect(second.integer(forKey: "k") == stored)
        Self.expectComplete(chains.0, stored: stored, "first instance")
        Self.expectComplete(chains.1, stored: stored, "second instance")
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
        let chain = Chain()
        let release = DispatchSemaphore(value: 0)
        let blocked = Locked(false)
        let token = defaults.observe("k") { change in
            chain.record(old: Self.integer(change.oldValue), new: Self.integer(change.newValue))
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
        #expect(chain.values.count == 801)
        #expect(chain.brokenLinks == 0)
        #expect(chain.last == defaults.integer(forKey: "k"))
        token.cancel()
    }

    @Test func aQueueThatDoesNotRunMakesWritersWaitAtTheBacklogLimit() async throws {
        let directory = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: "com.example.backlogq", directory: directory.url, watchesFiles: false)
        let limit = 32
        defaults.setObservationBacklogLimit(limit)
        let chain = Chain()
        let queue = DispatchQueue(label: "stalled-observer")
        queue.suspend()
        let token = defaults.observe("k", queue: queue) { change in
            chain.record(old: Self.integer(change.oldValue), new: Self.integer(change.newValue))
        }
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
        #expect(await eventually(within: 30) { chain.values.count == 400 })
        #expect(chain.brokenLinks == 0)
        #expect(chain.last == defaults.integer(forKey: "k"))
        token.cancel()
    }
}
