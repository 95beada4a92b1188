import Foundation
import Synchronization
import TestSupport
import Testing

@testable import LiveDefaults

/// An observer that writes inside its callback: the changes it makes are delivered on the
/// delivering thread, after its callback returns, each once and in the order they were made; and
/// the thread never waits for its own backlog (docs/design.md, "Observation: the `set` path").
@Suite struct ObserverWritingTests {
    /// What an observer received: the key, the old and new integer, and whether it ran on the writing thread.
    struct Received: Equatable {
        let key: String
        let old: Int?
        let new: Int?
        let onWritingThread: Bool
    }

    static func integer(_ value: PropertyListValue?) -> Int? {
        if case .integer(let number)? = value { return Int(number) }
        return nil
    }

    /// Runs `body` on a thread of its own and waits for it with a deadline (a callback that waited
    /// for its own backlog would never return).
    static func onThread(_ body: @escaping @Sendable () -> Void) async -> Bool {
        let group = DispatchGroup()
        group.enter()
        Thread.detachNewThread {
            body()
            group.leave()
        }
        return await wait(for: group, within: 30)
    }

    /// An observer that sets its own key twice inside its callback: both changes come after the
    /// callback returns, in the order they were made (one batch of two), each once.
    @Test func anObserverSettingItsOwnKeyReceivesItsChangesOnceInOrder() async throws {
        let defaults = try Defaults.inMemory(suiteName: "com.example.writing.same")
        let received = Mutex<[Received]>([])
        let writer = Mutex<pthread_t?>(nil)
        let token = defaults.observe("counter") { change in
            let new = Self.integer(change.newValue)
            let onWriter = writer.withLock { $0.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
            let old = Self.integer(change.oldValue)
            let entry = Received(key: change.key, old: old, new: new, onWritingThread: onWriter)
            received.withLock { $0.append(entry) }
            if new == 1 {
                defaults.set(2, forKey: "counter")
                defaults.set(3, forKey: "counter")
            }
        }
        defer { token.cancel() }
        let finished = await Self.onThread {
            writer.withLock { $0 = pthread_self() }
            defaults.set(1, forKey: "counter")
        }
        #expect(finished)
        #expect(
            received.withLock { $0 } == [
                Received(key: "counter", old: nil, new: 1, onWritingThread: true),
                Received(key: "counter", old: 1, new: 2, onWritingThread: true),
                Received(key: "counter", old: 2, new: 3, onWritingThread: true),
            ])
        #expect(defaults.integer(forKey: "counter") == 3)
    }

    /// An observer that sets another key inside its callback, with a backlog limit of one: that
    /// key's observer receives each change once, in order, on the same thread, after the first
    /// callback returns; the callback's writes do not wait for the backlog they are part of.
    @Test func anObserverSettingAnotherKeyNeverWaitsForItsOwnBacklog() async throws {
        let defaults = try Defaults.inMemory(suiteName: "com.example.writing.other")
        defaults.setObservationBacklogLimit(1)
        let received = Mutex<[Received]>([])
        let writer = Mutex<pthread_t?>(nil)
        let record = { @Sendable (change: DefaultsChange<PropertyListValue?>) in
            let onWriter = writer.withLock { $0.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
            received.withLock {
                $0.append(
                    Received(
                        key: change.key, old: Self.integer(change.oldValue), new: Self.integer(change.newValue),
                        onWritingThread: onWriter))
            }
        }
        let source = defaults.observe("source") { change in
            record(change)
            guard let new = Self.integer(change.newValue) else { return }
            for step in 1...3 { defaults.set(new * 10 + step, forKey: "mirror") }
        }
        let mirror = defaults.observe("mirror") { change in record(change) }
        defer {
            source.cancel()
            mirror.cancel()
        }
        let finished = await Self.onThread {
            writer.withLock { $0 = pthread_self() }
            defaults.set(1, forKey: "source")
            defaults.set(2, forKey: "source")
        }
        #expect(finished, "a callback's write waited for its own backlog")
        #expect(
            received.withLock { $0 } == [
                Received(key: "source", old: nil, new: 1, onWritingThread: true),
                Received(key: "mirror", old: nil, new: 11, onWritingThread: true),
                Received(key: "mirror", old: 11, new: 12, onWritingThread: true),
                Received(key: "mirror", old: 12, new: 13, onWritingThread: true),
                Received(key: "source", old: 1, new: 2, onWritingThread: true),
                Received(key: "mirror", old: 13, new: 21, onWritingThread: true),
                Received(key: "mirror", old: 21, new: 22, onWritingThread: true),
                Received(key: "mirror", old: 22, new: 23, onWritingThread: true),
            ])
        #expect(!ObservationBacklog.isInsideCallback, "the thread's mark outlived the callbacks")
    }
}
