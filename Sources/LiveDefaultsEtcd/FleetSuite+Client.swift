import Foundation
import LiveDefaults
import LiveDefaultsEtcdClient
import LiveDefaultsPropertyList

extension FleetSuite {
    /// The one place an etcd client is made from a suite's description (docs/design.md, "Fleet
    /// settings: the remote store"): its endpoints, credentials, certificate authorities, client
    /// certificate and request timeout. The suite's store, its migrations and the `defaults`
    /// command (``EtcdRemoteSuite``) all take theirs from here, so that none connects otherwise
    /// than the others (a migration once went without the client certificate, and a member
    /// started with `--client-cert-auth` refused it).
    func makeClient() -> EtcdClient {
        EtcdClient(
            endpoints: endpoints, credentials: credentials.map { ($0.user, $0.password) },
            requestTimeout: requestTimeout.timeInterval, certificateAuthorities: certificateAuthorities?.path,
            clientCertificate: clientCertificate.flatMap { certificate in clientKey.map { (certificate.path, $0.path) }
            })
    }
}

/// One write of a suite's keys to etcd, as every writer builds it (the suite's store, a migration,
/// the `defaults` command): each defaults key becomes the etcd key `<prefix><key>` (the key in
/// NFC), each value a property-list document of that one value; a migration adds what each key
/// must still be (its modification revision when read). Its audited commit writes each change's
/// audit key in the change's own transaction (``FleetAudit``, docs/design.md, "History: a fleet
/// suite's audit keys").
struct EtcdSuiteWrite {
    /// A value that cannot be encoded, and its key.
    struct EncodingFailure: Error, Sendable, CustomStringConvertible {
        var key: String
        var problem: SendableDescription
        var description: String { "the value of \"\(key)\" cannot be encoded: \(problem)" }
    }

    let prefix: Data
    private(set) var puts: [(key: Data, value: Data)] = []
    private(set) var deletes: [Data] = []
    /// Each change, in order: the key, its etcd key and its encoded value (nil: removed).
    private var changes: [(key: String, etcdKey: Data, value: PropertyListValue?, encoded: Data?)] = []
    /// The keys that must be as they were read: each etcd key's modification revision (0: absent).
    private(set) var unchanged: [(key: Data, modRevision: Int64)] = []

    init(prefix: Data) { self.prefix = prefix }

    /// Whether the write changes nothing.
    var isEmpty: Bool { puts.isEmpty && deletes.isEmpty }

    /// The keys the write sets or removes.
    var keys: [String] { changes.map(\.key) }

    /// Sets `key` to `value`; nil removes it.
    mutating func set(_ key: String, to value: PropertyListValue?) throws(EncodingFailure) {
        if key.hasPrefix(FleetAudit.namespace) {
            throw EncodingFailure(
                key: key,
                problem: SendableDescription(
                    EtcdError(
                        kind: .rejected(code: nil),
                        message: "keys under \(FleetAudit.namespace) hold the suite's history")))
        }
        let etcdKey = EtcdMirror.etcdKey(key, prefix: prefix)
        guard let value else {
            deletes.append(etcdKey)
            changes.append((key, etcdKey, nil, nil))
            return
        }
        do {
            let encoded = try EtcdMirror.encode(value)
            puts.append((etcdKey, encoded))
            changes.append((key, etcdKey, value, encoded))
        } catch {
            throw EncodingFailure(key: key, problem: SendableDescription(error))
        }
    }

    /// Commits only if `key` still has the modification revision `modRevision` (0: still absent).
    mutating func expect(_ key: String, modRevision: Int64) {
        unchanged.append((EtcdMirror.etcdKey(key, prefix: prefix), modRevision))
    }

    /// Sends the write in one transaction (several past etcd's 128 operations), no compare: per
    /// key the last commit wins. Writes no audit keys (tests' and tools' raw writes).
    ///
    /// - Returns: The revision of the (last) transaction.
    func commit(with client: EtcdClient) throws -> Int64 {
        try client.commit(puts: puts, deletes: deletes)
    }

    /// Sends the write in one transaction that applies only if every expected key is as it was
    /// read. Writes no audit keys.
    ///
    /// - Returns: Whether it applied, and etcd's revision.
    func commitIfUnchanged(with client: EtcdClient) throws -> (succeeded: Bool, revision: Int64) {
        try client.commit(puts: puts, deletes: deletes, unchanged: unchanged)
    }

    /// Sends the write with its audit keys: each change that changes a value gets an entry, in
    /// the transaction that makes it, holding the value it replaced (docs/design.md, "History: a
    /// fleet suite's audit keys").
    ///
    /// Each transaction applies only if the head and every key it changes still have the
    /// modification revisions `base` gives: then the old values recorded are the values replaced,
    /// and the entries' numbers follow the revisions. When one moved, the transaction reads them
    /// instead, and (`retrying`) is built again at once from what it read: per key the last
    /// commit still wins. Past ``FleetAudit/changesPerTransaction`` changes, several
    /// transactions, each with its own entries.
    ///
    /// - Parameters:
    ///   - client: The suite's client.
    ///   - base: The head, the retention and the keys' revisions and values as last seen (a
    ///     guess: a wrong one costs one more round trip).
    ///   - origin: Each key's origin.
    ///   - writer: Who writes.
    ///   - retrying: Whether to try again when a key moved; false: give up (a migration reads
    ///     again and runs its steps again).
    /// - Returns: Whether it applied, and the revision of the (last) transaction.
    /// - Throws: ``EtcdError`` from etcd; (unavailable) when the suite kept changing for
    ///   ``FleetAudit/attempts`` tries.
    func commitAudited(
        with client: EtcdClient, base: FleetAudit.Base, origin: (String) -> DefaultsHistoryEntry.Origin,
        writer: DefaultsHistoryEntry.Writer, retrying: Bool = true
    ) throws -> (succeeded: Bool, revision: Int64) {
        let keys = FleetAudit.Keys(prefix: prefix)
        // In key order: the entries of one transaction are numbered alike on every run.
        let changes = changes.sorted { $0.key < $1.key }
        var base = base
        var revision: Int64 = 0
        var start = 0
        while start < changes.count {
            let chunk = changes[start..<min(start + FleetAudit.changesPerTransaction, changes.count)]
            start += chunk.count
            var attempt = 0
            while true {
                attempt += 1
                let recorded = chunk.filter { base.keys[$0.key]?.value != $0.value }
                var puts = chunk.compactMap { change in change.encoded.map { (change.etcdKey, $0) } }
                let deletes = chunk.filter { $0.encoded == nil }.map(\.etcdKey)
                var deleteRanges: [(from: Data, to: Data)] = []
                var guarded = unchanged
                if !recorded.isEmpty {
                    let date = Date()
                    for (offset, change) in recorded.enumerated() {
                        let entry = try FleetAudit.encode(
                            date: date, key: change.key, old: base.keys[change.key]?.value ?? nil, new: change.value,
                            origin: origin(change.key), writer: writer)
                        puts.append((keys.entry(base.next + UInt64(offset)), entry))
                    }
                    let next = base.next + UInt64(recorded.count)
                    puts.append((keys.head, Data(String(next).utf8)))
                    // Retention, within the transaction: the entries before the newest
                    // `maxEntries` go, in one range deletion (bounded work per write).
                    if next > base.maxEntries + 1 {
                        deleteRanges.append((keys.entries, keys.entry(next - base.maxEntries)))
                    }
                    guarded.append((keys.head, base.headRevision))
                }
                // Every key, even one the base says keeps its value: were the base behind, an
                // unrecorded change would slip through.
                for change in chunk { guarded.append((change.etcdKey, base.keys[change.key]?.modRevision ?? 0)) }
                let outcome = try client.commit(
                    puts: puts, deletes: deletes, deleteRanges: deleteRanges, unchanged: guarded,
                    readOnFailure: [keys.head, keys.retention] + chunk.map(\.etcdKey))
                if outcome.succeeded {
                    revision = outcome.revision
                    for change in chunk {
                        base.keys[change.key] = (change.value == nil ? 0 : outcome.revision, change.value)
                    }
                    if !recorded.isEmpty {
                        base.next += UInt64(recorded.count)
                        base.headRevision = outcome.revision
                    }
                    break
                }
                guard retrying else { return (false, outcome.revision) }
                guard attempt < FleetAudit.attempts else {
                    throw EtcdError(
                        kind: .unavailable,
                        message:
                            "the suite kept changing: \(attempt) attempts to write \(chunk.count) key(s) with their "
                            + "audit keys all found another write in between")
                }
                // Another writer came in between: start again from what etcd holds now.
                let head = outcome.current[keys.head]
                base.headRevision = head?.mod_revision?.value ?? 0
                base.next = FleetAudit.next(fromHead: head?.value?.data)
                base.maxEntries = FleetAudit.maxEntries(fromRetention: outcome.current[keys.retention]?.value?.data)
                for change in chunk {
                    let kv = outcome.current[change.etcdKey]
                    base.keys[change.key] = (
                        kv?.mod_revision?.value ?? 0,
                        kv.flatMap { try? PropertyListCodec.decode($0.value?.data ?? Data()).value }
                    )
                }
            }
        }
        return (true, revision)
    }
}
