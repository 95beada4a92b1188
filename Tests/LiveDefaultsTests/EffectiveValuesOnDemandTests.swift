import Foundation
import LiveDefaultsTestHelpers
import TestSupport
import Testing

@testable import LiveDefaults

/// A `Defaults` makes its effective values' table only when it needs it (docs/design.md, "Opening a
/// suite: the effective values made on demand"): reads before then give what the search list gives,
/// and a write, an observer or enough reads make it.
@Suite struct EffectiveValuesOnDemandTests {
    private func isTableMade(_ defaults: Defaults) -> Bool {
        defaults.state.withLock { $0.effective.isTableMade }
    }

    /// A suite file of `values`, written as another program would, in a new directory.
    private func suiteFile(_ values: [String: Any], named suite: String) throws -> TemporaryDirectory {
        let directory = try TemporaryDirectory()
        let data = try PropertyListSerialization.data(fromPropertyList: values, format: .xml, options: 0)
        try data.write(to: directory.url.appendingPathComponent(suite + ".plist"))
        return directory
    }

    @Test func readsBeforeTheTableFollowTheSearchListThenEnoughReadsMakeIt() throws {
        let directory = try suiteFile(["theme": "dark", "size": 12], named: "com.example.ondemand")
        // A second layer: the global domain, under the suite.
        let global = try PropertyListSerialization.data(
            fromPropertyList: ["theme": "light", "welcome": true], format: .binary, options: 0)
        try global.write(to: directory.url.appendingPathComponent(Defaults.globalDomain + ".plist"))
        let defaults = try Defaults(suiteName: "com.example.ondemand", directory: directory.url, watchesFiles: false)
        #expect(!isTableMade(defaults))
        #expect(defaults.string(forKey: "theme") == "dark")
        #expect(defaults.integer(forKey: "size") == 12)
        #expect(defaults.bool(forKey: "welcome"))
        #expect(defaults.object(forKey: "missing") == nil)
        // The argument domain may hold keys of the test process's own arguments: only these are checked.
        let all = defaults.dictionaryRepresentation()
        #expect(all["theme"] as? String == "dark" && all["size"] as? Int == 12 && all["welcome"] as? Bool == true)
        #expect(all["missing"] == nil)
        #expect(!isTableMade(defaults))
        for _ in 0..<16 { _ = defaults.string(forKey: "theme") }
        #expect(isTableMade(defaults))
        #expect(defaults.string(forKey: "theme") == "dark")
        #expect(defaults.bool(forKey: "welcome"))
        // Registering is a change of the keys registered: it makes the table too.
        let registering = try Defaults(suiteName: "com.example.ondemand", directory: directory.url, watchesFiles: false)
        #expect(!isTableMade(registering))
        registering.register(defaults: ["fresh": 1])
        #expect(isTableMade(registering))
        #expect(registering.integer(forKey: "fresh") == 1 && registering.string(forKey: "theme") == "dark")
    }

    /// The first write and the first observer make the table, and see the values from before it.
    @Test func aWriteOrAnObserverMakesTheTableWithTheValuesBeforeIt() throws {
        let directory = try suiteFile(["count": 1, "name": "a"], named: "com.example.ondemand.write")
        let writer = try Defaults(
            suiteName: "com.example.ondemand.write", directory: directory.url, watchesFiles: false)
        #expect(!isTableMade(writer))
        let seen = Recorder<PropertyListValue?>()
        let everyKey = writer.observeAll { seen.record($0) }
        defer { everyKey.cancel() }
        writer.set(2, forKey: "count")
        #expect(isTableMade(writer))
        #expect(writer.integer(forKey: "count") == 2 && writer.string(forKey: "name") == "a")
        #expect(seen.all.map(\.key) == ["count"])
        #expect(seen.all.first?.oldValue == .integer(1) && seen.all.first?.newValue == .integer(2))

        let directory2 = try suiteFile(["flag": true], named: "com.example.ondemand.observed")
        let observed = try Defaults(
            suiteName: "com.example.ondemand.observed", directory: directory2.url, watchesFiles: false)
        #expect(!isTableMade(observed))
        let token = observed.observe("flag") { _ in }
        defer { token.cancel() }
        #expect(isTableMade(observed))
        #expect(observed.bool(forKey: "flag"))
    }
}
