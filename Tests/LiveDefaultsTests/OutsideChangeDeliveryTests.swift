import Foundation
import LiveDefaults
import Synchronization
import TestSupport
import Testing

/// Who calls an outside change's observers (issue 40): the watcher's inotify thread while they
/// are fast, a worker once they are measured slow (docs/design.md, "Live reload: who calls
/// observers"). What an observer may do there, and the order of what it hears.
@Suite struct OutsideChangeDeliveryTests {
    /// The kernel's name of the thread that reads inotify (`InotifyThread.kernelThreadName`).
    private static let inotifyThreadName = "ld-inotify"

    /// The kernel's name of the calling thread.
    private static var threadName: String {
        let name = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
        return name.trimmingCharacters(in: .newlines)
    }

    /// Writes `values` to `path` as an outside tool does: a new file renamed over the old one.
    private func replace(_ path: String, with values: [String: Any]) throws {
        let data = try PropertyListSerialization.data(fromPropertyList: values, format: .binary, options: 0)
        let temporary = path + ".outside"
        try data.write(to: URL(fileURLWithPath: temporary))
        guard rename(temporary, path) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    }

    /// An observer called on the inotify thread sets a key, cancels its own observation and opens
    /// another suite (which adds a watch) from inside its callback: nothing deadlocks, the `set`
    /// reaches its observers, and the watching goes on, for this suite and the new one.
    @Test func anObserverCalledInlineMaySetCancelAndOpenASuite() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("com.example.inline.plist").path
        try replace(path, with: ["stamp": 0])
        let defaults = try Defaults(suiteName: "com.example.inline", directory: directory.url)
        let directoryURL = directory.url

        // The observer acts on the first change it hears on the inotify thread. (The watch's
        // first call is the dispatcher's, and a reload measured slow on a loaded machine moves
        // the suite to a worker for a while: changes are written until one is heard inline.)
        let actedOn = Mutex<Int64?>(nil)
        let opened = Mutex<Defaults?>(nil)
        let selfToken = Mutex<ObservationToken?>(nil)
        let calledAfterCancelling = Mutex<Int>(0)
        let token = defaults.observe("stamp") { change in
            if actedOn.withLock({ $0 }) != nil { calledAfterCancelling.withLock { $0 += 1 } }
            guard Self.threadName == Self.inotifyThreadName, case .integer(let stamp) = change.newValue,
                actedOn.withLock({ $0 }) == nil
            else { return }
            defaults.set(Int(stamp) * 10, forKey: "echo")
            selfToken.withLock { $0 }?.cancel()
            let other = try? Defaults(suiteName: "com.example.opened", directory: directoryURL)
            opened.withLock { $0 = other }
            actedOn.withLock { $0 = stamp }
        }
        selfToken.withLock { $0 = token }
        let echoes = Mutex<[(old: PropertyListValue?, new: PropertyListValue?)]>([])
        let echoToken = defaults.observe("echo") { change in
            echoes.withLock { $0.append((change.oldValue, change.newValue)) }
        }
        let stamps = Mutex<[Int64]>([])
        let stampToken = defaults.observe("stamp") { change in
            if case .integer(let stamp) = change.newValue { stamps.withLock { $0.append(stamp) } }
        }

        var written: Int64 = 0
        while actedOn.withLock({ $0 }) == nil, written < 200 {
            written += 1
            try replace(path, with: ["stamp": written])
            let stamp = written
            try #require(await eventually { stamps.withLock { $0.last } == stamp }, "change \(stamp) arrived")
        }
        let acted = try #require(actedOn.withLock { $0 }, "no change was heard on the inotify thread")
        #expect(await eventually { echoes.withLock { $0.count } == 1 }, "the set inside the observer was delivered")
        #expect(echoes.withLock { $0.first?.old } == nil)
        #expect(echoes.withLock { $0.first?.new } == .integer(acted * 10))
        #expect(defaults.integer(forKey: "echo") == Int(acted * 10))

        // The watching goes on: this suite's next change, and the suite opened inside the callback.
        // The `set` made inside the observer is written first: an outside writer that does not
        // take the suite's lock would otherwise race with that flush.
        try defaults.synchronize()
        try replace(path, with: ["stamp": written + 1])
        #expect(await eventually { stamps.withLock { $0.last } == written + 1 }, "the next change was delivered")
        #expect(token.isCancelled, "the observer cancelled itself")
        #expect(calledAfterCancelling.withLock { $0 } == 0, "the observer was called after cancelling itself")
        let other = try #require(opened.withLock { $0 })
        let seen = Mutex<PropertyListValue?>(nil)
        let otherToken = other.observe("flag") { change in seen.withLock { $0 = change.newValue } }
        try replace(directory.file("com.example.opened.plist").path, with: ["flag": true])
        #expect(await eventually { seen.withLock { $0 } == .bool(true) }, "the suite opened inline is watched")

        echoToken.cancel()
        stampToken.cancel()
        otherToken.cancel()
    }

    /// An observer that is slow now and then moves its suite to a worker and back: every change
    /// it hears follows the one before (old value = the last new value), in order, and the last
    /// one written arrives — across the moves between threads.
    @Test(
        .disabled(
            if: isThreadSanitized,
            """
            under the thread sanitizer every reload takes longer than the 1 ms that moves a suite to a \
            worker, so the moves this test follows never happen
            """))
    func changesStayInOrderAcrossTheMoveToAWorkerAndBack() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("com.example.moving.plist").path
        try replace(path, with: ["stamp": 0])
        let defaults = try Defaults(suiteName: "com.example.moving", directory: directory.url)

        struct Heard: Sendable {
            var old: Int64
            var new: Int64
            var inline: Bool
            var slow = false
        }
        let heard = Mutex<[Heard]>([])
        // Two slow spells of three changes each, from stamps 10 and 150: each moves the suite to
        // a worker, and the fast changes after it bring it back.
        let slowSpells = Mutex<[Int]>([0, 0])
        let token = defaults.observe("stamp") { change in
            guard case .integer(let old) = change.oldValue, case .integer(let new) = change.newValue else { return }
            let inline = Self.threadName == Self.inotifyThreadName
            heard.withLock { $0.append(Heard(old: old, new: new, inline: inline)) }
            let isSlow = slowSpells.withLock { spells in
                let spell = new >= 150 ? 1 : new >= 10 ? 0 : nil
                guard let spell, spells[spell] < 3 else { return false }
                spells[spell] += 1
                return true
            }
            if isSlow {
                heard.withLock { $0[$0.count - 1].slow = true }
                usleep(3_000)
            }
        }

        let last: Int64 = 300
        for stamp in 1...last {
            try replace(path, with: ["stamp": stamp])
            // Now and then let the watcher catch up, so that changes are heard one by one too.
            if stamp % 20 == 0 { _ = await eventually { heard.withLock { $0.last?.new } == stamp } }
        }
        #expect(await eventually { heard.withLock { $0.last?.new } == last }, "the last change arrived")
        let all = heard.withLock { $0 }
        var previous: Int64 = 0
        for change in all {
            #expect(change.old == previous, "a change's old value is the one heard before it")
            #expect(change.new > change.old, "changes arrive in the order they were made")
            previous = change.new
        }
        #expect(all.contains { $0.inline }, "some changes were delivered on the inotify thread")
        // Measured slow on the inotify thread, the suite's next change is delivered on a worker.
        let slowInline = all.indices.dropLast().filter { all[$0].slow && all[$0].inline }
        #expect(!slowInline.isEmpty, "a slow change was heard on the inotify thread")
        for index in slowInline {
            #expect(!all[index + 1].inline, "the change after a slow one was delivered on the inotify thread")
        }
        let movedBack = all.indices.dropFirst().contains { all[$0].inline && !all[$0 - 1].inline }
        #expect(movedBack, "the suite came back inline after fast changes on the worker")
        token.cancel()
    }
}

/// Whether this process runs under the thread sanitizer (its runtime is linked in).
private let isThreadSanitized = dlsym(nil, "__tsan_init") != nil
