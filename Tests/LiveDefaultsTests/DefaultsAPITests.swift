import Foundation
import TestSupport
import Testing

@testable import LiveDefaults

enum Theme: String, Codable, Sendable {
    case system, light, dark
}

struct Profile: Codable, Equatable, Sendable {
    var name: String
    var age: Int
    var tags: [String]
}

extension Defaults.Keys {
    static let theme = Defaults.Key<Theme>("theme", default: .system)
    static let profile = Defaults.Key<Profile?>("profile")
    static let fontSize = Defaults.Key<Int>("fontSize", default: 12)
    static let nickname = Defaults.Key<String?>("nickname")
    static let recent = Defaults.Key<[String]>("recent", default: [])
    static let volume = Defaults.Key<Double>("volume", default: 0.5)
}

@Suite struct DefaultsAPITests {
    @Test func setAndGetEveryType() throws {
        let directory = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: "com.example.api", directory: directory.url, watchesFiles: false)
        let date = Date(timeIntervalSince1970: 1_700_000_000)
        defaults.set(true, forKey: "bool")
        defaults.set(42, forKey: "int")
        defaults.set(2.5, forKey: "double")
        defaults.set(Float(1.5), forKey: "float")
        defaults.set("hello", forKey: "string")
        defaults.set(Data([1, 2, 3]), forKey: "data")
        defaults.set(date, forKey: "date")
        defaults.set(["a", "b"], forKey: "strings")
        defaults.set(["k": 1], forKey: "dict")
        defaults.set(URL(fileURLWithPath: "/tmp/some file"), forKey: "fileURL")
        defaults.set(URL(string: "https://example.com/a?b=c")!, forKey: "webURL")

        #expect(defaults.bool(forKey: "bool"))
        #expect(defaults.integer(forKey: "int") == 42)
        #expect(defaults.double(forKey: "double") == 2.5)
        #expect(defaults.float(forKey: "float") == 1.5)
        #expect(defaults.string(forKey: "string") == "hello")
        #expect(defaults.data(forKey: "data") == Data([1, 2, 3]))
        #expect(defaults.object(forKey: "date") as? Date == date)
        #expect(defaults.stringArray(forKey: "strings") == ["a", "b"])
        #expect(defaults.array(forKey: "strings") as? [String] == ["a", "b"])
        #expect(defaults.dictionary(forKey: "dict") as? [String: Int] == ["k": 1])
        #expect(defaults.url(forKey: "fileURL") == URL(fileURLWithPath: "/tmp/some file"))
        #expect(defaults.string(forKey: "fileURL") == "/tmp/some file")
        #expect(defaults.url(forKey: "webURL") == URL(string: "https://example.com/a?b=c"))
        #expect(defaults.object(forKey: "missing") == nil)
        #expect(defaults.integer(forKey: "missing") == 0)
        #expect(!defaults.bool(forKey: "missing"))
    }

    @Test(arguments: [
        (PropertyListValue.string("12abc"), 12, true, 12.0),
        (.string("YES"), 0, true, 0),
        (.string("no"), 0, false, 0),
        (.string(" -3.75"), -3, true, -3.75),
        (.real(3.7), 3, true, 3.7),
        (.bool(true), 1, true, 1),
        (.integer(0), 0, false, 0),
    ])
    func conversionsMatchUserDefaults(stored: PropertyListValue, integer: Int, bool: Bool, double: Double) throws {
        let directory = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: "com.example.conversions", directory: directory.url, watchesFiles: false)
        defaults.set(stored, forKey: "value")
        #expect(defaults.integer(forKey: "value") == integer)
        #expect(defaults.bool(forKey: "value") == bool)
        #expect(defaults.double(forKey: "value") == double)
    }

    @Test func stringOfNumberIsItsText() throws {
        let directory = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: "com.example.text", directory: directory.url, watchesFiles: false)
        defaults.set(3.7, forKey: "real")
        defaults.set(7, forKey: "int")
        defaults.set(true, forKey: "bool")
        #expect(defaults.string(forKey: "real") == "3.7")
        #expect(defaults.string(forKey: "int") == "7")
        #expect(defaults.string(forKey: "bool") == "1")
    }

    @Test func dynamicSetRejectsWhatIsNotAPropertyList() throws {
        let directory = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: "com.example.dynamic", directory: directory.url, watchesFiles: false)
        defaults.set("kept", forKey: "key")
        struct NotAPlist {}
        let error = try #require(throws: DefaultsError.self) {
            try defaults.set(["ok": 1, "bad": NotAPlist()] as [String: Any], forKey: "key")
        }
        #expect(error.code == .notAPropertyList)
        #expect(error.message.contains("NotAPlist"))
        #expect(defaults.string(forKey: "key") == "kept")
        try defaults.set(["n": 1, "s": "x", "nested": [1, 2]] as [String: Any], forKey: "key")
        #expect(defaults.propertyList(forKey: "key") == ["n": 1, "s": "x", "nested": [1, 2]])
        try defaults.set(nil as Any?, forKey: "key")
        #expect(defaults.object(forKey: "key") == nil)
    }

    @Test func registeredDefaultsShowThroughUntilSetAndAfterRemoval() throws {
        let directory = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: "com.example.register", directory: directory.url, watchesFiles: false)
        defaults.register(defaults: ["theme": "system", "fontSize": 14])
        #expect(defaults.string(forKey: "theme") == "system")
        #expect(defaults.integer(forKey: "fontSize") == 14)
        defaults.set("dark", forKey: "theme")
        #expect(defaults.string(forKey: "theme") == "dark")
        defaults.removeObject(forKey: "theme")
        #expect(defaults.string(forKey: "theme") == "system")
        try defaults.synchronize()
        let written = try Data(contentsOf: directory.file("com.example.register.plist"))
        let onDisk = try PropertyListSerialization.propertyList(from: written, format: nil) as? [String: Any]
        #expect(onDisk?.isEmpty == true, "registered values are never written")
    }

    @Test func searchListPrecedence() throws {
        let directory = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: "com.example.search", directory: directory.url, watchesFiles: false)
        let global = try Defaults(suiteName: Defaults.globalDomain, directory: directory.url, watchesFiles: false)
        let added = try Defaults(suiteName: "com.example.added", directory: directory.url, watchesFiles: false)
        defaults.setVolatileDomain([:] as [String: PropertyListValue], forName: Defaults.argumentDomain)
        defaults.register(defaults: ["k": "registration"])
        #expect(defaults.string(forKey: "k") == "registration")
        global.set("global", forKey: "k")
        #expect(defaults.string(forKey: "k") == "global")
        added.set("added", forKey: "k")
        #expect(defaults.string(forKey: "k") == "global", "a suite counts only once added")
        try defaults.addSuite(named: "com.example.added")
        #expect(defaults.string(forKey: "k") == "added")
        defaults.set("suite", forKey: "k")
        #expect(defaults.string(forKey: "k") == "suite")
        defaults.setVolatileDomain(["k": "volatile"], forName: "temporary")
        #expect(defaults.string(forKey: "k") == "volatile")
        defaults.setVolatileDomain(["k": "argument"], forName: Defaults.argumentDomain)
        #expect(defaults.string(forKey: "k") == "argument")

        // And back down, one layer at a time.
        defaults.removeVolatileDomain(forName: Defaults.argumentDomain)
        #expect(defaults.string(forKey: "k") == "volatile")
        defaults.removeVolatileDomain(forName: "temporary")
        #expect(defaults.string(forKey: "k") == "suite")
        defaults.removeObject(forKey: "k")
        #expect(defaults.string(forKey: "k") == "added")
        defaults.removeSuite(named: "com.example.added")
        #expect(defaults.string(forKey: "k") == "global")
        global.removeObject(forKey: "k")
        #expect(defaults.string(forKey: "k") == "registration")
        #expect(defaults.dictionaryRepresentation()["k"] as? String == "registration")
    }

    @Test func argumentDomainParsesPropertyListText() {
        let parsed = ArgumentDomain.parse([
            "-fontSize", "14", "--long", "x", "-names", "(a, b)", "plain", "-flag", "YES",
        ])
        #expect(parsed["fontSize"] == "14")
        #expect(parsed["flag"] == "YES")
        #expect(parsed["long"] == nil && parsed["-long"] == nil)
        #expect(parsed["names"] == ["a", "b"] || parsed["names"] == "(a, b)")
    }

    @Test func volatileDomains() throws {
        let directory = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: "com.example.volatile", directory: directory.url, watchesFiles: false)
        try defaults.setVolatileDomain(["a": 1] as [String: Any], forName: "session")
        #expect(defaults.volatileDomainNames.contains("session"))
        #expect(defaults.volatileDomain(forName: "session")?["a"] as? Int == 1)
        #expect(defaults.integer(forKey: "a") == 1)
        defaults.removeVolatileDomain(forName: "session")
        #expect(defaults.volatileDomain(forName: "session") == nil)
        #expect(defaults.object(forKey: "a") == nil)
        try defaults.synchronize()
        #expect(!FileManager.default.fileExists(atPath: directory.file("com.example.volatile.plist").path))
    }

    @Test func persistentDomains() throws {
        let directory = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: "com.example.persistent", directory: directory.url, watchesFiles: false)
        try defaults.setPersistentDomain(["x": "1", "y": 2], forName: "com.example.other")
        #expect(defaults.persistentDomain(forName: "com.example.other")?["y"] as? Int == 2)
        try defaults.synchronize()
        let other = try Defaults(suiteName: "com.example.other", directory: directory.url, watchesFiles: false)
        #expect(other.string(forKey: "x") == "1")
        defaults.removePersistentDomain(forName: "com.example.other")
        #expect(defaults.persistentDomain(forName: "com.example.other") == nil)
        #expect(other.object(forKey: "x") == nil)
        try other.synchronize()
        #expect(!FileManager.default.fileExists(atPath: directory.file("com.example.other.plist").path))

        try defaults.setPersistentDomain(["own": true], forName: "com.example.persistent")
        #expect(defaults.bool(forKey: "own"))
        #expect(defaults.persistentValues() == ["own": true])
    }

    @Test func typedKeys() throws {
        let directory = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: "com.example.typed", directory: directory.url, watchesFiles: false)
        #expect(defaults[.theme] == .system)
        #expect(defaults[.profile] == nil)
        #expect(defaults[.fontSize] == 12)
        defaults[.theme] = .dark
        defaults[.fontSize] = 16
        defaults[.nickname] = "ann"
        defaults[.recent] = ["a", "b"]
        let profile = Profile(name: "Anna", age: 30, tags: ["x"])
        defaults[.profile] = profile
        #expect(defaults[.theme] == .dark)
        #expect(defaults.string(forKey: "theme") == "dark", "RawRepresentable is stored as its raw value")
        #expect(defaults[.fontSize] == 16)
        #expect(defaults[.nickname] == "ann")
        #expect(defaults[.recent] == ["a", "b"])
        #expect(defaults[.profile] == profile)
        #expect(
            defaults.propertyList(forKey: "profile") == ["name": "Anna", "age": 30, "tags": ["x"]],
            "Codable is stored as a property-list structure, not opaque data")
        defaults[.nickname] = nil
        #expect(defaults.object(forKey: "nickname") == nil)
        defaults[.profile] = nil
        #expect(defaults[.profile] == nil)
    }

    @Test func undecodableValueReadsAsDefaultAndIsReportable() throws {
        let directory = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: "com.example.undecodable", directory: directory.url, watchesFiles: false)
        defaults.set("purple", forKey: "theme")
        defaults.set("not a number", forKey: "fontSize")
        defaults.set(["name": 5], forKey: "profile")
        #expect(defaults[.theme] == .system)
        #expect(defaults[.fontSize] == 12)
        #expect(defaults[.profile] == nil)
        #expect(defaults.decodingError(for: .theme)?.code == .decodingFailed)
        #expect(defaults.decodingError(for: .profile)?.message.contains("profile") == true)
        defaults[.theme] = .light
        #expect(defaults.decodingError(for: .theme) == nil)
    }

    @Test func argumentStringsReadAsNumbersThroughTypedKeys() throws {
        let directory = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: "com.example.arguments", directory: directory.url, watchesFiles: false)
        defaults.setVolatileDomain(
            ArgumentDomain.parse(["-fontSize", "18", "-volume", "0.25"]), forName: Defaults.argumentDomain)
        #expect(defaults[.fontSize] == 18)
        #expect(defaults[.volume] == 0.25)
        #expect(defaults.integer(forKey: "fontSize") == 18)
    }

    @Test func fileURLSaysWhereTheSuiteIs() throws {
        let directory = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: "com.example.where", directory: directory.url, watchesFiles: false)
        #expect(defaults.fileURL?.path == directory.file("com.example.where.plist").path)
    }
}
