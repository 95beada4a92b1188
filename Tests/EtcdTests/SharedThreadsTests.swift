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
