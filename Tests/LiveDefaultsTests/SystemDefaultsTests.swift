import Foundation
import LiveDefaultsPropertyList
import LiveDefaultsTestHelpers
import TestSupport
import Testing

@testable import LiveDefaults

@Suite struct SystemDefaultsTests {
    @Test func aSystemFileIsFollowedLiveWithOldAndNewValues() async throws {
        let world = try AdministeredWorld()
        let defaults = try world.defaults()
        defaults.register(defaults: ["theme": "registered"])
        let log = ChangeLog(defaults)

        // Created after the suite was opened, in a directory that was there.
        try world.put(["theme": "site"], in: world.system[1])
        #expect(await eventually { defaults.string(forKey: "theme") == "site" })
        try world.put(["theme": "site 1"], in: world.system[0])
        #expect(await eventually { defaults.string(forKey: "theme") == "site 1" })
        try world.put(["theme": "site 2"], in: world.system[0])
        #expect(await eventually { defaults.string(forKey: "theme") == "site 2" })
        try world.remove(in: world.system[0])
        #expect(await eventually { defaults.string(forKey: "theme") == "site" })
        // The observer is called after a read can see the change: wait for the log's last entry too.
        #expect(await eventually { log.of("theme").last?.oldValue == "site 2" })
        #expect(
            log.of("theme").map { [$0.oldValue, $0.newValue] } == [
                ["registered", "site"], ["site", "site 1"], ["site 1", "site 2"], ["site 2", "site"],
            ])
        #expect(log.of("theme").allSatisfy { $0.origin == .external })
        #expect(!defaults.objectIsForced(forKey: "theme"))
    }

    /// An `XDG_CONFIG_DIRS` directory that does not exist when the suite is opened, made later.
    @Test func aSystemDirectoryMadeAfterOpeningIsFollowedLive() async throws {
        let world = try AdministeredWorld()
        try FileManager.default.removeItem(at: world.system[1])
        let defaults = try world.defaults()
        defaults.register(defaults: ["theme": "registered"])
        let log = ChangeLog(defaults)
        try FileManager.default.createDirectory(at: world.system[1], withIntermediateDirectories: true)
        try world.put(["theme": "site"], in: world.system[1])
        #expect(await eventually { defaults.string(forKey: "theme") == "site" })
        #expect(await eventually { log.of("theme").map(\.newValue) == ["site"] })
    }

    @Test func theUsersValueWinsAndIsWrittenToTheUsersFileOnly() throws {
        let world = try AdministeredWorld()
        try world.put(["theme": "site", "fontSize": 12], in: world.system[0])
        let systemFile = world.system[0].appendingPathComponent("com.example.admin.plist")
        let before = try Data(contentsOf: systemFile)
        let defaults = try world.defaults(watching: false)
        #expect(defaults.string(forKey: "theme") == "site")
        defaults.set("mine", forKey: "theme")
        #expect(defaults.string(forKey: "theme") == "mine")
        #expect(defaults.persistentValues() == ["theme": "mine"])
        try defaults.synchronize()
        #expect(try Data(contentsOf: systemFile) == before)
        defaults.removeObject(forKey: "theme")
        #expect(defaults.string(forKey: "theme") == "site")
        #expect(defaults.integer(forKey: "fontSize") == 12)
    }

    /// The user's file keeps its format and only the user's own keys: Foundation reads it as before
    /// and writes it back, and both see each other's values.
    @Test func foundationReadsAndWritesTheUsersFileAsBefore() async throws {
        let world = try AdministeredWorld()
        try world.put(["theme": "managed"], in: world.managed)
        try world.put(["fontSize": 12], in: world.system[0])
        let file = world.user.appendingPathComponent("com.example.admin.plist")
        let xml = try PropertyListSerialization.data(
            fromPropertyList: ["greeting": "hello"], format: .xml, options: 0)
        try xml.write(to: file)
        do {
            // Closed before Foundation writes: a second instance opens the file again.
            let defaults = try world.defaults(watching: false)
            defaults.set("mine", forKey: "theme")
            defaults.set(3, forKey: "count")
            try defaults.synchronize()
        }

        var format = PropertyListSerialization.PropertyListFormat.binary
        let read = try PropertyListSerialization.propertyList(from: Data(contentsOf: file), format: &format)
        #expect(format == .xml)
        let values = try #require(read as? [String: Any])
        #expect(Set(values.keys) == ["greeting", "theme", "count"])
        #expect(values["theme"] as? String == "mine")

        var written = values
        written["fromFoundation"] = true
        try PropertyListSerialization.data(fromPropertyList: written, format: .xml, options: 0).write(to: file)
        // The first store is gone once its last user is: the background flush its sets armed holds
        // it while it runs, and a store still open would be shared, with the values from before
        // Foundation's write (it does not watch the file).
        let location = try SuiteLocation(suiteName: "com.example.admin", directory: world.user.path)
        #expect(await eventually { !SuiteStore.isRegistered(location) })
        let again = try world.defaults(watching: false)
        #expect(again.bool(forKey: "fromFoundation"))
        #expect(again.string(forKey: "theme") == "managed")
        #expect(again.integer(forKey: "fontSize") == 12)
    }
}

@Suite struct AdministeredSettingsEnvironmentTests {
    @Test(arguments: [
        ([:], ["/etc/xdg"], "/etc/livedefaults/managed"),
        (["XDG_CONFIG_DIRS": ""], ["/etc/xdg"], "/etc/livedefaults/managed"),
        (["XDG_CONFIG_DIRS": "relative:also/relative"], ["/etc/xdg"], "/etc/livedefaults/managed"),
        (
            ["XDG_CONFIG_DIRS": "/opt/site/xdg:relative::/etc/xdg"], ["/opt/site/xdg", "/etc/xdg"],
            "/etc/livedefaults/managed"
        ),
        (["LIVEDEFAULTS_MANAGED_DIR": "/opt/site/managed"], ["/etc/xdg"], "/opt/site/managed"),
        (["LIVEDEFAULTS_MANAGED_DIR": "managed"], ["/etc/xdg"], "/etc/livedefaults/managed"),
    ])
    func theEnvironmentNamesTheDirectoriesTheEarlierOneWinningFirst(
        _ environment: [String: String], systemDirectories: [String], managedDirectory: String
    ) {
        let settings = AdministeredSettings.fromEnvironment(environment)
        #expect(settings.systemDirectories.map(\.path) == systemDirectories, "\(environment)")
        #expect(settings.managedDirectory?.path == managedDirectory, "\(environment)")
        #expect(settings.trustedOwner == 0)
    }

    /// The process's settings carry their directories' paths, made once; a directory changed
    /// afterwards is searched by its own path, and the paths are not part of what the settings are.
    @Test func theSettingsPathsFollowAChangedDirectory() {
        var settings = AdministeredSettings.fromEnvironment()
        settings.systemDirectories = [URL(fileURLWithPath: "/tmp/site-xdg", isDirectory: true)]
        #expect(settings.paths.system == ["/tmp/site-xdg"])
        settings.managedDirectory = URL(fileURLWithPath: "/tmp/site-managed", isDirectory: true)
        #expect(settings.paths.managed == "/tmp/site-managed")

        let made = AdministeredSettings.fromEnvironment()
        let same = AdministeredSettings(
            systemDirectories: made.systemDirectories, managedDirectory: made.managedDirectory)
        #expect(made == same)
        #expect(made.hashValue == same.hashValue)
        #expect(made.paths.system == same.paths.system)
    }
}

/// Where the lock and journals of a suite file go (``SidecarPlacement``): the rule alone.
@Suite struct SidecarPlacementTests {
    private let environment = [
        "XDG_CONFIG_DIRS": "/opt/site/xdg:/etc/xdg/", "LIVEDEFAULTS_MANAGED_DIR": "/opt/site/managed",
    ]

    @Test func rootKeepsTheSidecarsOfAnAdministratorsFileUnderRun() {
        let placement = SidecarPlacement(environment: environment, isRoot: true)
        #expect(placement.base(forSuiteFile: "/etc/xdg/a.plist") == "/run/livedefaults/etc/xdg/a.plist")
        #expect(
            placement.base(forSuiteFile: "/opt/site/managed/a.plist") == "/run/livedefaults/opt/site/managed/a.plist")
        #expect(
            placement.base(forSuiteFile: "/etc/xdg/a.plist", target: "/srv/real/a.plist")
                == "/run/livedefaults/srv/real/a.plist", "a link's target, by the link's directory")
        #expect(placement.base(forSuiteFile: "/root/.config/a.plist") == "/root/.config/a.plist")
        #expect(placement.base(forSuiteFile: "/etc/xdg/sub/a.plist") == "/etc/xdg/sub/a.plist")
        #expect(
            SuiteFile.sidecar(of: placement.base(forSuiteFile: "/etc/xdg/a.plist"), prefix: "", suffix: ".lock")
                == "/run/livedefaults/etc/xdg/a.plist.lock")
    }

    @Test func anotherUserKeepsThemBesideTheFileUnlessGivenARuntimeDirectory() {
        #expect(
            SidecarPlacement(environment: environment, isRoot: false).base(forSuiteFile: "/etc/xdg/a.plist")
                == "/etc/xdg/a.plist")
        var overridden = environment
        overridden["LIVEDEFAULTS_RUNTIME_DIR"] = "/tmp/run/"
        #expect(
            SidecarPlacement(environment: overridden, isRoot: false).base(forSuiteFile: "/etc/xdg/a.plist")
                == "/tmp/run/etc/xdg/a.plist")
        overridden["LIVEDEFAULTS_RUNTIME_DIR"] = "relative"
        #expect(
            SidecarPlacement(environment: overridden, isRoot: false).base(forSuiteFile: "/etc/xdg/a.plist")
                == "/etc/xdg/a.plist")
    }
}
