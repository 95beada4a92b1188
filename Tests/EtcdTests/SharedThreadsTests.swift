import Foundation
import LiveDefaults
import TestSupport
import Testing

@testable import LiveDefaultsEtcd
@testable import LiveDefaultsEtcdClient

/// The threads a process's fleet suites share (docs/design.md, "Fleet settings: threads and
/// connections"): one reads every watch, one runs every follower, at most four make their blocking
/// calls, whatever the number of suites; a watch's end (cancelled, or its stream broken) reaches
/// that watch alone or every watch it concerns.
@Suite(.requiresEtcd, .serialized)
struct SharedThreadsTests {
    /// The process's threads by name (/proc/self/task/*/comm; Linux keeps 15 bytes of a name).
    static func threads(named name: String) -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.filter { task in
            let comm = (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) ?? ""
            return comm.trimmingCharacters(in: .whitespacesAndNewlines) == name
        }.count
    }

    static func prefix(_ index: Int) -> Data { Data("/livedefaults/v1/com.example.shared.\(index)/".utf8) }

    @Test func manyFollowersShareOneTransferThreadOneFollowerThreadAndAFewCallThreads() async throws {
        let server = try EtcdServer()
        try await server.start()
        defer { server.stop() }
        let count = 24
        let seen = Locked<Set<Int>>([])
        let followers = (0..<count).map { index in
            EtcdSuiteFollower(client: EtcdClient(endpoints: [server.endpoint]), prefix: Self.prefix(index)) {
                changes, _ in
                if changes.contains(where: { $0.key == "stamp" && $0.new != nil }) {
                    _ = seen.withLock { $0.insert(index) }
                }
            }
        }
        for follower in followers { follower.start() }
        defer { for follower in followers { follower.stop() } }
        #expect(
            await eventually {
                followers.allSatisfy { follower in
                    if case .live = follower.status { follower.watchedEndpoint != nil } else { false }
                }
            })
        let writer = EtcdClient(endpoints: [server.endpoint])
        for index in 0..<count {
            _ = try writer.commit(
                puts: [(EtcdMirror.etcdKey("stamp", prefix: Self.prefix(index)), try EtcdMirror.encode(.integer(1)))],
                deletes: [])
        }
        // Every follower got its change, through its own watch…
        #expect(await eventually { seen.withLock { $0.count } == count })
        #expect(CurlTransferLoop.shared.activeCount >= count)
        // …and the process has one thread reading all the watches, one running all the followers,
        // a few making their calls. (A thread a named thread creates starts with its name, as a
        // Dispatch worker started from the follower thread for a timer: two of those allowed.)
        let (transfer, follow, call) = (
            Self.threads(named: "ld-etcd-xfer"), Self.threads(named: "ld-etcd-follow"),
            Self.threads(named: "ld-etcd-call")
        )
        #expect(transfer >= 1 && follow >= 1)
        #expect(transfer + follow + call <= 2 + BlockingCalls.width + 2, "\(transfer) + \(follow) + \(call) threads")
    }

    /// A fleet suite's async calls wait for etcd on the fleet's own threads (``BlockingCalls``), not
    /// on Swift's cooperative pool, which on Linux is the workers of Dispatch's global queue: two on
    /// 2 cores, and one more a second while they all wait. With forty updates (each keeping the
    /// value it reads) waiting for a frozen member (15 s each), a task started once they all wait
    /// runs before any of them returns; when each update held a worker of that pool, the task waited
    /// for them (about 40 s for the pool to grow, and the first update returned first). The 15 s
    /// leave the task time on a machine whose pool other tests keep busy.
    @Test func updatesWaitingForAFrozenMemberLeaveTheCooperativePoolFree() async throws {
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        let writer = try Defaults.fleet(scenario.suite(variant: 10))  // a request timeout of 15 s
        let connection = try #require(writer.fleetConnection)
        #expect(await eventually(within: 30) { connection.state.isLive })
        try #require(await scenario.server.freeze(), "the member froze")
        let started = Locked(0)
        let order = Locked<[String]>([])
        let updates = 40
        for index in 0..<updates {
            Task.detached {
                // From here to its call to etcd, `update` does not suspend (nothing is pending):
                // once all have started, every call has been handed to the threads that make it.
                // Each keeps the value it reads, so each makes one call (a read) and no write: forty
                // writes would each compare the suite's history head, and retry against the others
                // for minutes under the thread sanitizer once the member is back.
                started.withLock { $0 += 1 }
                _ = try? await connection.update("key-\(index)") { old in old }
                order.withLock { $0.append("update \(index)") }
            }
        }
        #expect(await eventually(within: 60) { started.withLock { $0 } == updates })
        Task.detached { order.withLock { $0.append("task") } }
        let ranFirst = await eventually(within: 90) { !order.withLock { $0 }.isEmpty }
        scenario.server.send(SIGCONT)
        #expect(ranFirst)
        #expect(order.withLock { $0.first } == "task", "\(order.withLock { $0 })")
        #expect(await eventually(within: 60) { order.withLock { $0.count } == updates + 1 }, "every update returned")
    }

    @Test func cancellingOneWatchLeavesTheOthersOnTheSharedThread() async throws {
        let server = try EtcdServer()
        try await server.start()
        defer { server.stop() }
        let client = EtcdClient(endpoints: [server.endpoint])
        let prefix = Self.prefix(100)
        let events = Locked<[Int: Int]>([:])
        let watches = try (0..<3).map { index in
            try client.watch(prefix: prefix, fromRevision: 1) { message in
                if let count = message.events?.count, count > 0 { events.withLock { $0[index, default: 0] += count } }
                return true
            }
        }
        defer { for watch in watches { watch.cancel() } }
        let key = EtcdMirror.etcdKey("stamp", prefix: prefix)
        _ = try client.commit(puts: [(key, try EtcdMirror.encode(.integer(1)))], deletes: [])
        #expect(await eventually { events.withLock { $0.count } == 3 })
        watches[0].cancel()
        #expect(watches[0].hasEnded)
        let before = events.withLock { $0[0] ?? 0 }
        _ = try client.commit(puts: [(key, try EtcdMirror.encode(.integer(2)))], deletes: [])
        #expect(await eventually { events.withLock { ($0[1] ?? 0) >= 2 && ($0[2] ?? 0) >= 2 } })
        #expect(events.withLock { $0[0] ?? 0 } == before)
        #expect(!watches[1].hasEnded && !watches[2].hasEnded)
    }

    /// This process's established TCP connections to `port` on loopback, by socket inode
    /// (/proc/self/net/tcp lists the whole network namespace's: etcd's gateway connects to its own
    /// port too; the process's own are those among its descriptors).
    static func connections(toPort port: Int) -> Set<Substring> {
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        let mine = Set(
            descriptors.compactMap { descriptor -> Substring? in
                var buffer = [CChar](repeating: 0, count: 64)
                let length = readlink("/proc/self/fd/\(descriptor)", &buffer, buffer.count - 1)
                guard length > 0 else { return nil }
                let target = String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
                guard target.hasPrefix("socket:[") else { return nil }
                return Substring(target.dropFirst("socket:[".count).dropLast())
            })
        // Read to the end: a proc file reports no size, and a read by its size stops at a page.
        let table = String(
            decoding: FileHandle(forReadingAtPath: "/proc/self/net/tcp")?.readDataToEndOfFile() ?? Data(), as: UTF8.self
        )
        let remote = String(format: "0100007F:%04X", port)
        return Set(
            table.split(separator: "\n").dropFirst().compactMap { line -> Substring? in
                let fields = line.split(separator: " ")
                guard fields.count > 9, fields[2] == remote, fields[3] == "01", mine.contains(fields[9]) else {
                    return nil
                }
                return fields[9]
            })
    }

    /// A watch that starts while another watch to the same member has its connection open but no
    /// answer yet (over http://, HTTP/1.1 either way) still gets its events. libcurl 7.88 let a
    /// transfer with `CURLOPT_PIPEWAIT` wait for that connection to say whether it multiplexes,
    /// and took it up again only when some transfer of the multi handle ended: a watch never
    /// does, so the second suite of a process saw nothing until the first one's watch ended.
    @Test func aWatchStartedWhileAnotherIsConnectingGetsItsEvents() async throws {
        let server = try EtcdServer()
        try await server.start()
        defer { server.stop() }
        let client = EtcdClient(endpoints: [server.endpoint])
        let port = try #require(server.endpoint.port)
        let prefix = Self.prefix(300)
        let events = Locked<[Int: Int]>([:])
        @Sendable func count(_ index: Int) -> @Sendable (EtcdWatchResult) -> Bool {
            { message in
                if let count = message.events?.count, count > 0 { events.withLock { $0[index, default: 0] += count } }
                return true
            }
        }
        // The member accepts connections (the kernel does) but answers nothing while it is frozen:
        // the first watch's connection is open and its answer not yet come.
        let before = Self.connections(toPort: port)
        try #require(await server.freeze(), "the member did not stop")
        let first = try client.watch(prefix: prefix, fromRevision: 1, onMessage: count(0))
        defer { first.cancel() }
        try #require(
            await eventually { !Self.connections(toPort: port).subtracting(before).isEmpty },
            "the first watch did not connect")
        let second = try client.watch(prefix: prefix, fromRevision: 1, onMessage: count(1))
        defer { second.cancel() }
        server.send(SIGCONT)
        _ = try client.commit(
            puts: [(EtcdMirror.etcdKey("stamp", prefix: prefix), try EtcdMirror.encode(.integer(1)))], deletes: [])
        #expect(await eventually(within: 10) { events.withLock { $0[0] ?? 0 } > 0 }, "the first watch got no event")
        #expect(await eventually(within: 10) { events.withLock { $0[1] ?? 0 } > 0 }, "the second watch got no event")
        #expect(!first.hasEnded && !second.hasEnded)
    }

    @Test func aStoppedMemberEndsEveryWatchOnItWithAnError() async throws {
        let server = try EtcdServer()
        try await server.start()
        let client = EtcdClient(endpoints: [server.endpoint])
        let watches = try (0..<3).map { index in
            try client.watch(prefix: Self.prefix(200 + index), fromRevision: 1) { _ in true }
        }
        defer { for watch in watches { watch.cancel() } }
        // Created: etcd answered each (its first message), so each stream is open.
        #expect(await eventually { watches.allSatisfy { !$0.hasEnded } })
        server.stop()
        #expect(await eventually { watches.allSatisfy(\.hasEnded) })
        for watch in watches {
            #expect(watch.waitForEnd() != nil, "a watch whose member stopped ends with an error, not cleanly")
        }
    }
}
