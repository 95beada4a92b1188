import Foundation
import LiveDefaultsPropertyList
import Observation
import TestSupport
import Testing

@testable import LiveDefaults

extension Defaults.Keys {
    fileprivate static let hourTheme = Defaults.Key<Theme>("hourTheme", default: .system)
    fileprivate static let hourFontSize = Defaults.Key<Int>("hourFontSize", default: 14)
    fileprivate static let hourPort = Defaults.Key<Int>("hourPort", default: 8080)
    fileprivate static let hourProfile = Defaults.Key<Profile?>("hourProfile")
}

/// An app-state model as the README shows it: settings as properties.
private struct Preferences {
    @Setting<Theme> var theme: Theme
    init(_ defaults: Defaults) { _theme = Setting(.hourTheme, in: defaults) }
}

/// Main-actor state, as UI code has.
@MainActor private final class ServerConfig {
    var port = 0
    var seen: [Int] = []
}

/// `eventually` for a condition on main-actor state, checked on the main actor.
@MainActor private func eventuallyOnMainActor(within seconds: Double = 30, _ condition: () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while !condition() {
        guard Date() < deadline else { return false }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return true
}

/// Arms `withObservationTracking` on `read` and returns a flag `onChange` sets.
private func armed(_ read: @escaping () -> Void) -> Locked<Bool> {
    let fired = Locked(false)
    withObservationTracking {
        read()
    } onChange: {
        fired.withLock { $0 = true }
    }
    return fired
}

/// Observing settings through typed keys: Swift Observation of `Setting` and `ObservableSetting`, typed
/// changes, main-actor observers, and decoding failures reported once.
@Suite struct TypedKeyObservationTests {
    @Test func swiftObservationFiresForSettingProjectedValueAndInlineObservable() async throws {
        let directory = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: "com.example.hour", directory: directory.url)
        let prefs = Preferences(defaults)
        #expect(prefs.$theme === prefs.$theme, "one observable per key per Defaults")

        // Local changes.
        var onSetting = armed { _ = prefs.theme }
        var onProjected = armed { _ = prefs.$theme.value }
        var onInline = armed { _ = defaults.observable(.hourFontSize).value }
        defaults[.hourTheme] = .light
        defaults[.hourFontSize] = 20
        #expect(await eventually { onSetting.withLock { $0 } })
        #expect(await eventually { onProjected.withLock { $0 } })
        #expect(await eventually { onInline.withLock { $0 } })
        #expect(prefs.theme == .light && prefs.$theme.value == .light)
        #expect(defaults.observable(.hourFontSize).value == 20)

        // Changes from outside the process: the file is replaced as another program would.
        onSetting = armed { _ = prefs.theme }
        onProjected = armed { _ = prefs.$theme.value }
        onInline = armed { _ = defaults.observable(.hourFontSize).value }
        try defaults.synchronize()
        let replaced = try PropertyListCodec.encode(
            .dictionary(["hourTheme": .string("dark"), "hourFontSize": .integer(30)]), format: .xml)
        try replaced.write(to: try #require(defaults.fileURL), options: .atomic)
        #expect(await eventually { onSetting.withLock { $0 } })
        #expect(await eventually { onProjected.withLock { $0 } })
        #expect(await eventually { onInline.withLock { $0 } })
        #expect(await eventually { prefs.$theme.value == .dark && defaults.observable(.hourFontSize).value == 30 })
        #expect(prefs.theme == .dark)
    }

    @Test func aRenderLoopReArmsAndDrawsTheNewValue() async throws {
        let directory = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: "com.example.render", directory: directory.url, watchesFiles: false)
        let drawn = Locked<[Theme]>([])
        let seenInOnChange = Locked<[Theme]>([])
        let queue = DispatchQueue(label: "render")
        // The README's render loop: draw, and on a change schedule the next draw, which re-arms.
        @Sendable func render() {
            withObservationTracking {
                drawn.withLock { $0.append(defaults.observable(.hourTheme).value) }
            } onChange: {
                seenInOnChange.withLock { $0.append(defaults.observable(.hourTheme).value) }
                queue.async { render() }
            }
        }
        queue.sync { render() }
        defaults[.hourTheme] = .light
        #expect(await eventually { drawn.withLock { $0 } == [.system, .light] })
        defaults[.hourTheme] = .dark
        #expect(await eventually { drawn.withLock { $0 } == [.system, .light, .dark] })
        #expect(seenInOnChange.withLock { $0 } == [.light, .dark], "the store has changed when onChange runs")
    }

    @Test func observablesOfUnusedKeysCostNothingAndDoNotKeepTheDefaultsAlive() async throws {
        let directory = try TemporaryDirectory()
        weak var released: Defaults?
        let observable: ObservableSetting<Int>
        do {
            let defaults = try Defaults(suiteName: "com.example.cost", directory: directory.url, watchesFiles: false)
            #expect(!defaults.state.withLock { $0.observers.hasObservers(of: HashedKey("hourFontSize")) })
            observable = defaults.observable(.hourFontSize)
            #expect(defaults.state.withLock { $0.observers.hasObservers(of: HashedKey("hourFontSize")) })
            #expect(!defaults.state.withLock { $0.observers.hasObservers(of: HashedKey("hourPort")) })
            released = defaults
        }
        #expect(released != nil, "an observable keeps its Defaults")
        observable.value = 3
        #expect(observable.value == 3)
        _ = consume observable
        // The change notification the set scheduled 5 ms later holds the instance while it posts:
        // a test thread held off the CPU that long could check just then.
        #expect(await eventually { released == nil }, "and nothing keeps them both alive once dropped")
    }

    @Test func typedChangesHaveTheKeysOwnType() async throws {
        let directory = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: "com.example.typed", directory: directory.url, watchesFiles: false)
        let ports = Locked<[Int]>([])
        let names = Locked<[String?]>([])
        let first = defaults.observe(.hourPort, options: .initial) { change in
            let port: Int = change.newValue  // not Int?: the default stands in for absence
            ports.withLock { $0.append(port) }
        }
        let second = defaults.observe(.hourProfile) { change in
            names.withLock { $0.append(change.newValue?.name) }  // one level of Optional
        }
        defaults[.hourPort] = 9000
        defaults.reset(.hourPort)
        defaults[.hourProfile] = Profile(name: "Anna", age: 30, tags: [])
        defaults[.hourProfile] = nil
        #expect(ports.withLock { $0 } == [8080, 9000, 8080])
        #expect(names.withLock { $0 } == ["Anna", nil])
        let byName = Locked<[PropertyListValue?]>([])
        let third = defaults.observe("hourPort") { change in byName.withLock { $0.append(change.newValue) } }
        defaults[.hourPort] = 1
        defaults.reset(.hourPort)
        #expect(byName.withLock { $0 } == [.integer(1), nil], "by name, nil means no value")
        _ = (first, second, third)
    }

    @Test @MainActor func mainActorObserverChangesMainActorState() async throws {
        let directory = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: "com.example.main", directory: directory.url, watchesFiles: false)
        let config = ServerConfig()
        let token = defaults.observe(.hourPort) { @MainActor change in
            config.port = change.newValue
            config.seen.append(change.newValue)
        }
        defaults[.hourPort] = 1
        defaults[.hourPort] = 2
        defaults[.hourPort] = 3
        // A generous deadline: under the thread sanitizer, with suites running in parallel, the main
        // actor can be kept busy for seconds.
        #expect(await eventuallyOnMainActor { config.seen.count >= 3 })
        #expect(config.seen == [1, 2, 3], "on the main actor, in order")
        #expect(config.port == 3)
        // A live observer on the main actor too is the barrier: changes reach the main queue in the
        // order they were made, so once it has seen the change after 4, anything for 4 has run.
        let barrier = ServerConfig()
        let live = defaults.observe(.hourPort) { @MainActor change in barrier.seen.append(change.newValue) }
        token.cancel()
        defaults[.hourPort] = 4
        defaults[.hourPort] = 5
        #expect(await eventuallyOnMainActor { barrier.seen == [4, 5] }, "\(barrier.seen)")
        #expect(config.seen == [1, 2, 3], "nothing after cancel()")
        live.cancel()
        try defaults.synchronize()  // (written before the directory goes)
    }

    @Test func decodingFailuresAreReportedOnceWhenFirstSeenObservedOrNot() throws {
        let directory = try TemporaryDirectory()
        let suite = "com.example.decoding-once"
        let defaults = try Defaults(suiteName: suite, directory: directory.url, watchesFiles: false)
        let reported = Locked<[String]>([])
        let reporting = DefaultsErrorReporting.listen { error in
            if error.code == .decodingFailed, error.suite == suite { reported.withLock { $0.append(error.message) } }
        }
        defer { reporting.cancel() }

        // Not observed: the first read reports, later reads do not.
        defaults.set("purple", forKey: "hourTheme")
        #expect(defaults[.hourTheme] == .system)
        #expect(defaults[.hourTheme] == .system)
        #expect(reported.withLock { $0.count } == 1)

        // Observed: a new bad value is reported once; fixing it reports nothing more.
        let token = defaults.observe(.hourTheme) { _ in }
        defaults.set("mauve", forKey: "hourTheme")
        _ = defaults[.hourTheme]
        #expect(reported.withLock { $0.count } == 2)
        #expect(reported.withLock { $0.last?.contains("mauve") } == true)
        defaults[.hourTheme] = .dark
        defaults[.hourTheme] = .light
        #expect(
            reported.withLock { $0.count } == 2, "the old bad value is not reported again: \(reported.withLock { $0 })")
        token.cancel()
    }
}
