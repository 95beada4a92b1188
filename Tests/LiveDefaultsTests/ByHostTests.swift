import Foundation
import LiveDefaultsPropertyList
import LiveDefaultsTestHelpers
import TestSupport
import Testing

@testable import LiveDefaults

@Suite struct ByHostTests {
    @Test func aHostInstanceWritesItsByHostFileAndTheFileForAnyHostShowsThrough() throws {
        let world = try AdministeredWorld()
        let machineID = world.root.file("machine-id")
        try "0123456789abcdef0123456789abcdef\n".write(to: machineID, atomically: true, encoding: .utf8)
        let host = Defaults.Host.current(machineIDFile: machineID)
        #expect(host.identifier == "0123456789abcdef0123456789abcdef")
        try world.put(["displayScale": 1.0, "theme": "any host"], in: world.user)
        let byHostFile = world.user.appendingPathComponent(
            "ByHost/com.example.admin.0123456789abcdef0123456789abcdef.plist")
        do {
            let thisMachine = try Defaults(
                suiteName: "com.example.admin", directory: world.user, watchesFiles: false, host: host,
                administeredSettings: world.settings)
            #expect(thisMachine.suiteName == "com.example.admin")
            #expect(thisMachine.string(forKey: "theme") == "any host")
            thisMachine.set(2.0, forKey: "displayScale")
            #expect(thisMachine.double(forKey: "displayScale") == 2.0)
            #expect(thisMachine.sources(forKey: "displayScale").map(\.layer) == [.currentHost, .suite])
            try thisMachine.synchronize()
        }
        let written = try PropertyListCodec.decode(Data(contentsOf: byHostFile)).value
        #expect(written == ["displayScale": 2.0])
        let anyHost = try PropertyListCodec.decode(
            Data(contentsOf: world.user.appendingPathComponent("com.example.admin.plist"))
        ).value
        #expect(anyHost == ["displayScale": 1.0, "theme": "any host"])

        let again = try Defaults(
            suiteName: "com.example.admin", directory: world.user, watchesFiles: false, host: host,
            administeredSettings: world.settings)
        #expect(again.double(forKey: "displayScale") == 2.0)
        let other = try Defaults(
            suiteName: "com.example.admin", directory: world.user, watchesFiles: false, host: .named("other"),
            administeredSettings: world.settings)
        #expect(other.double(forKey: "displayScale") == 1.0)
    }

    @Test func anInstanceOpenedByNameSearchesThisMachinesByHostFileBeforeTheSuite() async throws {
        let world = try AdministeredWorld()
        try FileManager.default.createDirectory(
            at: world.user.appendingPathComponent("ByHost"), withIntermediateDirectories: true)
        try world.put(["displayScale": 1.0], in: world.user)
        let defaults = try world.defaults()
        let log = ChangeLog(defaults)
        let thisMachine = try Defaults(
            suiteName: "com.example.admin", directory: world.user, host: .current, administeredSettings: world.settings)
        thisMachine.set(2.0, forKey: "displayScale")
        #expect(await eventually { defaults.double(forKey: "displayScale") == 2.0 })
        defaults.set(3.0, forKey: "displayScale")  // the suite's file: this machine's value hides it
        #expect(defaults.double(forKey: "displayScale") == 2.0)
        thisMachine.removeObject(forKey: "displayScale")
        #expect(await eventually { defaults.double(forKey: "displayScale") == 3.0 })
        // The observer is called after a read can see the change: wait for the log's last entry too.
        #expect(await eventually { log.of("displayScale").last?.newValue == 3.0 })
        #expect(log.of("displayScale").map(\.newValue) == [2.0, 3.0])
    }

    /// The ByHost directory made after the suite was opened by name (the first
    /// `defaults -currentHost write` makes it): this machine's file is searched from then on.
    @Test func aByHostDirectoryMadeAfterOpeningIsFollowedLive() async throws {
        let world = try AdministeredWorld()
        try world.put(["displayScale": 1.0], in: world.user)
        let defaults = try world.defaults()
        let thisMachine = try Defaults(
            suiteName: "com.example.admin", directory: world.user, host: .current, administeredSettings: world.settings)
        thisMachine.set(2.0, forKey: "displayScale")
        try thisMachine.synchronize()
        #expect(await eventually { defaults.double(forKey: "displayScale") == 2.0 })
        #expect(defaults.sources(forKey: "displayScale").map(\.layer) == [.currentHost, .suite])
    }

    @Test func aHostWhoseNameCannotNameAFileIsRefused() throws {
        let world = try AdministeredWorld()
        #expect(throws: DefaultsError.self) {
            try Defaults(suiteName: "com.example.admin", directory: world.user, host: .named("a/b"))
        }
    }
}
