import Foundation
import LiveDefaults
import LiveDefaultsTestHelpers
import TestSupport
import Testing

@testable import LiveDefaultsEtcd

/// A rename in a fleet suite while two versions run, as the article "Describing your settings"
/// ("Rolling upgrades") tells it: version 2 copies with `FleetSuite.migrate`, writes both names and
/// mirrors the old one, version 3 renames. Each version is a store of its own (a machine of its own, in this process).
@Suite(.requiresEtcd)
struct FleetRollingUpgradeTests {
    @Test func versionOneKeepsItsValueWhileVersionTwoRunsAndVersionThreeCarriesItsLastWriteOver() async throws {
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        let machineOne = try scenario.suite(variant: 1, sharesCache: false)
        let machineTwo = try scenario.suite(variant: 2, sharesCache: false)
        _ = try scenario.raw.commit(
            puts: [(EtcdMirror.etcdKey("maxConnections", prefix: machineOne.prefix), try EtcdMirror.encode(20))],
            deletes: [])

        // Version 1, running: reads and observes the old name.
        let versionOne = try Defaults.fleet(machineOne)
        #expect(await eventually { versionOne.integer(forKey: "maxConnections") == 20 })
        let seen = Locked<[PropertyListValue?]>([])
        let token = versionOne.observe("maxConnections") { change in seen.withLock { $0.append(change.newValue) } }
        defer { token.cancel() }

        // Version 2 starts on another machine: copies once for the fleet, reads the new name, writes both.
        let copied = try machineTwo.migrate(to: 1) { step in
            if step.number == 1 { step.copy("maxConnections", to: "connectionLimit") }
        }
        #expect(copied == [1])
        let versionTwo = try Defaults.fleet(machineTwo)
        #expect(await eventually { versionTwo.integer(forKey: "connectionLimit") == 20 })
        #expect(versionOne.integer(forKey: "maxConnections") == 20, "the copy kept the old name")
        // Opened as its own `Defaults`, the fleet suite can be mirrored as a file suite is.
        let mirror = versionTwo.mirror("maxConnections", to: "connectionLimit")
        defer { mirror.cancel() }
        versionTwo.set(40, forKey: "connectionLimit")
        versionTwo.set(40, forKey: "maxConnections")
        #expect(await eventually { versionOne.integer(forKey: "maxConnections") == 40 })

        // Version 1 writes the old name once more, then stops; version 3 renames and carries it over.
        versionOne.set(30, forKey: "maxConnections")
        #expect(await eventually { versionTwo.integer(forKey: "maxConnections") == 30 }, "committed to etcd")
        #expect(await eventually { versionTwo.integer(forKey: "connectionLimit") == 30 }, "through the mirror")
        // (An outside change is delivered just after a read can see it: wait for the observer too.)
        #expect(
            await eventually { seen.withLock { $0 } == [40, 30] },
            "version 1 saw its key change only to real values: \(seen.withLock { $0 })")
        let renamed = try machineTwo.migrate(to: 2) { step in
            if step.number == 1 { step.copy("maxConnections", to: "connectionLimit") }
            if step.number == 2 { step.rename("maxConnections", to: "connectionLimit") }
        }
        #expect(renamed == [2])
        #expect(versionTwo.integer(forKey: "connectionLimit") == 30, "read on return")
        #expect(versionTwo.object(forKey: "maxConnections") == nil)
        try versionTwo.synchronize()
        #expect(versionTwo.integer(forKey: "connectionLimit") == 30, "the mirror did not copy the removal")
    }
}
