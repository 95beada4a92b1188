import Foundation
import LiveDefaults
import LiveDefaultsEtcdClient
import LiveDefaultsPropertyList

/// One suite's values as etcd holds them, at one revision: the pure part of a fleet suite
/// (docs/design.md, "Fleet settings: the mirror").
///
/// Layout: one etcd key per defaults key, `<prefix><key>` with the key's UTF-8 bytes, and the value
/// a property-list document holding that one value, so types stay exact. etcd compares bytes and
/// `String` compares canonical equivalence, so a key is normalised to NFC: two etcd keys that
/// normalise alike are one defaults key, and the one written last (the higher modification
/// revision) gives its value. The keys under `<prefix>LiveDefaults.history/` are the suite's
/// history (``FleetAudit``), never values.
struct EtcdMirror: Sendable {
    /// One key's change, with the values before and after it.
    struct Change: Sendable, Equatable {
        var key: String
        var old: PropertyListValue?
        var new: PropertyListValue?
    }

    /// A value that is not a property-list document: reported, and read as absent.
    struct UnreadableValue: Sendable, Equatable {
        var key: String
        var revision: Int64
        var problem: String
    }

    private struct Entry: Sendable {
        var rawKey: Data
        var modRevision: Int64
        var value: PropertyListValue?
    }

    let prefix: Data
    /// The suite's audit keys (``FleetAudit``): never values. The mirror keeps the head and the
    /// retention, which writers start from.
    let auditKeys: FleetAudit.Keys
    private var audit = FleetAudit.Base()
    private var entries: [String: Entry] = [:]
    /// The revision the mirror is at (a range's header, then each applied event's).
    private(set) var revision: Int64 = 0
    /// The cluster the revision belongs to; 0 before the first range.
    private(set) var clusterID: UInt64 = 0

    init(prefix: Data) {
        self.prefix = prefix
        self.auditKeys = FleetAudit.Keys(prefix: prefix)
    }

    /// What an audited write of `keys` starts from: the head and retention, and each key's
    /// modification revision and value, as the mirror holds them.
    func auditBase(for keys: some Sequence<String>) -> FleetAudit.Base {
        var base = audit
        for key in keys {
            let etcdKey = Self.etcdKey(key, prefix: prefix)
            if let entry = entries[key.precomposedStringWithCanonicalMapping], entry.rawKey == etcdKey {
                base.keys[key] = (entry.modRevision, entry.value)
            } else {
                base.keys[key] = (0, nil)
            }
        }
        return base
    }

    /// Notes an audit key's news (the head, the retention); true for any key of the history's
    /// namespace, which is no value.
    private mutating func noteAudit(_ kv: EtcdKeyValue, deleted: Bool) -> Bool {
        guard let raw = kv.key?.data, raw.starts(with: auditKeys.namespace) else { return false }
        if raw == auditKeys.head {
            audit.headRevision = deleted ? 0 : kv.mod_revision?.value ?? 0
            audit.next = deleted ? 1 : FleetAudit.next(fromHead: kv.value?.data)
        } else if raw == auditKeys.retention {
            audit.maxEntries = FleetAudit.maxEntries(fromRetention: deleted ? nil : kv.value?.data)
        }
        return true
    }

    /// The values, as reads see them.
    var values: [String: PropertyListValue] { entries.compactMapValues(\.value) }

    /// The etcd key of a defaults key: the prefix and the key's NFC form in UTF-8.
    static func etcdKey(_ key: String, prefix: Data) -> Data {
        prefix + Data(key.precomposedStringWithCanonicalMapping.utf8)
    }

    /// A value as it is stored: an XML property-list document (readable with `etcdctl get`).
    static func encode(_ value: PropertyListValue) throws -> Data {
        try PropertyListCodec.encode(value, format: .xml)
    }

    /// Replaces everything with a range's result.
    ///
    /// - Parameters:
    ///   - header: The range's header (revision, cluster).
    ///   - kvs: The range's keys and values.
    ///   - diffing: Whether to compute the net change per key (a fleet suite's store takes the
    ///     range whole and diffs it itself, once).
    /// - Returns: The net change per key from what the mirror held to what etcd holds now (none
    ///   when not `diffing`), and the values that could not be read.
    mutating func resync(header: EtcdResponseHeader, kvs: [EtcdKeyValue], diffing: Bool = true) -> (
        changes: [Change], unreadable: [UnreadableValue]
    ) {
        var fresh: [String: Entry] = [:]
        var unreadable: [UnreadableValue] = []
        audit = FleetAudit.Base()
        for kv in kvs {
            if noteAudit(kv, deleted: false) { continue }
            guard let (key, entry, problem) = entry(of: kv) else { continue }
            if let problem { unreadable.append(problem) }
            if let existing = fresh[key], existing.modRevision > entry.modRevision { continue }
            fresh[key] = entry
        }
        var changes: [Change] = []
        if diffing {
            entries.forEachDifference(to: fresh, value: \.value) { changes.append(Change(key: $0, old: $1, new: $2)) }
        }
        entries = fresh
        revision = header.revisionValue
        clusterID = header.clusterID
        return (changes.sorted { $0.key < $1.key }, unreadable)
    }

    /// One transaction's net change per key, at the revision it committed at.
    struct Burst: Sendable, Equatable {
        var revision: Int64
        var changes: [Change]
    }

    /// Applies one watch message's events, in order.
    ///
    /// A message is not always one transaction: a watch that starts behind etcd's revision (a write
    /// between the range and the watch's creation) gets every revision since in one message. Each
    /// revision is one transaction, so each gives its own burst: a value changed and changed back
    /// within the message is two changes, not none (docs/design.md, "Fleet settings: the mirror").
    ///
    /// - Returns: The net change per key of each transaction (revision) in the message that changed
    ///   a value, in order, and the values that could not be read.
    mutating func apply(_ events: [EtcdEvent]) -> (bursts: [Burst], unreadable: [UnreadableValue]) {
        var bursts: [Burst] = []
        var unreadable: [UnreadableValue] = []
        var start = events.startIndex
        while start < events.endIndex {
            // Events are in revision order: the run at the first one's revision is one transaction.
            let burstRevision = events[start].kv?.mod_revision?.value ?? 0
            var end = start + 1
            while end < events.endIndex, (events[end].kv?.mod_revision?.value ?? 0) == burstRevision { end += 1 }
            let (changes, problems) = applyTransaction(events[start..<end])
            unreadable += problems
            if !changes.isEmpty { bursts.append(Burst(revision: revision, changes: changes)) }
            start = end
        }
        return (bursts, unreadable)
    }

    /// Applies one transaction's events: its net change per key.
    private mutating func applyTransaction(_ events: ArraySlice<EtcdEvent>) -> (
        changes: [Change], unreadable: [UnreadableValue]
    ) {
        var before: [String: PropertyListValue?] = [:]
        var order: [String] = []
        var unreadable: [UnreadableValue] = []
        for event in events {
            if let kv = event.kv, noteAudit(kv, deleted: event.type == "DELETE") {
                revision = max(revision, kv.mod_revision?.value ?? 0)
                continue
            }
            guard let kv = event.kv, let (key, entry, problem) = entry(of: kv) else { continue }
            if before[key] == nil {
                before[key] = .some(entries[key]?.value)
                order.append(key)
            }
            revision = max(revision, entry.modRevision)
            if event.type == "DELETE" {
                // Only the spelling that gives the key its value removes it.
                if entries[key]?.rawKey == entry.rawKey { entries[key] = nil }
                continue
            }
            if let problem { unreadable.append(problem) }
            if let existing = entries[key], existing.rawKey != entry.rawKey, existing.modRevision > entry.modRevision {
                continue
            }
            entries[key] = entry
        }
        var changes: [Change] = []
        for key in order {
            let old = before[key] ?? nil
            let new = entries[key]?.value
            if old != new { changes.append(Change(key: key, old: old, new: new)) }
        }
        return (changes, unreadable)
    }

    private func entry(of kv: EtcdKeyValue) -> (key: String, entry: Entry, problem: UnreadableValue?)? {
        guard let raw = kv.key?.data, raw.starts(with: prefix) else { return nil }
        let name = raw.dropFirst(prefix.count)
        let text = String(decoding: name, as: UTF8.self)
        // ASCII is its own NFC form; Foundation's normalisation costs more than the rest of the event.
        let key = name.allSatisfy { $0 < 0x80 } ? text : text.precomposedStringWithCanonicalMapping
        let modRevision = kv.mod_revision?.value ?? 0
        let bytes = kv.value?.data ?? Data()
        do {
            let value = try PropertyListCodec.decode(bytes).value
            return (key, Entry(rawKey: raw, modRevision: modRevision, value: value), nil)
        } catch {
            let problem = UnreadableValue(key: key, revision: modRevision, problem: error.message)
            return (key, Entry(rawKey: raw, modRevision: modRevision, value: nil), problem)
        }
    }
}
