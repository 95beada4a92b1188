import Foundation
import LiveDefaults
import TestSupport
import Testing

@testable import LiveDefaultsEtcd
@testable import LiveDefaultsEtcdClient

/// A member that stops answering without closing its connections (frozen with SIGSTOP, as a hung
/// VM or a partition) is noticed by the stall check within seconds, not at the watch's idle
/// timeout (docs/design.md, "Fleet settings: a stalled member"). The bounds asserted are the
/// issue's 10 s targets, measured from the freeze to the event; a frozen member is always resumed
/// and stopped (its `defer`, and `EtcdServer.stop()` sends SIGCONT before SIGKILL).
@Suite(.requiresEtcd, .serialized)
struct EtcdStallTests {
    typealias Record = EtcdSuiteFollowerTests.Record

    /// The target for both bounds.
    static let bound: Double = 10

    @Test func newValuesComeFromAnotherMemberWithinTenSecondsOfTheWatchedOneFreezing() async throws {
        let cluster = try EtcdCluster()
        try await cluster.start()
        defer { cluster.stop() }
        let frozen = try await EtcdClusterTests.nonLeader(cluster)
        let record = Record()
        // The idle timeout (60 s) and the request timeout (30 s) are far past the bound: only the
        // stall check can meet it.
        let follower = EtcdClusterTests.follower(
            cluster, first: frozen, idleTimeout: 60, requestTimeout: 30, record: record)
        follower.start()
        defer { follower.stop() }
        #expect(await eventually { follower.watchedEndpoint == cluster.members[frozen].endpoint })
        let writer = EtcdClient(endpoints: cluster.endpoints.filter { $0 != cluster.members[frozen].endpoint })
        try await EtcdClusterTests.writeCounter(writer, 1...5)
        #expect(await eventually { record.news("counter").last == .integer(5) })
        let leaderAtFreeze = cluster.leaderIndex()
        let (resyncsBefore, checksBefore) = (follower.resyncCount, follower.checkCount)
        let frozenAt = ContinuousClock.now
        defer { cluster.members[frozen].send(SIGCONT) }
        #expect(await cluster.members[frozen].freeze(), "member \(frozen) was not stopped")
        try await EtcdClusterTests.writeCounter(writer, 6...6)
        let written = ContinuousClock.now - frozenAt
        let arrived = await eventually(within: Self.bound - written.seconds) {
            record.news("counter").last == .integer(6)
        }
        // What the follower did, for a failure's message.
        let story =
            "the write took \(written); leader at the freeze: \(String(describing: leaderAtFreeze)), frozen: \(frozen); "
            + "resyncs \(resyncsBefore) → \(follower.resyncCount), checks \(checksBefore) → \(follower.checkCount), "
            + "status \(follower.status)"
        #expect(arrived, "the value written after the freeze did not arrive within \(Self.bound) s; \(story)")
        #expect(follower.stallCount >= 1, "\(story)")
        #expect(follower.watchedEndpoint != cluster.members[frozen].endpoint, "\(story)")
        try await EtcdClusterTests.expectConsistent(record, follower, etcd: writer, written: 6)
    }

    @Test func aSuiteWhoseOnlyMemberFreezesGoesStaleWithinTenSecondsAndLiveAfter() async throws {
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        // A request timeout far past the bound: only the stall check can meet it.
        let suite = try FleetSuite(
            name: scenario.name, endpoints: [scenario.server.endpoint],
            cacheDirectory: scenario.scratch.url.appendingPathComponent("cache"), requestTimeout: .seconds(30))
        let defaults = try Defaults.fleet(suite)
        let connection = try #require(defaults.fleetConnection)
        #expect(await eventually(within: 30) { connection.state.isLive })
        defer { scenario.server.send(SIGCONT) }
        #expect(await scenario.server.freeze(), "the member was not stopped")
        let stale = await eventually(within: Self.bound) {
            if case .stale = connection.state { return true }
            return false
        }
        #expect(stale, "the suite still says \(connection.state) \(Self.bound) s after its member froze")
        if case .stale(_, _, let reason) = connection.state {
            #expect(reason.contains(scenario.server.endpoint.absoluteString), "\(reason)")
        }
        scenario.server.send(SIGCONT)
        #expect(await eventually(within: 30) { connection.state.isLive })
        try await scenario.put(["after": true])
        #expect(await eventually(within: 30) { defaults.bool(forKey: "after") })
    }

    /// No false disconnect on a loaded machine: many checks, with the default timeout, while every
    /// core is kept busy and etcd takes writes; none may fail and the watch is never left.
    /// `LIVEDEFAULTS_STRESS` makes the run longer.
    @Test func checksOnABusyMachineReportNoDisconnect() async throws {
        let server = try EtcdServer()
        // etcd's default progress interval: the watch stays silent, so every interval is a check.
        try await server.start(progressInterval: "10m")
        defer { server.stop() }
        let record = Record()
        let follower = EtcdSuiteFollower(
            client: EtcdClient(endpoints: [server.endpoint]), prefix: EtcdSuiteFollowerTests.prefix, idleTimeout: 3_600,
            stallCheck: .init(interval: 0.02, timeout: EtcdSuiteFollower.StallCheck.standard.timeout)
        ) { changes, _ in record.add(changes) }
        let statuses = Locked<[EtcdSuiteFollower.Status]>([])
        follower.onStatus { status in statuses.withLock { $0.append(status) } }
        follower.start()
        defer { follower.stop() }
        #expect(await eventually(within: 30) { follower.watchedEndpoint != nil })
        let load = BusyCores(threads: 2 * ProcessInfo.processInfo.activeProcessorCount)
        defer { load.stop() }
        // Writes under another prefix keep etcd busy without a message on the watch (which would
        // stand for a check).
        let checks = Stress.scaled(1_000, quick: 150)
        let writer = EtcdClient(endpoints: [server.endpoint])
        let elsewhere = Data("/livedefaults/v1/com.example.elsewhere/".utf8)
        let began = follower.checkCount
        var written: Int64 = 0
        let deadline = ContinuousClock.now + .seconds(120)
        while follower.checkCount - began < checks, ContinuousClock.now < deadline {
            written += 1
            _ = try writer.commit(
                puts: [(EtcdMirror.etcdKey("counter", prefix: elsewhere), try EtcdMirror.encode(.integer(written)))],
                deletes: [])
        }
        load.stop()
        #expect(follower.checkCount - began >= checks, "only \(follower.checkCount - began) checks in 120 s")
        #expect(follower.stallCount == 0)
        #expect(follower.resyncCount == 1, "the watch was left \(follower.resyncCount - 1) times")
        #expect(!statuses.withLock { $0 }.contains { if case .offline = $0 { true } else { false } })
    }
}

/// Threads that spin until stopped, so a test runs on a machine with no idle core.
final class BusyCores: Sendable {
    private let running = Locked(true)

    init(threads: Int) {
        for _ in 0..<threads {
            Thread.detachNewThread { [running] in
                var spin: UInt64 = 0
                while running.withLock({ $0 }) {
                    for step in 0..<100_000 { spin &+= UInt64(step) }
                }
                _ = spin
            }
        }
    }

    func stop() { running.withLock { $0 = false } }
}

extension Duration {
    /// The duration in seconds.
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
