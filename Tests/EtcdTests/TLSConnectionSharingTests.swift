import Foundation
import LiveDefaults
import TestSupport
import Testing

@testable import LiveDefaultsEtcd
@testable import LiveDefaultsEtcdClient

/// Over `https://` every watch of the process to one member shares one HTTP/2 connection, however
/// many start at once (docs/fleet.md, "Limits"; docs/design.md, "Fleet settings: threads and
/// connections"): the transfer loop holds the watches to a member whose connection is being set up
/// until libcurl knows it multiplexes, and no held watch loses its events.
@Suite(.requiresEtcd, .serialized)
struct TLSConnectionSharingTests {
    static let count = 50

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl"), "needs openssl"))
    func fiftyWatchesStartedAtOnceOverTLSShareAConnectionAndEachGetsItsEvents() async throws {
        let certificates = try EtcdTLSTests.Certificates()
        let (server, secure) = try await EtcdTLSTests.serve(certificates)
        defer { server.stop() }
        let port = try #require(secure.port)
        let client = EtcdClient(endpoints: [secure], certificateAuthorities: certificates.authority)
        let before = SharedThreadsTests.connections(toPort: port)
        let events = Locked<[Int: Int]>([:])
        // All at once, from the test's thread: none of them finds a connection already answered.
        let watches = try (0..<Self.count).map { index in
            try client.watch(prefix: SharedThreadsTests.prefix(400 + index), fromRevision: 1) { message in
                if let count = message.events?.count, count > 0 { events.withLock { $0[index, default: 0] += count } }
                return true
            }
        }
        defer { for watch in watches { watch.cancel() } }
        let writer = EtcdClient(endpoints: [server.endpoint])
        for index in 0..<Self.count {
            _ = try writer.commit(
                puts: [
                    (
                        EtcdMirror.etcdKey("stamp", prefix: SharedThreadsTests.prefix(400 + index)),
                        try EtcdMirror.encode(.integer(Int64(index)))
                    )
                ], deletes: [])
        }
        // Every watch has its event…
        #expect(
            await eventually(within: 30) { events.withLock { $0.count } == Self.count },
            "\(events.withLock { $0.count }) of \(Self.count) watches got their event")
        #expect(watches.allSatisfy { !$0.hasEnded })
        // …and they came over one connection to the member (a second allowed: a unary call's, had
        // one been made on the TLS port; none is here).
        let opened = SharedThreadsTests.connections(toPort: port).subtracting(before)
        #expect(opened.count <= 2, "\(opened.count) connections for \(Self.count) watches")
    }

    /// Fifty fleet suites of one process on a member over TLS: each comes live and gets its change,
    /// and the process holds one connection for their watches plus the few its unary calls keep
    /// (one per pooled handle, at most ``CurlHandlePool/capacity``), not one per suite.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl"), "needs openssl"))
    func fiftyFleetSuitesOverTLSUseABoundedNumberOfConnectionsAndEachGetsItsChange() async throws {
        let certificates = try EtcdTLSTests.Certificates()
        let (server, secure) = try await EtcdTLSTests.serve(certificates)
        defer { server.stop() }
        let port = try #require(secure.port)
        let scratch = try TemporaryDirectory()
        let before = SharedThreadsTests.connections(toPort: port)
        let base = "com.example.tls-share-\(UInt32.random(in: 0...UInt32.max))"
        let suites = try (0..<Self.count).map { index in
            try Defaults.fleet(
                FleetSuite(
                    name: "\(base).\(index)", endpoints: [secure],
                    cacheDirectory: scratch.url.appendingPathComponent("cache-\(index)"),
                    certificateAuthorities: URL(fileURLWithPath: certificates.authority)))
        }
        let connections = try suites.map { try #require($0.fleetConnection) }
        #expect(
            await eventually(within: 60) { connections.allSatisfy { $0.state.isLive } },
            "\(connections.filter { $0.state.isLive }.count) of \(Self.count) suites live")
        let writer = EtcdClient(endpoints: [server.endpoint])
        for index in 0..<Self.count {
            let prefix = Data((FleetSuite.defaultRoot + "/\(base).\(index)/").utf8)
            _ = try writer.commit(
                puts: [(EtcdMirror.etcdKey("stamp", prefix: prefix), try EtcdMirror.encode(.integer(Int64(index))))],
                deletes: [])
        }
        #expect(
            await eventually(within: 30) {
                suites.enumerated().allSatisfy { index, defaults in defaults.integer(forKey: "stamp") == index }
            },
            "\(suites.enumerated().filter { $1.integer(forKey: "stamp") == $0 }.count) of \(Self.count) got their change"
        )
        let opened = SharedThreadsTests.connections(toPort: port).subtracting(before)
        #expect(
            opened.count <= 1 + CurlHandlePool.capacity, "\(opened.count) connections for \(Self.count) fleet suites")
    }

    /// A watch held while the first watch's TLS connection to a member is being set up (the member
    /// frozen: the kernel accepts the connection, the handshake waits) is let go once that
    /// connection answers, and both get their events on it. (Held for ever, the second watch gets
    /// nothing; that the hold saves connections is the fifty watches' test above.)
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl"), "needs openssl"))
    func aWatchHeldWhileTheFirstTLSConnectionIsSetUpGetsItsEventsOnIt() async throws {
        let certificates = try EtcdTLSTests.Certificates()
        let (server, secure) = try await EtcdTLSTests.serve(certificates)
        defer { server.stop() }
        let port = try #require(secure.port)
        let client = EtcdClient(endpoints: [secure], certificateAuthorities: certificates.authority)
        let prefix = SharedThreadsTests.prefix(500)
        let events = Locked<[Int: Int]>([:])
        @Sendable func count(_ index: Int) -> @Sendable (EtcdWatchResult) -> Bool {
            { message in
                if let count = message.events?.count, count > 0 { events.withLock { $0[index, default: 0] += count } }
                return true
            }
        }
        let before = SharedThreadsTests.connections(toPort: port)
        try #require(await server.freeze(), "the member did not stop")
        let first = try client.watch(prefix: prefix, fromRevision: 1, onMessage: count(0))
        defer { first.cancel() }
        try #require(
            await eventually { !SharedThreadsTests.connections(toPort: port).subtracting(before).isEmpty },
            "the first watch did not connect")
        let second = try client.watch(prefix: prefix, fromRevision: 1, onMessage: count(1))
        defer { second.cancel() }
        server.send(SIGCONT)
        let writer = EtcdClient(endpoints: [server.endpoint])
        _ = try writer.commit(
            puts: [(EtcdMirror.etcdKey("stamp", prefix: prefix), try EtcdMirror.encode(.integer(1)))], deletes: [])
        #expect(await eventually(within: 10) { events.withLock { $0[0] ?? 0 } > 0 }, "the first watch got no event")
        #expect(await eventually(within: 10) { events.withLock { $0[1] ?? 0 } > 0 }, "the second watch got no event")
        #expect(!first.hasEnded && !second.hasEnded)
        #expect(SharedThreadsTests.connections(toPort: port).subtracting(before).count == 1)
    }

    /// When the watch a member's first TLS connection was set up for ends before an answer (here
    /// cancelled while the member is frozen), the watch held behind it goes on alone and gets its
    /// events.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl"), "needs openssl"))
    func aHeldWatchGoesOnAloneWhenTheFirstEndsBeforeAnAnswer() async throws {
        let certificates = try EtcdTLSTests.Certificates()
        let (server, secure) = try await EtcdTLSTests.serve(certificates)
        defer { server.stop() }
        let port = try #require(secure.port)
        let client = EtcdClient(endpoints: [secure], certificateAuthorities: certificates.authority)
        let prefix = SharedThreadsTests.prefix(600)
        let events = Locked(0)
        let before = SharedThreadsTests.connections(toPort: port)
        try #require(await server.freeze(), "the member did not stop")
        let first = try client.watch(prefix: prefix, fromRevision: 1) { _ in true }
        try #require(
            await eventually { !SharedThreadsTests.connections(toPort: port).subtracting(before).isEmpty },
            "the first watch did not connect")
        let second = try client.watch(prefix: prefix, fromRevision: 1) { message in
            if let count = message.events?.count, count > 0 { events.withLock { $0 += count } }
            return true
        }
        defer { second.cancel() }
        first.cancel()
        server.send(SIGCONT)
        let writer = EtcdClient(endpoints: [server.endpoint])
        _ = try writer.commit(
            puts: [(EtcdMirror.etcdKey("stamp", prefix: prefix), try EtcdMirror.encode(.integer(1)))], deletes: [])
        #expect(await eventually(within: 10) { events.withLock { $0 } > 0 }, "the held watch got no event")
        #expect(!second.hasEnded)
    }
}
