import Foundation
import LiveDefaultsPropertyList
import Observation
import TestSupport
import Testing

@testable import LiveDefaults

// Written from a new user's side (issue 19): what a first program does with the README.

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

@Suite struct FirstHourTests {
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

    @Test func observablesOfUnusedKeysCostNothingAndDoNotKeepTheDefaultsAlive() throws {
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
        #expect(released == nil, "and nothing keeps them both alive once dropped")
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
        let deadline = Date().addingTimeInterval(30)
        while config.seen.count < 3, Date() < deadline { try await Task.sleep(for: .milliseconds(1)) }
        #expect(config.seen == [1, 2, 3], "on the main actor, in order")
        #expect(config.port == 3)
        token.cancel()
        defaults[.hourPort] = 4
        try await Task.sleep(for: .milliseconds(50))  // not a synchronisation: nothing may arrive
        #expect(config.seen == [1, 2, 3])
    }

    @Test func decodingFailuresAreReportedOnceWhenFirstSeenObservedOrNot() throws {
        let directory = try TemporaryDirectory()
        let suite = "com.example.decoding-once"
        let defaults = try Defaults(suiteName: suite, directory: directory.url, watchesFiles: false)
        let reported = Locked<[String]>([])
        DefaultsErrorReporting.setHandler { error in
            if error.code == .decodingFailed, error.suite == suite { reported.withLock { $0.append(error.message) } }
        }
        defer { DefaultsErrorReporting.setHandler(nil) }

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

    @Test func fileURLSaysWhereTheSuiteIs() throws {
        let directory = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: "com.example.where", directory: directory.url, watchesFiles: false)
        #expect(defaults.fileURL?.path == directory.file("com.example.where.plist").path)
    }
}

@Suite struct CorruptFileMessageTests {
    @Test func aBadFileAtLoadSaysNothingWasLoadedAndWhere() throws {
        let directory = try TemporaryDirectory()
        let xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0">
            <dict>
              <key>a</key><integer>1</integer>
              <key>b</key><integer>2
            </dict>
            </plist>
            """
        try Data(xml.utf8).write(to: directory.file("com.example.bad.plist"))
        let defaults = try Defaults(suiteName: "com.example.bad", directory: directory.url, watchesFiles: false)
        let message = try #require(defaults.lastError?.message)
        #expect(defaults.lastError?.code == .corruptFile)
        #expect(message.contains("line 6"), "\(message)")
        #expect(message.contains("were not loaded"), "\(message)")
    }

    @Test func aBadSaveFromOutsideSaysTheLastGoodValuesAreKeptAndTheOffset() async throws {
        let directory = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: "com.example.badsave", directory: directory.url)
        defaults.set(1, forKey: "a")
        try defaults.synchronize()
        var bytes = try Data(contentsOf: try #require(defaults.fileURL))
        bytes.removeLast(bytes.count / 2)  // a truncated binary file
        try bytes.write(to: try #require(defaults.fileURL), options: .atomic)
        #expect(await eventually { defaults.lastError?.code == .corruptFile })
        let message = defaults.lastError?.message ?? ""
        #expect(message.contains("byte offset"), "\(message)")
        #expect(message.contains("before are kept in use"), "\(message)")
        #expect(defaults.integer(forKey: "a") == 1)
    }
}

private struct Features: Codable, Equatable, Sendable {
    var betaAPI: Bool
    var rateLimit: Int
    var ratio: Double = 1
    var tags: [String] = []
    var since: Date?
}

extension Defaults.Keys {
    fileprivate static let hourFeatures = Defaults.Key<Features>(
        "hourFeatures", default: Features(betaAPI: false, rateLimit: 10))
}

@Suite struct CodableValuesTests {
    @Test func typedValuesInsideCodableReadAsAtTheTop() throws {
        let directory = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: "com.example.codable", directory: directory.url, watchesFiles: false)
        // What `defaults write … features '{ betaAPI = 1; rateLimit = 50; }'` stores: strings.
        defaults.set(
            .dictionary([
                "betaAPI": .string("1"), "rateLimit": .string("50"), "ratio": .string("0.5"),
                "tags": .array([.string("a")]),
            ]),
            forKey: "hourFeatures")
        #expect(defaults[.hourFeatures] == Features(betaAPI: true, rateLimit: 50, ratio: 0.5, tags: ["a"]))
        #expect(defaults.decodingError(for: .hourFeatures) == nil)
        defaults.set(.string("50"), forKey: "hourPort")
        #expect(defaults[.hourPort] == 50, "the same rule at the top")

        // What `-dict betaAPI -bool YES rateLimit -int 50` stores: typed values, read strictly.
        let since = Date(timeIntervalSince1970: 1_000_000)
        defaults.set(
            .dictionary([
                "betaAPI": .bool(true), "rateLimit": .integer(50), "ratio": .real(1), "tags": .array([]),
                "since": .date(since),
            ]),
            forKey: "hourFeatures")
        #expect(defaults[.hourFeatures] == Features(betaAPI: true, rateLimit: 50, since: since))

        // What neither rule reads: the default, and the reason.
        defaults.set(
            .dictionary(["betaAPI": .string("maybe"), "rateLimit": .integer(1), "ratio": .real(1), "tags": .array([])]),
            forKey: "hourFeatures")
        #expect(defaults[.hourFeatures] == Features(betaAPI: false, rateLimit: 10))
        #expect(defaults.decodingError(for: .hourFeatures)?.code == .decodingFailed)

        // Values written through the key round-trip unchanged.
        defaults[.hourFeatures] = Features(betaAPI: true, rateLimit: 7, tags: ["x", "y"], since: since)
        #expect(defaults[.hourFeatures] == Features(betaAPI: true, rateLimit: 7, tags: ["x", "y"], since: since))
    }
}
