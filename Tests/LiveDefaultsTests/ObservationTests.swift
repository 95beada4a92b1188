import Foundation
import LiveDefaultsTestHelpers
import Observation
import TestSupport
import Testing

@testable import LiveDefaults

@Suite struct ObservationTests {
    func makeDefaults(_ directory: borrowing TemporaryDirectory, _ name: String = "com.example.observe") throws
        -> Defaults
    {
        try Defaults(suiteName: name, directory: directory.url, watchesFiles: false)
    }

    @Test func setDeliversOldAndNewOnce() throws {
        let directory = try TemporaryDirectory()
        let defaults = try makeDefaults(directory)
        let recorder = Recorder<PropertyListValue?>()
        let token = defaults.observe("theme") { recorder.record($0) }
        defaults.set("dark", forKey: "theme")
        defaults.set("dark", forKey: "theme")  // no change: nothing delivered
        defaults.set("light", forKey: "theme")
        defaults.removeObject(forKey: "theme")
        defaults.set("other", forKey: "unrelated")
        let changes = recorder.all
        #expect(changes.map(\.oldValue) == [nil, "dark", "light"])
        #expect(changes.map(\.newValue) == ["dark", "light", nil])
        #expect(changes.allSatisfy { $0.origin == .local && $0.key == "theme" && !$0.isPrior })
        token.cancel()
    }

    @Test func everyCauseOfAnEffectiveChangeIsDelivered() throws {
        let directory = try TemporaryDirectory()
        let defaults = try makeDefaults(directory)
        defaults.setVolatileDomain([:] as [String: PropertyListValue], forName: Defaults.argumentDomain)
        let added = try makeDefaults(directory, "com.example.added")
        let global = try makeDefaults(directory, Defaults.globalDomain)
        let recorder = Recorder<PropertyListValue?>()
        let token = defaults.observe("k") { recorder.record($0) }

        defaults.register(defaults: ["k": "registered"])  // registration
        global.set("global", forKey: "k")  // global domain, through another instance
        added.set("added", forKey: "k")  // not in the search list yet: nothing
        try defaults.addSuite(named: "com.example.added")  // added suite
        defaults.set("suite", forKey: "k")  // the suite
        defaults.setVolatileDomain(["k": "volatile"], forName: "v")  // volatile domain
        defaults.setVolatileDomain(["k": "argument"], forName: Defaults.argumentDomain)  // argument domain
        defaults.setVolatileDomain(["k": "argument"], forName: Defaults.argumentDomain)  // same: nothing
        defaults.removeVolatileDomain(forName: Defaults.argumentDomain)
        defaults.removeVolatileDomain(forName: "v")
        defaults.removeObject(forKey: "k")  // shadowing value removed → added suite's shows
        defaults.removeSuite(named: "com.example.added")
        try defaults.setPersistentDomain(["k": "persistent"], forName: "com.example.observe")  // persistent domain
        defaults.removePersistentDomain(forName: "com.example.observe")
        global.removeObject(forKey: "k")

        let expected: [(PropertyListValue?, PropertyListValue?)] = [
            (nil, "registered"), ("registered", "global"), ("global", "added"), ("added", "suite"),
            ("suite", "volatile"), ("volatile", "argument"), ("argument", "volatile"), ("volatile", "suite"),
            ("suite", "added"), ("added", "global"), ("global", "persistent"), ("persistent", "global"),
            ("global", "registered"),
        ]
        let changes = recorder.all
        #expect(changes.count == expected.count)
        for (change, pair) in zip(changes, expected) {
            #expect(change.oldValue == pair.0 && change.newValue == pair.1, "\(change)")
        }
        token.cancel()
    }

    @Test func optionsInitialPriorOldNew() throws {
        let directory = try TemporaryDirectory()
        let defaults = try makeDefaults(directory)
        defaults.set(1, forKey: "n")
        let recorder = Recorder<PropertyListValue?>()
        let token = defaults.observe("n", options: [.initial, .prior, .old, .new]) { recorder.record($0) }
        defaults.set(2, forKey: "n")
        let changes = recorder.all
        try #require(changes.count == 3)
        #expect(changes[0].isInitial && changes[0].newValue == 1)
        #expect(changes[0].oldValue == 1, "the initial call: old and new are both the current value")
        #expect(changes[1].isPrior && changes[1].oldValue == 1 && changes[1].newValue == 2)
        #expect(!changes[2].isPrior && changes[2].oldValue == 1 && changes[2].newValue == 2)

        let onlyNew = Recorder<PropertyListValue?>()
        let second = defaults.observe("n", options: [.new]) { onlyNew.record($0) }
        defaults.set(3, forKey: "n")
        #expect(onlyNew.all.map(\.oldValue) == [2], "both values are always given")
        #expect(onlyNew.all.map(\.newValue) == [3])
        token.cancel()
        second.cancel()
    }

    @Test func cancelIsIdempotentAndDroppingTheTokenCancels() throws {
        let directory = try TemporaryDirectory()
        let defaults = try makeDefaults(directory)
        let recorder = Recorder<PropertyListValue?>()
        let token = defaults.observe("k") { recorder.record($0) }
        defaults.set(1, forKey: "k")
        token.cancel()
        token.cancel()
        #expect(token.isCancelled)
        defaults.set(2, forKey: "k")
        #expect(recorder.count == 1)

        let dropped = Recorder<PropertyListValue?>()
        do {
            _ = defaults.observe("k") { dropped.record($0) }  // released at once
        }
        defaults.set(3, forKey: "k")
        #expect(dropped.count == 0)
    }

    @Test func observerMayWriteTheStoreItObserves() throws {
        let directory = try TemporaryDirectory()
        let defaults = try makeDefaults(directory)
        let recorder = Recorder<PropertyListValue?>()
        // Clamp: whenever "volume" goes above 10, set it back to 10 (writing the same key).
        let token = defaults.observe("volume") { change in
            recorder.record(change)
            if case .integer(let value) = change.newValue, value > 10 { defaults.set(10, forKey: "volume") }
            _ = defaults.integer(forKey: "volume")  // and read, inside the callback
        }
        defaults.set(50, forKey: "volume")
        #expect(defaults.integer(forKey: "volume") == 10)
        #expect(recorder.all.map(\.newValue) == [50, 10], "changes arrive in the order they were applied")
        #expect(recorder.all.last?.newValue == defaults.propertyList(forKey: "volume"))
        token.cancel()
    }

    @Test func cancellingOrDroppingInsideTheCallbackIsSafe() throws {
        let directory = try TemporaryDirectory()
        let defaults = try makeDefaults(directory)
        let recorder = Recorder<PropertyListValue?>()
        let holder = Locked<ObservationToken?>(nil)
        let token = defaults.observe("k") { change in
            recorder.record(change)
            holder.withLock { $0?.cancel() }
        }
        holder.withLock { $0 = token }
        defaults.set(1, forKey: "k")
        defaults.set(2, forKey: "k")
        #expect(recorder.count == 1)

        // Dropping the last reference from inside the callback.
        let dropped = Recorder<PropertyListValue?>()
        let slot = Locked<ObservationToken?>(nil)
        slot.withLock {
            $0 = defaults.observe("j") { change in
                dropped.record(change)
                slot.withLock { $0 = nil }
            }
        }
        defaults.set(1, forKey: "j")
        defaults.set(2, forKey: "j")
        #expect(dropped.count == 1)
    }

    @Test func typedKeysDeliverTypedValues() throws {
        let directory = try TemporaryDirectory()
        let defaults = try makeDefaults(directory)
        let themes = Recorder<Theme>()
        let profiles = Recorder<Profile?>()
        let sizes = Recorder<Int>()
        let nicknames = Recorder<String?>()
        let tokens = [
            defaults.observe(.theme) { themes.record($0) },
            defaults.observe(.profile) { profiles.record($0) },
            defaults.observe(.fontSize) { sizes.record($0) },
            defaults.observe(.nickname) { nicknames.record($0) },
        ]
        defaults[.theme] = .dark
        defaults.set("dark", forKey: "theme")  // same decoded value: nothing
        let profile = Profile(name: "A", age: 1, tags: [])
        defaults[.profile] = profile
        defaults[.profile] = profile
        defaults[.fontSize] = 20
        defaults[.nickname] = "n"
        defaults[.nickname] = nil
        #expect(themes.all.map(\.oldValue) == [.system])
        #expect(themes.all.map(\.newValue) == [.dark])
        #expect(profiles.all.count == 1)
        #expect(profiles.all.first?.newValue == .some(profile))
        #expect(sizes.all.map(\.newValue) == [20])
        #expect(nicknames.all.map(\.newValue) == ["n", nil], "an optional key: one level of Optional")
        _ = tokens
    }

    @Test func wrongTypeUnderATypedKeyDeliversTheDefaultAndReports() throws {
        let directory = try TemporaryDirectory()
        let defaults = try makeDefaults(directory)
        let reported = Locked<[DefaultsError]>([])
        let themes = Recorder<Theme>()
        defaults[.theme] = .dark
        let token = defaults.observe(.theme) { themes.record($0) }
        let reporting = DefaultsErrorReporting.listen { error in
            if error.code == .decodingFailed { reported.withLock { $0.append(error) } }
        }
        defer { reporting.cancel() }
        defaults.set(12, forKey: "theme")
        #expect(themes.all.map(\.newValue) == [.system])
        #expect(reported.withLock { $0.contains { $0.message.contains("\"theme\"") } })
        token.cancel()
    }

    @Test func observerOnAQueueIsCalledThere() async throws {
        let directory = try TemporaryDirectory()
        let defaults = try makeDefaults(directory)
        let queue = DispatchQueue(label: "observer")
        let key = DispatchSpecificKey<Bool>()
        queue.setSpecific(key: key, value: true)
        let onQueue = Locked<[Bool]>([])
        let token = defaults.observe("k", queue: queue) { _ in
            onQueue.withLock { $0.append(DispatchQueue.getSpecific(key: key) == true) }
        }
        defaults.set(1, forKey: "k")
        defaults.set(2, forKey: "k")
        #expect(await eventually { onQueue.withLock { $0.count } == 2 })
        #expect(onQueue.withLock { $0 } == [true, true])
        token.cancel()
    }

    @Test func asyncSequenceDeliversAndEndsWhenItsTaskIsCancelled() async throws {
        let directory = try TemporaryDirectory()
        let defaults = try makeDefaults(directory)
        let received = Locked<[Theme]>([])
        let task = Task {
            for await change in defaults.changes(of: .theme, options: [.initial, .new]) {
                received.withLock { $0.append(change.newValue) }
            }
            return "ended"
        }
        #expect(await eventually { received.withLock { $0 } == [.system] })
        defaults[.theme] = .dark
        #expect(await eventually { received.withLock { $0 } == [.system, .dark] })
        #expect(defaults.state.withLock { $0.observers.hasObservers(of: HashedKey("theme")) })
        task.cancel()
        #expect(await task.value == "ended")
        #expect(await eventually { !defaults.state.withLock { $0.observers.hasObservers(of: HashedKey("theme")) } })
    }

    @Test func observationBridgeFiresWithObservationTracking() async throws {
        let directory = try TemporaryDirectory()
        let defaults = try makeDefaults(directory)
        let theme = defaults.observable(.theme)
        #expect(theme.value == .system)
        let fired = Locked(false)
        withObservationTracking {
            _ = theme.value
        } onChange: {
            fired.withLock { $0 = true }
        }
        defaults[.theme] = .light
        #expect(fired.withLock { $0 })
        #expect(theme.value == .light)
        theme.value = .dark
        #expect(defaults[.theme] == .dark)
    }

    @Test func propertyWrapperReadsAndWrites() throws {
        let directory = try TemporaryDirectory()
        let defaults = try makeDefaults(directory)
        struct Settings {
            @Setting<Theme> var theme: Theme
            init(_ defaults: Defaults) { _theme = Setting(.theme, in: defaults) }
        }
        let settings = Settings(defaults)
        #expect(settings.theme == .system)
        settings.theme = .dark
        #expect(defaults[.theme] == .dark)
        defaults[.theme] = .light
        #expect(settings.theme == .light)
        #expect(settings.$theme.value == .light)
    }

    @Test func didChangeNotificationIsPosted() async throws {
        let directory = try TemporaryDirectory()
        let defaults = try makeDefaults(directory)
        let posted = Locked(0)
        let observer = NotificationCenter.default.addObserver(
            forName: UserDefaults.didChangeNotification, object: defaults, queue: nil
        ) { _ in posted.withLock { $0 += 1 } }
        defer { NotificationCenter.default.removeObserver(observer) }
        defaults.set(1, forKey: "k")
        #expect(await eventually { posted.withLock { $0 } >= 1 })
    }

    @Test func writeCostsNoMoreWithManyObserversOfOtherKeys() throws {
        // Not a timing: the observers of other keys are never looked at. Each observer of another
        // key would be called if a write visited it; none is.
        let directory = try TemporaryDirectory()
        let defaults = try makeDefaults(directory)
        let calls = Locked(0)
        let tokens = (0..<100_000).map { index in
            defaults.observe("other-\(index)") { _ in calls.withLock { $0 += 1 } }
        }
        let recorder = Recorder<PropertyListValue?>()
        let token = defaults.observe("mine") { recorder.record($0) }
        defaults.set(1, forKey: "mine")
        #expect(recorder.count == 1)
        #expect(calls.withLock { $0 } == 0)
        tokens.forEach { $0.cancel() }
        token.cancel()
        #expect(!defaults.state.withLock { $0.observers.hasObservers(of: HashedKey("other-5")) })
    }

    @Test func eightThreadsWritingWhileObserversComeAndGo() async throws {
        let directory = try TemporaryDirectory()
        let defaults = try makeDefaults(directory)
        let lastSeen = Locked<[String: PropertyListValue?]>([:])
        let keys = (0..<4).map { "shared-\($0)" }
        let stable = keys.map { key in
            defaults.observe(key) { change in lastSeen.withLock { $0[key] = change.newValue } }
        }
        // Eight real threads (the task pool of a 2-core machine would run only two at once).
        let group = DispatchGroup()
        for thread in 0..<8 {
            group.enter()
            Thread.detachNewThread {
                for step in 0..<2_000 {
                    let key = keys[(thread + step) % keys.count]
                    defaults.set(thread * 10_000 + step, forKey: key)
                    _ = defaults.integer(forKey: key)
                    if step % 50 == 0 {
                        let transient = defaults.observe(key) { _ in _ = defaults.string(forKey: key) }
                        defaults.set("t\(thread)", forKey: "scratch-\(thread)")
                        transient.cancel()
                    }
                }
                group.leave()
            }
        }
        #expect(await wait(for: group, within: 120))
        // Once writes stop, every observer's last value is the current value.
        for key in keys {
            #expect(lastSeen.withLock { $0[key] } == .some(defaults.propertyList(forKey: key)))
        }
        stable.forEach { $0.cancel() }
    }
}
