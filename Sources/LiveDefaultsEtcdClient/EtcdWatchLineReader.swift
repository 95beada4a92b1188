import Foundation

/// Reads one line of a watch stream (``EtcdWatchLine``) without `JSONDecoder`: etcd's fields
/// mapped from the line's ``JSONValue``.
///
/// Every watch message goes through this between the bytes and the observers. `JSONDecoder`'s
/// generic containers took about 100 µs a message on a 2-core machine, where a message arrives
/// with cold caches every few milliseconds; the JSON parser (JSONValue.swift) and this mapping of
/// the few fields the follower reads take a few (docs/design.md, "Fleet settings: from the bytes
/// to the observer"; the benchmark's `etcd-json` rows measure it against `JSONSerialization` and
/// json-c). It accepts what `JSONDecoder` accepts for these types: any valid JSON, unknown fields
/// ignored, `null` for an absent field, 64-bit integers as strings or numbers, bytes as base64;
/// anything else throws ``EtcdWatchLineReader/Failure`` naming what was wrong and where.
package enum EtcdWatchLineReader {
    package typealias Failure = JSONFailure

    /// The line's result or error.
    package static func read(_ line: Data) throws -> EtcdWatchLine {
        let fields = try JSONValue.parse(line, what: "the watch message").object("the line")
        return EtcdWatchLine(
            result: try fields["result"].flatMap { try result($0) },
            error: try fields["error"].flatMap { try streamError($0) })
    }

    // MARK: The mapping

    private static func result(_ node: JSONValue) throws -> EtcdWatchResult? {
        guard let fields = try node.optionalObject("result") else { return nil }
        var events: [EtcdEvent]?
        if let list = try fields["events"]?.optionalArray("events") {
            events = []
            for item in list { if let event = try event(item) { events?.append(event) } }
        }
        return EtcdWatchResult(
            header: try fields["header"].flatMap { try header($0) },
            watch_id: try fields["watch_id"].flatMap { try integer($0, "watch_id") },
            created: try fields["created"]?.optionalBool("created"),
            canceled: try fields["canceled"]?.optionalBool("canceled"),
            compact_revision: try fields["compact_revision"].flatMap { try integer($0, "compact_revision") },
            cancel_reason: try fields["cancel_reason"]?.optionalString("cancel_reason"),
            events: events)
    }

    private static func header(_ node: JSONValue) throws -> EtcdResponseHeader? {
        guard let fields = try node.optionalObject("header") else { return nil }
        return EtcdResponseHeader(
            cluster_id: try fields["cluster_id"].flatMap { try integer($0, "cluster_id") },
            member_id: try fields["member_id"].flatMap { try integer($0, "member_id") },
            revision: try fields["revision"].flatMap { try integer($0, "revision") },
            raft_term: try fields["raft_term"].flatMap { try integer($0, "raft_term") })
    }

    private static func event(_ node: JSONValue) throws -> EtcdEvent? {
        guard let fields = try node.optionalObject("an event") else { return nil }
        return EtcdEvent(
            type: try fields["type"]?.optionalString("type"), kv: try fields["kv"].flatMap { try keyValue($0) })
    }

    private static func keyValue(_ node: JSONValue) throws -> EtcdKeyValue? {
        guard let fields = try node.optionalObject("kv") else { return nil }
        return EtcdKeyValue(
            key: try fields["key"].flatMap { try bytes($0, "key") },
            value: try fields["value"].flatMap { try bytes($0, "value") },
            create_revision: try fields["create_revision"].flatMap { try integer($0, "create_revision") },
            mod_revision: try fields["mod_revision"].flatMap { try integer($0, "mod_revision") },
            version: try fields["version"].flatMap { try integer($0, "version") })
    }

    private static func streamError(_ node: JSONValue) throws -> EtcdStreamError? {
        guard let fields = try node.optionalObject("error") else { return nil }
        func code(_ name: String) throws -> Int? {
            let value: EtcdInteger<Int64>? = try fields[name].flatMap { try integer($0, name) }
            return value.map { Int($0.value) }
        }
        return EtcdStreamError(
            grpc_code: try code("grpc_code"), http_code: try code("http_code"),
            message: try fields["message"]?.optionalString("message"))
    }

    private static func integer<Value: FixedWidthInteger & Codable & Sendable>(_ node: JSONValue, _ name: String) throws
        -> EtcdInteger<Value>?
    {
        switch node {
        case .null: return nil
        case .string(let text), .number(let text):
            guard let value = Value(text) else {
                throw Failure(description: "\"\(name)\" is \"\(text.prefix(40))\", not a 64-bit integer")
            }
            return EtcdInteger(value)
        default: throw Failure(description: "\"\(name)\" is \(node.kind), not an integer")
        }
    }

    private static func bytes(_ node: JSONValue, _ name: String) throws -> EtcdBytes? {
        guard let text = try node.optionalString(name) else { return nil }
        guard let data = Data(base64Encoded: text) else {
            throw Failure(description: "\"\(name)\" is not base64: \(text.prefix(40))")
        }
        return EtcdBytes(data)
    }
}
