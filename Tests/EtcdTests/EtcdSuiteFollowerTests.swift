import Foundation
import LiveDefaults
import TestSupport
import Testing

@testable import LiveDefaultsEtcd
@testable import LiveDefaultsEtcdClient

/// The follower against a real etcd: per-key old and new values whose chain never breaks, and a
/// final state equal to etcd's, across restarts and compaction.
@Suite(.requiresEtcd, .serialized)
struct EtcdSuiteFollowerTests {
    static let prefix = Data("/livedefaults/v1/com.example.follow/".utf8)

    /// Every change the follower delivered, per key, and the bursts.
    final class Record: Sendable {
        private let state = Locked<(byKey: [String: [EtcdMirror.Change]], bursts: Int)>(([:], 0))

        func add(_ changes: [EtcdMirror.Change]) {
            state.withLock { state in
                state.bursts += 1
                for change in changes { state.byKey[change.key, default: []].append(change) }
            }
        }

        var bursts: Int { state.withLock { $0.bursts } }
        /// The new values delivered for `key`, in order (nil for a removal).
        func news(_ key: String) -> [PropertyListValue?] { state.withLock { $0.byKey[key]?.map(\.new) ?? [] } }
        func last(_ key: String) -> PropertyListValue? { state.withLock { $0.byKey[key]?.last?.new } }

        /// Keys whose chain of old → new broke somewhere (an old value that was not the previous new).
        var brokenChains: [String] {
            state.withLock { state in
                state.byKey.compactMap { key, changes in
                    var previous: PropertyListValue? = nil
                    for change in changes {
                        if change.old != previous { return key }
                        previous = change.new
                    }
                    return nil
                }.sorted()
            }
        }
    }

    static func put(_ client: EtcdClient, _ values: [String: PropertyListValue], delete: [String] = []) async throws
        -> Int64
    {
        // On a thread of its own: the call blocks until etcd answers (FleetScenario.put).
        try await onAThreadOfItsOwn {
            try client.commit(
                puts: try values.map { (EtcdMirror.etcdKey($0.key, prefix: prefix), try EtcdMirror.encode($0.value)) },
                deletes: delete.map { EtcdMirror.etcdKey($0, prefix: prefix) })
        }
    }

    /// A follower of `prefix` on `server` (not started) that records every change it reports.
    static func follower(of server: EtcdServer, recordingInto record: Record) -> EtcdSuiteFollower {
        EtcdSuiteFollower(client: EtcdClient(endpoints: [server.endpoint]), prefix: prefix) { changes, _ in
            record.add(changes)
        }
    }

    /// A watch created behind etcd (writes between the range and the watch: the race of a follower
    /// that starts while a writer runs) gets every revision since in one message; the mirror tells
    /// each transaction of it, so a value changed and changed back is two changes, not none.
    @Test func aWatchCreatedBehindEtcdTellsEachTransactionOfItsCatchUpMessage() async throws {
        let server = try EtcdServer()
        try await server.start()
        defer { server.stop() }
        let client = EtcdClient(endpoints: [server.endpoint])
        _ = try await Self.put(client, ["size": 12])
        var mirror = EtcdMirror(prefix: Self.prefix)
        let (header, kvs) = try client.range(prefix: Self.prefix)
        _ = mirror.resync(header: header, kvs: kvs)
        // Three transactions after the range, before the watch exists.
        _ = try await Self.put(client, ["size": "big"])
        _ = try await Self.put(client, ["list": .array(["a", 1])])
        let last = try await Self.put(client, ["size": 12], delete: ["list"])
        let watch = try client.watch(prefix: Self.prefix, fromRevision: header.revisionValue + 1)
        defer { watch.cancel() }
        var bursts: [EtcdMirror.Burst] = []
        var messagesWithEvents = 0
        for try await message in watch.messages {
            guard let events = message.events, !events.isEmpty else { continue }
            messagesWithEvents += 1
            bursts += mirror.apply(events).bursts
            if mirror.revision >= last { break }
        }
        // etcd sent the three revisions together (what made a net change per message lose them).
        #expect(messagesWithEvents == 1)
        #expect(
            bursts.map(\.changes) == [
                [.init(key: "size", old: 12, new: "big")],
                [.init(key: "list", old: nil, new: .array(["a", 1]))],
                [.init(key: "size", old: "big", new: 12), .init(key: "list", old: .array(["a", 1]), new: nil)],
            ])
        #expect(bursts.map(\.revision) == [last - 2, last - 1, last])
        #expect(mirror.values == ["size": 12])
    }

    /// What etcd holds under the prefix now, decoded.
    static func etcdValues(_ client: EtcdClient) async throws -> [String: PropertyListValue] {
        var mirror = EtcdMirror(prefix: prefix)
        let (header, kvs) = try client.range(prefix: prefix)
        _ = mirror.resync(header: header, kvs: kvs)
        return mirror.values
    }

    @Test func oneTransactionIsOneBurstWithEachKeysOldAndNewValue() async throws {
        let server = try EtcdServer()
        try await server.start()
        defer { server.stop() }
        let writer = EtcdClient(endpoints: [server.endpoint])
        _ = try await Self.put(writer, ["theme": "dark"])
        let record = Record()
        let follower = Self.follower(of: server, recordingInto: record)
        follower.start()
        defer { follower.stop() }
        #expect(await eventually { record.last("theme") == "dark" })
        let burstsBefore = record.bursts
        _ = try await Self.put(writer, ["theme": "light", "fontSize": 14, "übersicht": true])
        #expect(await eventually { record.last("fontSize") == 14 })
        #expect(record.bursts == burstsBefore + 1)
        #expect(record.last("theme") == "light")
        #expect(record.last("übersicht") == true)
        _ = try await Self.put(writer, [:], delete: ["theme"])
        #expect(await eventually { follower.values["theme"] == nil })
        // The follower updates its values before it calls back: wait for the record too.
        #expect(await eventually { record.news("theme").last == .some(nil) })
        #expect(record.brokenChains.isEmpty)
        #expect(follower.values == (try await Self.etcdValues(writer)))
    }

    /// Messages are applied on the watch's reading thread; once `stop()` returns, a message that
    /// thread reads changes nothing, though the watch it came on is still being torn down.
    @Test func aStoppedFollowerAppliesNoLaterMessage() async throws {
        let server = try EtcdServer()
        try await server.start()
        defer { server.stop() }
        let writer = EtcdClient(endpoints: [server.endpoint])
        _ = try await Self.put(writer, ["theme": "dark"])
        let record = Record()
        let follower = Self.follower(of: server, recordingInto: record)
        follower.start()
        #expect(await eventually { record.last("theme") == "dark" && follower.watchedEndpoint != nil })
        let witness = EtcdSuiteFollower(client: EtcdClient(endpoints: [server.endpoint]), prefix: Self.prefix) { _, _ in
        }
        witness.start()
        defer { witness.stop() }
        #expect(await eventually { witness.values["theme"] == "dark" && witness.watchedEndpoint != nil })
        let bursts = record.bursts
        follower.stop()
        for step in 1...20 { _ = try await Self.put(writer, ["counter": .integer(Int64(step))]) }
        // The witness's watch on the same member saw every put.
        #expect(await eventually { witness.values["counter"] == 20 })
        #expect(record.bursts == bursts)
        #expect(follower.values == ["theme": "dark"])
        #expect(follower.watchedEndpoint == nil)
    }

    @Test func killedAndRestartedEtcdLosesNoChangeAndLeavesNoDeletedKey() async throws {
        let server = try EtcdServer()
        try await server.start()
        defer { server.stop() }
        let writer = EtcdClient(endpoints: [server.endpoint])
        let record = Record()
        let follower = EtcdSuiteFollower(
            client: EtcdClient(endpoints: [server.endpoint], requestTimeout: 2), prefix: Self.prefix, idleTimeout: 5
        ) { changes, _ in record.add(changes) }
        follower.start()
        defer { follower.stop() }
        for round in 1...3 {
            for step in 1...20 { _ = try await Self.put(writer, ["counter": .integer(Int64(round * 100 + step))]) }
            _ = try await Self.put(writer, ["gone-\(round)": true])
            _ = try await Self.put(writer, [:], delete: ["gone-\(round)"])
            #expect(await eventually { record.last("counter") == .integer(Int64(round * 100 + 20)) })
            server.send(round == 2 ? SIGTERM : SIGKILL)
            server.waitForExit()
            #expect(
                await eventually {
                    if case .offline = follower.status { return true }
                    return false
                })
            try await server.start()
        }
        _ = try await Self.put(writer, ["after": "restart"])
        #expect(await eventually(within: 30) { follower.values["after"] == "restart" })
        #expect(await eventually { record.last("after") == "restart" }, "the record, which comes after the values")
        #expect(record.brokenChains.isEmpty, "chains broke for \(record.brokenChains)")
        #expect(follower.values == (try await Self.etcdValues(writer)))
        #expect(follower.resyncCount >= 4)
    }

    @Test func compactionWhileAwayIsANetChangeAndNeverLeavesADeletedKey() async throws {
        let server = try EtcdServer()
        try await server.start()
        defer { server.stop() }
        let writer = EtcdClient(endpoints: [server.endpoint])
        _ = try await Self.put(writer, ["k": 1, "doomed": "here"])
        let record = Record()
        let follower = Self.follower(of: server, recordingInto: record)
        follower.start()
        #expect(await eventually { follower.values["doomed"] == "here" })
        follower.stop()
        // While the follower is away: etcd issue 18089's sequence, then the history compacted.
        for value in 2...4 { _ = try await Self.put(writer, ["k": .integer(Int64(value))]) }
        let deletion = try await Self.put(writer, [:], delete: ["doomed"])
        _ = try await Self.put(writer, ["k": 5])
        try writer.compact(revision: deletion)
        follower.start()
        defer { follower.stop() }
        #expect(await eventually { record.last("k") == 5 })
        #expect(follower.values["doomed"] == nil)
        #expect(record.brokenChains.isEmpty)
        #expect(follower.values == (try await Self.etcdValues(writer)))
    }
}
