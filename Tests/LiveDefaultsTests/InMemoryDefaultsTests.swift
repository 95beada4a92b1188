import Foundation
import TestSupport
import Testing

@testable import LiveDefaults

extension Defaults.Keys {
    fileprivate static let inMemoryVolume = Defaults.Key<Int>("inMemory.volume", default: 5)
    fileprivate static let inMemoryNickname = Defaults.Key<String?>("inMemory.nickname")
}

/// `Defaults.inMemory(suiteName:)`: the same search list, observation and typed keys as a suite on
/// disk, with no file and no watcher.
@Suite struct InMemoryDefaultsTests {
    @Test func readsAndWritesWithoutFiles() throws {
        let defaults = try Defaults.inMemory(suiteName: "com.example.tests")
        #expect(defaults.suiteName == "com.example.tests")
        defaults.set(true, forKey: "flag")
        defaults.set("hello", forKey: "greeting")
        try defaults.synchronize()
        #expect(defaults.bool(forKey: "flag"))
        #expect(defaults.string(forKey: "greeting") == "hello")
        #expect(defaults.persistentValues() == ["flag": true, "greeting": "hello"])
        #expect(defaults.lastError == nil)
        defaults.removeObject(forKey: "flag")
        #expect(defaults.propertyList(forKey: "flag") == nil)
        let directory = try #require(defaults.directory)
        #expect(!FileManager.default.fileExists(atPath: directory), "no file or directory is made")
        #expect(!defaults.watchesFiles)
        #expect(!SuiteStore.isRegistered(try SuiteLocation(suiteName: "com.example.tests", directory: directory)))
    }

    @Test func eachWorldIsItsOwn() throws {
        let first = try Defaults.inMemory()
        let second = try Defaults.inMemory()
        first.set(1, forKey: "k")
        try first.addSuite(named: "shared")
        #expect(second.propertyList(forKey: "k") == nil)
        // Nor do they touch the suites on disk of the same name.
        let directory = try TemporaryDirectory()
        let onDisk = try Defaults(suiteName: "InMemory", directory: directory.url, watchesFiles: false)
        #expect(onDisk.propertyList(forKey: "k") == nil)
    }

    @Test func searchesTheSameListAsASuiteOnDisk() throws {
        let defaults = try Defaults.inMemory(suiteName: "app")
        defaults.register(defaults: ["theme": "system", "size": 12, "accent": "blue"])
        #expect(defaults.string(forKey: "theme") == "system")

        // The global domain and added suites live in the same world.
        try defaults.setPersistentDomain(["size": 14, "accent": "green"], forName: Defaults.globalDomain)
        try defaults.setPersistentDomain(["accent": "red"], forName: "shared")
        try defaults.addSuite(named: "shared")
        #expect(defaults.integer(forKey: "size") == 14)
        #expect(defaults.string(forKey: "accent") == "red")

        defaults.set("dark", forKey: "theme")
        defaults.setVolatileDomain(["theme": "contrast"], forName: "preview")
        #expect(defaults.string(forKey: "theme") == "contrast")
        defaults.removeVolatileDomain(forName: "preview")
        #expect(defaults.string(forKey: "theme") == "dark")
        #expect(defaults.persistentDomain(forName: "shared")?["accent"] as? String == "red")

        defaults.removeSuite(named: "shared")
        #expect(defaults.string(forKey: "accent") == "green")
    }

    @Test func anInMemoryStoreHasNoFile() throws {
        let defaults = try Defaults.inMemory(suiteName: "com.example.nofile")
        defaults.set(1, forKey: "k")
        try defaults.synchronize()
        #expect(defaults.fileURL == nil)
    }

    @Test func observersSeeEveryChangeWithItsValues() async throws {
        let defaults = try Defaults.inMemory()
        let seen = Locked<[DefaultsChange<PropertyListValue?>]>([])
        let token = defaults.observe("k") { change in seen.withLock { $0.append(change) } }
        defaults.register(defaults: ["k": 0])
        defaults.set(1, forKey: "k")
        defaults.set(2, forKey: "k")
        defaults.removeObject(forKey: "k")
        #expect(await eventually { seen.withLock { $0.count } == 4 })
        let changes = seen.withLock { $0 }
        #expect(changes.map(\.oldValue) == [nil, 0, 1, 2])
        #expect(changes.map(\.newValue) == [0, 1, 2, 0])
        #expect(changes.allSatisfy { $0.origin == .local })
        token.cancel()
    }

    @Test func typedKeysWork() async throws {
        let defaults = try Defaults.inMemory()
        #expect(defaults[.inMemoryVolume] == 5)
        let seen = Locked<[Int?]>([])
        let token = defaults.observe(.inMemoryVolume) { change in seen.withLock { $0.append(change.newValue) } }
        defaults[.inMemoryVolume] = 9
        defaults[.inMemoryNickname] = "Kim"
        #expect(defaults[.inMemoryVolume] == 9)
        #expect(defaults[.inMemoryNickname] == "Kim")
        defaults[.inMemoryNickname] = nil
        #expect(defaults[.inMemoryNickname] == nil)
        #expect(await eventually { seen.withLock { $0 } == [9] })
        token.cancel()
    }

    @Test func anInvalidSuiteNameThrowsAsOnDisk() {
        #expect(throws: DefaultsError.self) { try Defaults.inMemory(suiteName: "a/b") }
    }
}
