import Foundation
import TestSupport
import Testing

@testable import LiveDefaultsEtcd
@testable import LiveDefaultsEtcdClient

/// The etcd gateway client against a real etcd member on loopback (skipped, saying why, where etcd
/// is not installed; CI sets LIVEDEFAULTS_REQUIRE_ETCD=1, so a missing etcd fails there).
@Suite(.requiresEtcd, .serialized)
struct EtcdClientTests {
    static let prefix = Data("/livedefaults/v1/com.example.fleet/".utf8)

    static func key(_ name: String) -> Data { prefix + Data(name.utf8) }

    static func text(_ data: Data?) -> String? { data.map { String(decoding: $0, as: UTF8.self) } }

    @Test func prefixEndIsTheFirstKeyAfterThePrefix() {
        #expect(EtcdClient.prefixEnd(Data("/ld/s/".utf8)) == Data("/ld/s0".utf8))
        #expect(EtcdClient.prefixEnd(Data([0x61, 0xff])) == Data([0x62]))
        #expect(EtcdClient.prefixEnd(Data([0xff, 0xff])) == Data([0]))
    }

    @Test func commitAndRangeRoundTripUnicodeKeysAndStayInsideThePrefix() async throws {
        let server = try EtcdServer()
        try await server.start()
        defer { server.stop() }
        let client = EtcdClient(endpoints: [server.endpoint])
        let names = ["theme", "thème", "日本語", "a/b", "emoji 🎛️"]
        let revision = try client.commit(
            puts: names.map { (Self.key($0), Data("value of \($0)".utf8)) }
                + [(Data("/livedefaults/v1/com.example.fleet2/theme".utf8), Data("elsewhere".utf8))],
            deletes: [])
        #expect(revision > 1)
        _ = try client.commit(puts: [], deletes: [Self.key("a/b")])
        let (header, kvs) = try client.range(prefix: Self.prefix)
        #expect(header.revisionValue == revision + 1)
        #expect(header.clusterID != 0)
        var found: [String: String] = [:]
        for kv in kvs {
            let name = String(decoding: try #require(kv.key).data.dropFirst(Self.prefix.count), as: UTF8.self)
            found[name] = Self.text(kv.value?.data)
        }
        #expect(
            found == [
                "theme": "value of theme", "thème": "value of thème", "日本語": "value of 日本語",
                "emoji 🎛️": "value of emoji 🎛️",
            ])
    }

    @Test func oneTransactionArrivesAsOneWatchMessage() async throws {
        let server = try EtcdServer()
        try await server.start()
        defer { server.stop() }
        let client = EtcdClient(endpoints: [server.endpoint])
        let (header, _) = try client.range(prefix: Self.prefix)
        let watch = try client.watch(prefix: Self.prefix, fromRevision: header.revisionValue + 1)
        defer { watch.cancel() }
        var messages = watch.messages.makeAsyncIterator()
        let created = try #require(try await messages.next())
        #expect(created.created == true)
        let revision = try client.commit(
            puts: [(Self.key("a"), Data("1".utf8)), (Self.key("b"), Data("2".utf8)), (Self.key("c"), Data("3".utf8))],
            deletes: [])
        var message = try #require(try await messages.next())
        while message.events == nil { message = try #require(try await messages.next()) }  // progress
        let events = try #require(message.events)
        #expect(events.count == 3)
        #expect(events.allSatisfy { $0.kv?.mod_revision?.value == revision && $0.type == nil })
    }

    @Test func rangeThenWatchFromTheNextRevisionLeavesNoGapWhileAnotherClientWrites() async throws {
        let server = try EtcdServer()
        try await server.start()
        defer { server.stop() }
        let writer = EtcdClient(endpoints: [server.endpoint])
        let total = 200
        let writing = Task {
            for value in 1...total {
                _ = try writer.commit(puts: [(Self.key("n"), Data("\(value)".utf8))], deletes: [])
            }
        }
        // Start while the writer runs: whatever the range saw, the watch continues from it.
        let client = EtcdClient(endpoints: [server.endpoint])
        let (header, kvs) = try client.range(prefix: Self.prefix)
        var last = kvs.first.flatMap { Int(Self.text($0.value?.data) ?? "") } ?? 0
        let watch = try client.watch(prefix: Self.prefix, fromRevision: header.revisionValue + 1)
        defer { watch.cancel() }
        var gaps = 0
        for try await message in watch.messages {
            for event in message.events ?? [] {
                let value = Int(Self.text(event.kv?.value?.data) ?? "") ?? -1
                if value != last + 1 { gaps += 1 }
                last = value
            }
            if last == total { break }
        }
        try await writing.value
        #expect(gaps == 0)
        #expect(last == total)
    }

    /// Reads the stream until it ends: nil for a clean end, else the error it ended with.
    static func end(of watch: EtcdWatch) async -> (any Error)? {
        do {
            for try await _ in watch.messages {}
            return nil
        } catch {
            return error
        }
    }

    @Test func sigtermAndSigkillOfEtcdEndTheStream() async throws {
        let server = try EtcdServer()
        try await server.start()
        defer { server.stop() }
        let client = EtcdClient(endpoints: [server.endpoint])
        let first = try client.watch(prefix: Self.prefix, fromRevision: 1)
        var iterator = first.messages.makeAsyncIterator()
        #expect(try await iterator.next()?.created == true)
        server.send(SIGTERM)
        server.waitForExit()
        // etcd stopping politely ends the stream too (its response is cut short: libcurl says a
        // partial transfer), so a follower reconnects rather than wait forever.
        let stopped = await Self.end(of: first)
        #expect(stopped == nil || (stopped as? EtcdError)?.kind == .unavailable, "\(String(describing: stopped))")

        try await server.start()
        let second = try client.watch(prefix: Self.prefix, fromRevision: 1)
        var secondIterator = second.messages.makeAsyncIterator()
        #expect(try await secondIterator.next()?.created == true)
        server.send(SIGKILL)
        let broken = await Self.end(of: second)
        #expect((broken as? EtcdError)?.kind == .unavailable, "\(String(describing: broken))")
    }

    @Test func aWatchFromACompactedRevisionIsCanceledWithTheCompactRevision() async throws {
        let server = try EtcdServer()
        try await server.start()
        defer { server.stop() }
        let client = EtcdClient(endpoints: [server.endpoint])
        for value in 1...5 { _ = try client.commit(puts: [(Self.key("k"), Data("\(value)".utf8))], deletes: []) }
        let head = try client.range(prefix: Self.prefix).header.revisionValue
        try client.compact(revision: head)
        let watch = try client.watch(prefix: Self.prefix, fromRevision: 2)
        var canceled: EtcdWatchResult?
        var ended: (any Error)?
        do {
            for try await message in watch.messages where message.canceled == true { canceled = message }
        } catch {
            ended = error
        }
        #expect(canceled?.compact_revision?.value == head)
        #expect("\(String(describing: ended))".contains("compacted"))
    }

    @Test func aHungMemberEndsTheStreamAtTheIdleTimeout() async throws {
        let server = try EtcdServer()
        try await server.start(progressInterval: "500ms")
        defer { server.stop() }
        let client = EtcdClient(endpoints: [server.endpoint])
        let watch = try client.watch(prefix: Self.prefix, fromRevision: 1, idleTimeout: 2)
        var iterator = watch.messages.makeAsyncIterator()
        #expect(try await iterator.next()?.created == true)
        #expect(await server.freeze())
        defer { server.send(SIGCONT) }
        let started = ContinuousClock.now
        let ended = await Self.end(of: watch)
        #expect((ended as? EtcdError)?.kind == .unavailable, "\(String(describing: ended))")
        // The idle timeout (2 s) ended it, not a deadline of the test's own.
        #expect(ContinuousClock.now - started < .seconds(30))
    }
}

/// Writes under contention, against a real etcd.
@Suite(.requiresEtcd, .serialized)
struct EtcdWriteTests {
    static let prefix = Data("/livedefaults/v1/com.example.writes/".utf8)
    static func key(_ name: String) -> Data { prefix + Data(name.utf8) }

    @Test func compareAndSetUnderContentionLosesNoIncrement() async throws {
        let server = try EtcdServer()
        try await server.start()
        defer { server.stop() }
        let writers = 4
        let increments = 25
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<writers {
                group.addTask {
                    let client = EtcdClient(endpoints: [server.endpoint])
                    for _ in 0..<increments {
                        _ = try client.update(key: Self.key("counter")) { old in
                            let value = old.flatMap { Int(String(decoding: $0, as: UTF8.self)) } ?? 0
                            return Data("\(value + 1)".utf8)
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let (_, kvs) = try EtcdClient(endpoints: [server.endpoint]).range(prefix: Self.key("counter"))
        #expect(
            kvs.first.map { String(decoding: $0.value?.data ?? Data(), as: UTF8.self) } == "\(writers * increments)")
    }

    @Test func twoWritersOnDisjointKeysLoseNothingAndOnOneKeyTheLaterCommitWins() async throws {
        let server = try EtcdServer()
        try await server.start()
        defer { server.stop() }
        let first = EtcdClient(endpoints: [server.endpoint])
        let second = EtcdClient(endpoints: [server.endpoint])
        async let a: Void = {
            for step in 0..<50 {
                _ = try first.commit(puts: [(Self.key("a-\(step)"), Data("a".utf8))], deletes: [])
            }
        }()
        async let b: Void = {
            for step in 0..<50 {
                _ = try second.commit(puts: [(Self.key("b-\(step)"), Data("b".utf8))], deletes: [])
            }
        }()
        _ = try await (a, b)
        #expect(try first.range(prefix: Self.prefix).kvs.count == 100)
        let one = try first.commit(puts: [(Self.key("shared"), Data("first".utf8))], deletes: [])
        let two = try second.commit(puts: [(Self.key("shared"), Data("second".utf8))], deletes: [])
        #expect(two > one)
        let shared = try first.range(prefix: Self.key("shared")).kvs.first
        #expect(shared?.value?.data == Data("second".utf8))
        #expect(shared?.mod_revision?.value == two)
    }

    @Test func aFlushOfMoreThanATransactionHoldsIsSplitAndEveryKeyLands() async throws {
        let server = try EtcdServer()
        try await server.start()
        defer { server.stop() }
        let client = EtcdClient(endpoints: [server.endpoint])
        let puts = (0..<300).map { (Self.key("bulk-\($0)"), Data("\($0)".utf8)) }
        _ = try client.commit(puts: puts, deletes: [])
        #expect(try client.range(prefix: Self.key("bulk-")).kvs.count == 300)
    }
}
