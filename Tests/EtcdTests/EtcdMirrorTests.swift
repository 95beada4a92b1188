import Foundation
import LiveDefaults
import TestSupport
import Testing

@testable import LiveDefaultsEtcd
@testable import LiveDefaultsEtcdClient

/// The pure mirror of a fleet suite: layout, normalisation, net changes.
@Suite struct EtcdMirrorTests {
    static let prefix = Data("/ld/v1/s/".utf8)

    static func kv(_ key: String, _ value: PropertyListValue?, revision: Int64, raw: Data? = nil) throws -> EtcdKeyValue
    {
        EtcdKeyValue(
            key: EtcdBytes(raw ?? prefix + Data(key.utf8)),
            value: try value.map { EtcdBytes(try EtcdMirror.encode($0)) },
            mod_revision: EtcdInt64(revision))
    }

    static func header(_ revision: Int64) -> EtcdResponseHeader {
        EtcdResponseHeader(cluster_id: EtcdUInt64(42), revision: EtcdInt64(revision))
    }

    @Test func aResyncGivesTheNetChangePerKey() throws {
        var mirror = EtcdMirror(prefix: Self.prefix)
        _ = mirror.resync(
            header: Self.header(5), kvs: [try Self.kv("a", 1, revision: 2), try Self.kv("b", "x", revision: 3)])
        let (changes, unreadable) = mirror.resync(
            header: Self.header(9), kvs: [try Self.kv("a", 1, revision: 2), try Self.kv("c", true, revision: 8)])
        #expect(unreadable.isEmpty)
        #expect(changes == [.init(key: "b", old: "x", new: nil), .init(key: "c", old: nil, new: true)])
        #expect(mirror.values == ["a": 1, "c": true])
        #expect(mirror.revision == 9)
        #expect(mirror.clusterID == 42)
    }

    @Test func eventsOfOneTransactionGiveOneNetChangePerKey() throws {
        var mirror = EtcdMirror(prefix: Self.prefix)
        _ = mirror.resync(header: Self.header(1), kvs: [try Self.kv("a", 1, revision: 1)])
        let events = [
            EtcdEvent(kv: try Self.kv("a", 2, revision: 4)), EtcdEvent(kv: try Self.kv("b", "new", revision: 4)),
            EtcdEvent(type: "DELETE", kv: try Self.kv("c", nil, revision: 4)),
        ]
        let (bursts, _) = mirror.apply(events)
        #expect(
            bursts == [
                .init(revision: 4, changes: [.init(key: "a", old: 1, new: 2), .init(key: "b", old: nil, new: "new")])
            ])
        #expect(mirror.revision == 4)
        // A put of an equal value changes nothing.
        #expect(mirror.apply([EtcdEvent(kv: try Self.kv("b", "new", revision: 6))]).bursts.isEmpty)
    }

    /// A watch that starts behind etcd gets every revision since in one message: each revision is a
    /// transaction of its own, and a value changed and changed back is two changes, not none.
    @Test func aMessageOfSeveralRevisionsGivesOneBurstPerRevision() throws {
        var mirror = EtcdMirror(prefix: Self.prefix)
        _ = mirror.resync(header: Self.header(2), kvs: [try Self.kv("size", 12, revision: 2)])
        let history = Self.prefix + Data("LiveDefaults.history/head".utf8)
        let events = [
            EtcdEvent(kv: try Self.kv("size", "big", revision: 3)),
            EtcdEvent(
                kv: EtcdKeyValue(key: EtcdBytes(history), value: EtcdBytes(Data("3".utf8)), mod_revision: EtcdInt64(3))),
            EtcdEvent(kv: try Self.kv("list", "a", revision: 4)),
            EtcdEvent(
                kv: EtcdKeyValue(key: EtcdBytes(history), value: EtcdBytes(Data("4".utf8)), mod_revision: EtcdInt64(4))),
            EtcdEvent(kv: try Self.kv("size", 12, revision: 5)),
            EtcdEvent(type: "DELETE", kv: try Self.kv("list", nil, revision: 5)),
            EtcdEvent(
                kv: EtcdKeyValue(key: EtcdBytes(history), value: EtcdBytes(Data("6".utf8)), mod_revision: EtcdInt64(5))),
        ]
        let (bursts, _) = mirror.apply(events)
        #expect(
            bursts == [
                .init(revision: 3, changes: [.init(key: "size", old: 12, new: "big")]),
                .init(revision: 4, changes: [.init(key: "list", old: nil, new: "a")]),
                .init(
                    revision: 5,
                    changes: [.init(key: "size", old: "big", new: 12), .init(key: "list", old: "a", new: nil)]),
            ])
        #expect(mirror.values == ["size": 12])
        #expect(mirror.revision == 5)
    }

    @Test func keysAreNormalisedAndTheLaterSpellingWins() throws {
        let composed = "caf\u{E9}"  // é as one scalar
        let decomposed = "cafe\u{301}"  // e and a combining accent
        #expect(EtcdMirror.etcdKey(decomposed, prefix: Self.prefix) == Self.prefix + Data(composed.utf8))
        var mirror = EtcdMirror(prefix: Self.prefix)
        _ = mirror.resync(
            header: Self.header(9),
            kvs: [
                try Self.kv(decomposed, "later", revision: 7, raw: Self.prefix + Data(decomposed.utf8)),
                try Self.kv(composed, "earlier", revision: 3),
            ])
        #expect(mirror.values == [composed: "later"])
        // Deleting the spelling that does not give the value changes nothing.
        let (bursts, _) = mirror.apply([EtcdEvent(type: "DELETE", kv: try Self.kv(composed, nil, revision: 10))])
        #expect(bursts.isEmpty)
        #expect(mirror.values == [composed: "later"])
    }

    @Test func aValueThatIsNotAPropertyListIsReportedAndReadAsAbsent() throws {
        var mirror = EtcdMirror(prefix: Self.prefix)
        let bad = EtcdKeyValue(
            key: EtcdBytes(Self.prefix + Data("k".utf8)), value: EtcdBytes("not a plist <"), mod_revision: EtcdInt64(4))
        let (changes, unreadable) = mirror.resync(
            header: Self.header(4), kvs: [bad, try Self.kv("ok", 1, revision: 2)])
        #expect(unreadable.map(\.key) == ["k"])
        #expect(unreadable.first?.revision == 4)
        #expect(changes == [.init(key: "ok", old: nil, new: 1)])
        #expect(mirror.values == ["ok": 1])
    }
}
