import Foundation
import LiveDefaults
import TestSupport
import Testing

@testable import LiveDefaultsEtcd
@testable import LiveDefaultsEtcdClient

/// The follower in a real 3-member cluster and across a change of etcd's identity: each scenario
/// ends with an unbroken chain of old → new values per key, no value delivered twice, and a final
/// state equal to etcd's (docs/design.md, "Fleet settings: failures of a cluster").
@Suite(.requiresEtcd, .serialized)
struct EtcdClusterTests {
    typealias Record = EtcdSuiteFollowerTests.Record
    static let prefix = EtcdSuiteFollowerTests.prefix

    /// How many values each scenario writes.
    static let writes = Stress.scaled(300, quick: 120)

    /// Whether the counter's last delivered value is at least `value` (one watch message, or a
    /// re-range, can carry several writes: observers get their net change, not every value).
    static func counter(_ record: Record, reached value: Int) -> Bool {
        guard case .integer(let last)? = record.last("counter") else { return false }
        return last >= Int64(value)
    }

    /// A follower of `prefix` on every member, `first` tried first.
    static func follower(
        _ cluster: EtcdCluster, first: Int, idleTimeout: TimeInterval = 3, requestTimeout: TimeInterval = 2,
        stallCheck: EtcdSuiteFollower.StallCheck? = .standard, record: Record
    ) -> EtcdSuiteFollower {
        var endpoints = cluster.endpoints
        endpoints = Array(endpoints[first...] + endpoints[..<first])
        return EtcdSuiteFollower(
            client: EtcdClient(endpoints: endpoints, requestTimeout: requestTimeout), prefix: prefix,
            idleTimeout: idleTimeout,
            reconnectJitter: 0.1, stallCheck: stallCheck
        ) { changes, _ in record.add(changes) }
    }

    /// Writes `counter` = n and `written-n` = true in one transaction for each n in `values`, each
    /// tried again until etcd acknowledges it (a put is idempotent): no acknowledged write may be lost.
    ///
    /// A write is retried for up to `patience`: after a member is lost, the others may take long
    /// to elect a leader on loaded cores (over 20 s was seen in CI; they answer "no leader" until
    /// then), as long as a new member is given to become healthy (`EtcdServer`).
    static func writeCounter(
        _ writer: EtcdClient, _ values: ClosedRange<Int>, patience: Duration = .seconds(60)
    ) async throws {
        for value in values {
            let deadline = ContinuousClock.now + patience
            while true {
                do {
                    _ = try await EtcdSuiteFollowerTests.put(
                        writer, ["counter": .integer(Int64(value)), "written-\(value)": true])
                    break
                } catch {
                    if ContinuousClock.now >= deadline { throw error }
                    try await Task.sleep(for: .milliseconds(50))  // pacing the retries, not synchronisation
                }
            }
        }
    }

    /// What each scenario must end with.
    static func expectConsistent(
        _ record: Record, _ follower: EtcdSuiteFollower, etcd: EtcdClient, written: Int,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        #expect(record.brokenChains.isEmpty, "chains broke for \(record.brokenChains)", sourceLocation: sourceLocation)
        let counters = record.news("counter").map { value -> Int64 in
            if case .integer(let integer)? = value { return integer }
            return -1
        }
        // Each value at most once, in the order written (a resync may skip some: a net change).
        #expect(zip(counters, counters.dropFirst()).allSatisfy { $0 < $1 }, sourceLocation: sourceLocation)
        #expect(counters.last == Int64(written), sourceLocation: sourceLocation)
        let values = follower.values
        let missing = (1...written).filter { values["written-\($0)"] != true }
        #expect(missing.isEmpty, "acknowledged writes missing: \(missing)", sourceLocation: sourceLocation)
        #expect(values == (try await EtcdSuiteFollowerTests.etcdValues(etcd)), sourceLocation: sourceLocation)
    }

    /// A member that is not the leader (the "follower that carries the watch").
    static func nonLeader(_ cluster: EtcdCluster) async throws -> Int {
        let leader = try #require(await cluster.waitForLeader())
        return (leader + 1) % cluster.members.count
    }

    @Test func losingTheMemberThatCarriesTheWatchLosesNoChange() async throws {
        let cluster = try EtcdCluster()
        try await cluster.start()
        defer { cluster.stop() }
        let watched = try await Self.nonLeader(cluster)
        let record = Record()
        let follower = Self.follower(cluster, first: watched, record: record)
        follower.start()
        defer { follower.stop() }
        #expect(await eventually { follower.watchedEndpoint == cluster.members[watched].endpoint })
        let others = cluster.endpoints.filter { $0 != cluster.members[watched].endpoint }
        let writer = EtcdClient(endpoints: others)
        // A third of the writes before the kill and the rest after it, in that order: a writer as
        // fast as the synchronous client had often finished before the kill, the watch on the
        // member about to die bringing every change.
        try await Self.writeCounter(writer, 1...Self.writes / 3)
        #expect(await eventually(within: 30) { Self.counter(record, reached: Self.writes / 3) })
        cluster.members[watched].send(SIGKILL)
        try await Self.writeCounter(writer, Self.writes / 3 + 1...Self.writes)
        #expect(await eventually(within: 30) { record.news("counter").last == .integer(Int64(Self.writes)) })
        #expect(follower.watchedEndpoint != cluster.members[watched].endpoint)
        try await Self.expectConsistent(record, follower, etcd: writer, written: Self.writes)
    }

    @Test func theLeaderDyingDuringWritesLosesNoAcknowledgedWriteAndDeliversNoneTwice() async throws {
        let cluster = try EtcdCluster()
        try await cluster.start()
        defer { cluster.stop() }
        let leader = try #require(await cluster.waitForLeader())
        let record = Record()
        let follower = Self.follower(cluster, first: (leader + 1) % 3, record: record)
        follower.start()
        defer { follower.stop() }
        // The writer starts on the leader, so its write in flight is the one the election strands.
        let writer = EtcdClient(
            endpoints: [leader, (leader + 1) % 3, (leader + 2) % 3].map { cluster.members[$0].endpoint },
            requestTimeout: 3)
        let writing = Task { try await Self.writeCounter(writer, 1...Self.writes) }
        #expect(await eventually(within: 30) { Self.counter(record, reached: Self.writes / 3) })
        cluster.members[leader].send(SIGKILL)
        try await writing.value
        let survivor = EtcdClient(endpoints: cluster.endpoints.filter { $0 != cluster.members[leader].endpoint })
        #expect(await eventually(within: 30) { record.news("counter").last == .integer(Int64(Self.writes)) })
        #expect(await cluster.waitForLeader() != leader)
        try await Self.expectConsistent(record, follower, etcd: survivor, written: Self.writes)
    }

    @Test func etcdKilledAndTerminatedWhileAWriterWritesLosesNoAcknowledgedWrite() async throws {
        let server = try EtcdServer()
        try await server.start()
        defer { server.stop() }
        let record = Record()
        let follower = EtcdSuiteFollower(
            client: EtcdClient(endpoints: [server.endpoint], requestTimeout: 2), prefix: Self.prefix, idleTimeout: 3,
            reconnectJitter: 0.1
        ) { changes, _ in record.add(changes) }
        follower.start()
        defer { follower.stop() }
        let writer = EtcdClient(endpoints: [server.endpoint], requestTimeout: 2)
        let writing = Task { try await Self.writeCounter(writer, 1...Self.writes) }
        for (signal, fraction) in [(SIGKILL, 3), (SIGTERM, 2)] {
            // The counter's last value, not how many arrived: one watch message (or a re-range) can
            // carry several writes, and observers get their net change.
            #expect(
                await eventually(within: 30) { Self.counter(record, reached: Self.writes / fraction) })
            server.send(signal)
            server.waitForExit()
            try await server.start()
        }
        try await writing.value
        #expect(await eventually(within: 30) { record.news("counter").last == .integer(Int64(Self.writes)) })
        try await Self.expectConsistent(record, follower, etcd: writer, written: Self.writes)
    }

    @Test func etcdWipedAndStartedAgainOnTheSamePortReplacesTheMirrorWithNetChanges() async throws {
        let server = try EtcdServer()
        try await server.start()
        defer { server.stop() }
        let writer = EtcdClient(endpoints: [server.endpoint])
        for value in 1...10 { _ = try await EtcdSuiteFollowerTests.put(writer, ["counter": .integer(Int64(value))]) }
        _ = try await EtcdSuiteFollowerTests.put(writer, ["kept": "same", "changed": 1, "gone": true])
        let clusterBefore = try writer.range(prefix: Self.prefix).header.clusterID
        let record = Record()
        let follower = EtcdSuiteFollower(
            client: EtcdClient(endpoints: [server.endpoint], requestTimeout: 2), prefix: Self.prefix, idleTimeout: 3,
            reconnectJitter: 0.1
        ) { changes, _ in record.add(changes) }
        follower.start()
        defer { follower.stop() }
        #expect(await eventually { follower.values["gone"] == true })

        // The same name, peer URL and cluster token: the same cluster ID, and a revision that went back.
        server.send(SIGKILL)
        server.waitForExit()
        try server.wipe()
        try await server.start()
        _ = try await EtcdSuiteFollowerTests.put(writer, ["kept": "same", "changed": 2, "new": "here"])
        #expect(try writer.range(prefix: Self.prefix).header.clusterID == clusterBefore)
        #expect(await eventually(within: 30) { follower.values["new"] == "here" && follower.values["gone"] == nil })
        // The record, not the values: the follower updates its values before it calls back.
        #expect(await eventually { record.last("new") == "here" && record.news("gone").last == .some(nil) })
        // The follower may have ranged the new etcd before the write (then "kept" went away and came
        // back, as etcd had it); either way each delivered change is a real one and the last is etcd's.
        #expect(record.news("kept").last == "same")
        #expect(record.news("gone") == [true, nil])
        #expect(record.news("counter").last == .some(nil))
        #expect(follower.identityChangeCount >= 1)

        // A new cluster token: another cluster ID on the same port.
        let identityChanges = follower.identityChangeCount
        server.send(SIGTERM)
        server.waitForExit()
        try server.wipe()
        try server.launch(clusterToken: "another-cluster")
        try await server.waitUntilHealthy()
        _ = try await EtcdSuiteFollowerTests.put(writer, ["changed": 3])
        #expect(try writer.range(prefix: Self.prefix).header.clusterID != clusterBefore)
        #expect(await eventually(within: 30) { follower.values == ["changed": 3] })
        #expect(follower.identityChangeCount > identityChanges)
        #expect(record.brokenChains.isEmpty, "chains broke for \(record.brokenChains)")
        #expect(follower.values == (try await EtcdSuiteFollowerTests.etcdValues(writer)))
    }

    @Test func aWatchMessageFromAnotherClusterOrAnEarlierRevisionIsAnIdentityChange() {
        var mirror = EtcdMirror(prefix: Self.prefix)
        var header = EtcdResponseHeader()
        header.cluster_id = EtcdUInt64(7)
        header.revision = EtcdInt64(50)
        _ = mirror.resync(header: header, kvs: [])
        #expect(EtcdSuiteFollower.identityProblem(of: header, mirror: mirror) == nil)
        #expect(EtcdSuiteFollower.identityProblem(of: nil, mirror: mirror) == nil)
        var later = header
        later.revision = EtcdInt64(51)
        #expect(EtcdSuiteFollower.identityProblem(of: later, mirror: mirror) == nil)
        var earlier = header
        earlier.revision = EtcdInt64(3)
        #expect(EtcdSuiteFollower.identityProblem(of: earlier, mirror: mirror)?.contains("went back") == true)
        var other = header
        other.cluster_id = EtcdUInt64(8)
        #expect(EtcdSuiteFollower.identityProblem(of: other, mirror: mirror)?.contains("cluster ID") == true)
        // Before the first range the mirror belongs to no cluster yet.
        #expect(EtcdSuiteFollower.identityProblem(of: other, mirror: EtcdMirror(prefix: Self.prefix)) == nil)
    }
}

extension EtcdSuiteFollower.Status {
    /// The revision when live.
    var revision: Int64? {
        if case .live(let revision) = self { return revision }
        return nil
    }
}

/// A cluster member that stops answering without going away — isolated from its peers, or hung —
/// is left. Its own suite, so that these tests, which mostly wait (for an election to fail, for the
/// idle timeout), run beside the rest instead of after them; each starts its own cluster.
@Suite(.requiresEtcd, .serialized)
struct EtcdClusterStallTests {
    typealias Record = EtcdSuiteFollowerTests.Record

    /// Isolation on loopback: the member's two peers are stopped (SIGSTOP), so it reaches no one and
    /// loses its leader, exactly as behind a partition; a firewall rule would isolate it with the
    /// majority still writing, but tests may not change the machine's settings. Without the
    /// has-leader header the member would go on sending progress at its stale revision and the
    /// follower would call itself live forever; the idle timeout (60 s here) cannot catch it.
    @Test func anIsolatedMemberIsLeftThroughTheHasLeaderHeader() async throws {
        let cluster = try EtcdCluster()
        try await cluster.start()
        defer { cluster.stop() }
        let isolated = try await EtcdClusterTests.nonLeader(cluster)
        let record = Record()
        let follower = EtcdClusterTests.follower(
            cluster, first: isolated, idleTimeout: 60, requestTimeout: 1, record: record)
        follower.start()
        defer { follower.stop() }
        let writer = EtcdClient(endpoints: cluster.endpoints)
        try await EtcdClusterTests.writeCounter(writer, 1...10)
        #expect(await eventually { record.news("counter").last == .integer(10) })
        #expect(follower.watchedEndpoint == cluster.members[isolated].endpoint)
        let peers = cluster.members.indices.filter { $0 != isolated }.map { cluster.members[$0] }
        for peer in peers { #expect(await peer.freeze()) }
        let resyncs = follower.resyncCount
        // Within 30 s, half the idle timeout: the in-stream "no leader" ended the watch, and no
        // member could answer a range (the isolated one says "no leader" at once).
        let left = await eventually(within: 30) {
            if case .offline = follower.status { return true }
            return false
        }
        // No member could answer a range meanwhile.
        let resyncsWhileIsolated = follower.resyncCount
        for peer in peers { peer.send(SIGCONT) }
        #expect(left, "the follower still calls itself \(follower.status)")
        #expect(resyncsWhileIsolated == resyncs)
        try await EtcdClusterTests.writeCounter(writer, 11...20)
        #expect(await eventually(within: 30) { record.news("counter").last == .integer(20) })
        #expect(await eventually { follower.status.revision != nil })
        try await EtcdClusterTests.expectConsistent(record, follower, etcd: writer, written: 20)
    }

    @Test func aHungMemberIsLeftAfterTheIdleTimeoutWhileItIsStillHung() async throws {
        let cluster = try EtcdCluster()
        try await cluster.start(progressInterval: "500ms")
        defer { cluster.stop() }
        let hung = try await EtcdClusterTests.nonLeader(cluster)
        let record = Record()
        // No stall check: the idle timeout alone (EtcdStallTests covers the check).
        let follower = EtcdClusterTests.follower(cluster, first: hung, idleTimeout: 2, stallCheck: nil, record: record)
        follower.start()
        defer { follower.stop() }
        #expect(await eventually { follower.watchedEndpoint == cluster.members[hung].endpoint })
        let writer = EtcdClient(endpoints: cluster.endpoints.filter { $0 != cluster.members[hung].endpoint })
        try await EtcdClusterTests.writeCounter(writer, 1...10)
        #expect(await eventually { record.news("counter").last == .integer(10) })
        #expect(await cluster.members[hung].freeze())
        defer { cluster.members[hung].send(SIGCONT) }
        try await EtcdClusterTests.writeCounter(writer, 11...EtcdClusterTests.writes)
        #expect(
            await eventually(within: 30) { record.news("counter").last == .integer(Int64(EtcdClusterTests.writes)) })
        #expect(follower.watchedEndpoint != cluster.members[hung].endpoint)
        try await EtcdClusterTests.expectConsistent(record, follower, etcd: writer, written: EtcdClusterTests.writes)
    }
}
