import Foundation
import LiveDefaultsPropertyList
import TestSupport
import Testing

@testable import LiveDefaults

/// The two pieces of a rename during a rolling upgrade (the article "Describing your settings",
/// "Rolling upgrades"): the migration step that copies, and the mirror that follows the old name.
@Suite struct RollingUpgradeTests {
    @Test func copyKeepsTheOldKeyAndReplacesTheNewOne() {
        var step = DefaultsMigration(number: 1, values: ["maxConnections": 20, "connectionLimit": 5, "other": "x"])
        step.copy("maxConnections", to: "connectionLimit")
        #expect(step.values == ["maxConnections": 20, "connectionLimit": 20, "other": "x"])

        var absent = DefaultsMigration(number: 1, values: ["connectionLimit": 5])
        absent.copy("maxConnections", to: "connectionLimit")
        #expect(absent.values == ["connectionLimit": 5], "nothing to copy: the new key is left as it was")

        var same = DefaultsMigration(number: 1, values: ["maxConnections": 20])
        same.copy("maxConnections", to: "maxConnections")
        #expect(same.values == ["maxConnections": 20])
    }

    @Test func theMirrorCopiesAtOnceAndOnEveryChangeButNotARemoval() throws {
        let directory = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: "com.example.rolling", directory: directory.url, watchesFiles: false)
        defaults.set(20, forKey: "maxConnections")
        let mirror = defaults.mirror("maxConnections", to: "connectionLimit")
        #expect(defaults.persistentValues()["connectionLimit"] == 20, "copied at once")

        defaults.set(30, forKey: "maxConnections")
        #expect(defaults.persistentValues()["connectionLimit"] == 30)

        defaults.removeObject(forKey: "maxConnections")
        #expect(defaults.persistentValues()["connectionLimit"] == 30, "a removal of the old key is not copied")

        mirror.cancel()
        defaults.set(50, forKey: "maxConnections")
        #expect(defaults.persistentValues()["connectionLimit"] == 30, "no copy once the mirror is cancelled")
    }

    /// Only the suite's own value is copied: a system-wide default of the old name stays a default,
    /// not a value written into the suite.
    @Test func theMirrorCopiesTheSuitesValueOnlyNeverAnotherLayers() throws {
        let world = try AdministeredWorld()
        try world.put(["maxConnections": 50], in: world.system[0])
        let defaults = try world.defaults(watching: false)
        #expect(defaults.integer(forKey: "maxConnections") == 50)
        let mirror = defaults.mirror("maxConnections", to: "connectionLimit")
        #expect(defaults.persistentValues()["connectionLimit"] == nil)

        defaults.set(40, forKey: "maxConnections")
        #expect(defaults.persistentValues()["connectionLimit"] == 40)
        withExtendedLifetime(mirror) {}
    }
}
