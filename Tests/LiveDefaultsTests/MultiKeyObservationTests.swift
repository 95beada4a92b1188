import Foundation
import TestSupport
import Testing

@testable import LiveDefaults

private enum Shade: String, Sendable { case system, dark, light }

extension Defaults.Keys {
    fileprivate static let multiTheme = Defaults.Key<Shade>("multiTheme", default: .system)
    fileprivate static let multiFontSize = Defaults.Key<Int>("multiFontSize", default: 14)
}

/// One token, or one sequence, for several typed keys of different value types.
@Suite struct MultiKeyObservationTests {
    @Test func oneTokenDeliversEachKeysChangesTypedAndInOrder() throws {
        let directory = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: "com.example.multi", directory: directory.url, watchesFiles: false)
        let seen = Locked<[String]>([])
        let token = defaults.observe([.multiTheme, .multiFontSize]) { change in
            if let theme = change.newValue(of: .multiTheme) {
                seen.withLock { $0.append("theme \(change.oldValue(of: .multiTheme)!.rawValue)→\(theme.rawValue)") }
            }
            if let size = change.newValue(of: .multiFontSize) {
                seen.withLock { $0.append("size \(change.oldValue(of: .multiFontSize)!)→\(size)") }
            }
        }
        defaults[.multiTheme] = .dark
        defaults[.multiFontSize] = 18
        defaults.set("unrelated", forKey: "other")
        defaults[.multiTheme] = .light
        defaults.reset(.multiFontSize)
        #expect(seen.withLock { $0 } == ["theme system→dark", "size 14→18", "theme dark→light", "size 18→14"])
        token.cancel()
        defaults[.multiTheme] = .dark
        #expect(seen.withLock { $0.count } == 4)
    }

    @Test func initialCallsOncePerKeyAndSaysWhichKey() throws {
        let directory = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: "com.example.multi2", directory: directory.url, watchesFiles: false)
        defaults[.multiFontSize] = 20
        let keys = Locked<[String]>([])
        let token = defaults.observe([.multiTheme, .multiFontSize], options: [.initial]) { change in
            #expect(change.isInitial)
            #expect(change.oldValue(of: .multiFontSize) == nil)
            keys.withLock { $0.append(change.key.name) }
            if change.isChange(of: .multiFontSize) { #expect(change.newValue(of: .multiFontSize) == 20) }
            #expect(change.newValue(of: .multiTheme) == (change.isChange(of: .multiTheme) ? .system : nil))
        }
        #expect(keys.withLock { $0 } == ["multiTheme", "multiFontSize"])
        token.cancel()
    }

    @Test func asyncSequenceOfSeveralKeys() async throws {
        let directory = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: "com.example.multi3", directory: directory.url, watchesFiles: false)
        let stream = defaults.changes(of: .multiTheme, .multiFontSize)
        defaults[.multiFontSize] = 9
        defaults[.multiTheme] = .light
        var iterator = stream.makeAsyncIterator()
        let first = try #require(await iterator.next())
        let second = try #require(await iterator.next())
        #expect(first.newValue(of: .multiFontSize) == 9)
        #expect(second.newValue(of: .multiTheme) == .light)
        #expect(second.newValue(of: .multiFontSize) == nil)
    }
}

/// A typed key's default and the untyped readers.
@Suite struct KeyDefaultRegistrationTests {
    @Test func aKeysDefaultIsSeenByUntypedReadsOnlyOnceRegistered() throws {
        let directory = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: "com.example.keydefaults", directory: directory.url, watchesFiles: false)
        #expect(defaults[.multiFontSize] == 14)
        #expect(defaults.object(forKey: "multiFontSize") == nil)
        #expect(defaults.integer(forKey: "multiFontSize") == 0)
        try defaults.register(.multiFontSize, .multiTheme)
        #expect(defaults.integer(forKey: "multiFontSize") == 14)
        #expect(defaults.string(forKey: "multiTheme") == "system")
        #expect(defaults.volatileValues(forName: Defaults.registrationDomain)?["multiTheme"] == "system")
        // Registered, not stored: nothing is written.
        #expect(defaults.persistentValues().isEmpty)
        // A registration under the name is a stored value to typed reads, and wins over the key's default.
        defaults.register(defaults: ["multiFontSize": 8000])
        #expect(defaults[.multiFontSize] == 8000)
    }
}
