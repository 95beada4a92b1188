import Foundation
import LiveDefaults
import LiveDefaultsEtcdClient
import LiveDefaultsPropertyList

/// A fleet suite's history: audit keys under the suite's own prefix, each written in the etcd
/// transaction of the change it describes (docs/design.md, "History: a fleet suite's audit keys").
///
/// Layout, under `<prefix>LiveDefaults.history/`:
/// - `head`: the number the next entry gets, in decimal. Every audited write compares its
///   modification revision, so the entries are numbered 1, 2, 3… in the order of the changes.
/// - `retention`: set by the operator (`etcdctl put`), the most entries kept, in decimal; absent:
///   ``defaultMaxEntries``.
/// - `entries/<20-digit number>`: one change, an XML property list (the time in seconds since
///   1970 — a plist date keeps whole seconds —, key, old and new value, origin, writer).
///
/// None of them is a setting: the mirror leaves the whole namespace out of the values
/// (``EtcdMirror``), and ranges of the suite leave the entries out.
enum FleetAudit {
    /// The namespace under the suite's prefix.
    static let namespace = "LiveDefaults.history/"
    /// The most entries kept when the operator set no `retention` key.
    static let defaultMaxEntries: UInt64 = 10_000
    /// The most changes one audited transaction carries: each change is a put and an entry, with
    /// the head and the pruning beside them, within etcd's 128 operations.
    static let changesPerTransaction = 60
    /// How many times an audited write is tried when others keep changing the suite meanwhile.
    static let attempts = 64

    /// The audit keys of the suite at `prefix`.
    struct Keys: Sendable {
        let namespace: Data
        let head: Data
        let retention: Data
        let entries: Data

        init(prefix: Data) {
            namespace = prefix + Data(FleetAudit.namespace.utf8)
            head = namespace + Data("head".utf8)
            retention = namespace + Data("retention".utf8)
            entries = namespace + Data("entries/".utf8)
        }

        /// The key of entry `id`: fixed-width, so the keys sort as the numbers do.
        func entry(_ id: UInt64) -> Data {
            let digits = String(id)
            return entries + Data((String(repeating: "0", count: max(0, 20 - digits.count)) + digits).utf8)
        }

        /// The entry number a key names, nil for another key.
        func id(ofEntry key: Data) -> UInt64? {
            guard key.starts(with: entries) else { return nil }
            return UInt64(String(decoding: key.dropFirst(entries.count), as: UTF8.self))
        }
    }

    /// What an audited write starts from: the head, the retention, and each key's modification
    /// revision (0: absent) and value, as last seen.
    struct Base: Sendable {
        var headRevision: Int64 = 0
        var next: UInt64 = 1
        var maxEntries: UInt64 = FleetAudit.defaultMaxEntries
        var keys: [String: (modRevision: Int64, value: PropertyListValue?)] = [:]
    }

    /// The head's value: the next entry's number.
    static func next(fromHead data: Data?) -> UInt64 {
        positiveDecimal(data) ?? 1
    }

    /// The retention key's value: the most entries kept (at least 1); the default when absent or
    /// not a number.
    static func maxEntries(fromRetention data: Data?) -> UInt64 {
        positiveDecimal(data) ?? defaultMaxEntries
    }

    /// A `head` or `retention` value: a decimal number, white space around it allowed, at least 1
    /// (0 counts as 1); nil when absent or not a number.
    private static func positiveDecimal(_ data: Data?) -> UInt64? {
        data.flatMap { UInt64(String(decoding: $0, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) }
            .map { max(1, $0) }
    }

    /// One entry as its key holds it.
    static func encode(
        date: Date, key: String, old: PropertyListValue?, new: PropertyListValue?,
        origin: DefaultsHistoryEntry.Origin, writer: DefaultsHistoryEntry.Writer
    ) throws -> Data {
        var entry: [String: PropertyListValue] = [
            "time": .real(date.timeIntervalSince1970), "key": .string(key), "origin": .string(origin.rawValue),
            "writer": .dictionary([
                "uid": .integer(Int64(writer.userID)), "user": .string(writer.userName),
                "machine": .string(writer.machineID), "host": .string(writer.hostName),
                "pid": .integer(Int64(writer.processID)), "executable": .string(writer.executable),
                "command": .array(writer.command.map { .string($0) }),
            ]),
        ]
        entry["old"] = old
        entry["new"] = new
        return try PropertyListCodec.encode(.dictionary(entry), format: .xml)
    }

    /// An entry read back; nil when the key does not hold one.
    static func decode(_ data: Data, id: UInt64, suite: String) -> DefaultsHistoryEntry? {
        guard case .dictionary(let entry)? = try? PropertyListCodec.decode(data).value,
            case .real(let time)? = entry["time"], case .string(let key)? = entry["key"],
            case .string(let originName)? = entry["origin"],
            let origin = DefaultsHistoryEntry.Origin(rawValue: originName)
        else { return nil }
        var writer: DefaultsHistoryEntry.Writer?
        if case .dictionary(let who)? = entry["writer"] {
            func text(_ name: String) -> String { who[name]?.stringValue ?? "" }
            func number(_ name: String) -> Int64 {
                if case .integer(let value)? = who[name] { return value }
                return 0
            }
            var command: [String] = []
            if case .array(let words)? = who["command"] { command = words.compactMap(\.stringValue) }
            writer = DefaultsHistoryEntry.Writer(
                userID: UInt32(truncatingIfNeeded: number("uid")), userName: text("user"), machineID: text("machine"),
                hostName: text("host"), processID: Int32(truncatingIfNeeded: number("pid")),
                executable: text("executable"), command: command)
        }
        return DefaultsHistoryEntry(
            id: id, date: Date(timeIntervalSince1970: time), suite: suite, key: key, oldValue: entry["old"],
            newValue: entry["new"], origin: origin,
            writer: writer)
    }

    /// Where a fleet suite's history is read from: its audit keys, in one range.
    struct Source: SuiteHistorySource {
        let client: EtcdClient
        let prefix: Data
        let suite: String

        func readHistory() throws(DefaultsError) -> SuiteHistory {
            do {
                return try FleetAudit.read(client: client, prefix: prefix, suite: suite)
            } catch {
                throw DefaultsError(
                    .remoteUnavailable,
                    "Could not read the history of fleet suite \"\(suite)\" "
                        + "(\(String(decoding: Keys(prefix: prefix).namespace, as: UTF8.self))) from etcd at "
                        + "\(client.endpoints.map(\.absoluteString).joined(separator: ", ")): \(RemoteProblem(error)).",
                    suite: suite, underlying: SendableDescription(error))
            }
        }
    }

    /// The history of the suite at `prefix`: every audit key, in one range.
    ///
    /// - Throws: ``EtcdError`` when etcd cannot be reached or refuses.
    static func read(client: EtcdClient, prefix: Data, suite: String) throws -> SuiteHistory {
        let keys = Keys(prefix: prefix)
        let kvs = try client.range(prefix: keys.namespace).kvs
        var next: UInt64 = 1
        var found: [(revision: Int64, entry: DefaultsHistoryEntry)] = []
        for kv in kvs {
            guard let key = kv.key?.data else { continue }
            if key == keys.head {
                next = FleetAudit.next(fromHead: kv.value?.data)
            } else if let id = keys.id(ofEntry: key),
                let entry = FleetAudit.decode(kv.value?.data ?? Data(), id: id, suite: suite)
            {
                found.append((kv.mod_revision?.value ?? 0, entry))
            }
        }
        // The change's revision orders the entries; the head makes their numbers follow it.
        found.sort { ($0.revision, $0.entry.id) < ($1.revision, $1.entry.id) }
        let entries = found.map(\.entry)
        let nextID = max(next, (entries.last?.id ?? 0) + 1)
        return SuiteHistory(entries: entries, isPruned: (entries.first?.id ?? nextID) > 1, nextID: nextID)
    }
}

extension FleetBackend: HistoryKeepingBackend {
    /// The suite's audit keys.
    var historySource: (any SuiteHistorySource)? {
        FleetAudit.Source(client: client, prefix: suite.prefix, suite: suite.name)
    }
}
