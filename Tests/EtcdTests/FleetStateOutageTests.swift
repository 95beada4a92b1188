import Foundation
import LiveDefaults
import LiveDefaultsTestHelpers
import TestSupport
import Testing

@testable import LiveDefaultsEtcd
@testable import LiveDefaultsEtcdClient

/// A fleet suite's state and its outage agree: the state never says etcd is lost before
/// `lastError` says why.
@Suite struct FleetStateOutageTests {
    /// The follower's news that etcd is lost is held on its way to the backend: the follower says
    /// offline, and the state (which follows what the backend was told, set with the outage) still
    /// says live, with no error yet. Once the news arrives, stale and the error come together.
    @Test func theStateTurnsStaleOnlyWithTheOutageThatSaysWhy() async throws {
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        try await scenario.put(["theme": "dark"])
        let defaults = try scenario.localDefaults()
        let connection = defaults.addFleetSuite(try scenario.suite())
        #expect(await eventually { connection.state.isLive })
        let backend = connection.backend
        let gate = DispatchSemaphore(value: 0)
        let held = Locked(false)
        backend.follower.onStatus { [weak backend] status in
            if case .offline = status {
                held.withLock { $0 = true }
                gate.wait()
            }
            backend?.statusChanged(status)
        }
        defer { gate.signal() }
        scenario.server.stop()
        #expect(await eventually { held.withLock { $0 } }, "the follower never noticed")
        guard case .offline = backend.follower.status else {
            Issue.record("the follower says \(backend.follower.status)")
            return
        }
        #expect(connection.state.isLive, "the state ran ahead of the outage: \(connection.state)")
        #expect(connection.lastError == nil)
        gate.signal()
        #expect(await eventually { if case .stale = connection.state { true } else { false } })
        #expect(connection.lastError?.code == .remoteUnavailable)
    }
}
