import Foundation

/// Reads one line of a watch stream (``EtcdWatchLine``) without `JSONDecoder`: etcd's fields
/// mapped as the line is read, by ``JSONReader``.
///
/// Every watch message goes through this between the bytes and the observers. `JSONDecoder`'s
/// generic containers took about 100 µs a message on a 2-core machine, where a message arrives
/// with cold caches every few milliseconds; this reader takes a few (docs/design.md, "Fleet
/// settings: from the bytes to the observer"; the benchmark's `etcd-json` rows measure it against
/// `JSONSerialization` and json-c). It accepts what `JSONDecoder` accepts for these types: any
/// valid JSON, unknown fields skipped (and checked), `null` for an absent field, a field given
/// twice read from its first value, 64-bit integers as strings or numbers, bytes as base64;
/// anything else throws ``EtcdWatchLineReader/Failure`` naming what was wrong and where.
package enum EtcdWatchLineReader {
    package typealias Failure = JSONFailure

    /// The line's result or error.
    package static func read(_ line: Data) throws -> EtcdWatchLine {
        try JSONReader.read(line, what: "the watch message") { reader in
            var line = EtcdWatchLine()
            var seen: UInt32 = 0
            let isObject = try reader.object("the line") { reader, name in
                if name.is("result"), JSONReader.first(&seen, 0) {
                    line.result = try result(&reader)
                } else if name.is("error"), JSONReader.first(&seen, 1) {
                    line.error = try streamError(&reader)
                } else {
                    try reader.skipValue()
                }
            }
            guard isObject else { throw Failure(description: "the line is null, not an object") }
            return line
        }
    }

    // MARK: The mapping

    private static func result(_ reader: inout JSONReader) throws -> EtcdWatchResult? {
        var result = EtcdWatchResult()
        var seen: UInt32 = 0
        let isObject = try reader.object("\"result\"") { reader, name in
            if name.is("header"), JSONReader.first(&seen, 0) {
                result.header = try header(&reader)
            } else if name.is("events"), JSONReader.first(&seen, 1) {
                var events: [EtcdEvent] = []
                let isArray = try reader.array("\"events\"") { reader in
                    if let event = try event(&reader) { events.append(event) }
                }
                result.events = isArray ? events : nil
            } else if name.is("watch_id"), JSONReader.first(&seen, 2) {
                result.watch_id = try integer(&reader, "\"watch_id\"")
            } else if name.is("created"), JSONReader.first(&seen, 3) {
                result.created = try reader.bool("\"created\"")
            } else if name.is("canceled"), JSONReader.first(&seen, 4) {
                result.canceled = try reader.bool("\"canceled\"")
            } else if name.is("compact_revision"), JSONReader.first(&seen, 5) {
                result.compact_revision = try integer(&reader, "\"compact_revision\"")
            } else if name.is("cancel_reason"), JSONReader.first(&seen, 6) {
                result.cancel_reason = try reader.string("\"cancel_reason\"")
            } else {
                try reader.skipValue()
            }
        }
        return isObject ? result : nil
    }

    private static func header(_ reader: inout JSONReader) throws -> EtcdResponseHeader? {
        var header = EtcdResponseHeader()
        var seen: UInt32 = 0
        let isObject = try reader.object("\"header\"") { reader, name in
            if name.is("revision"), JSONReader.first(&seen, 0) {
                header.revision = try integer(&reader, "\"revision\"")
            } else if name.is("cluster_id"), JSONReader.first(&seen, 1) {
                header.cluster_id = try integer(&reader, "\"cluster_id\"")
            } else if name.is("member_id"), JSONReader.first(&seen, 2) {
                header.member_id = try integer(&reader, "\"member_id\"")
            } else if name.is("raft_term"), JSONReader.first(&seen, 3) {
                header.raft_term = try integer(&reader, "\"raft_term\"")
            } else {
                try reader.skipValue()
            }
        }
        return isObject ? header : nil
    }

    private static func event(_ reader: inout JSONReader) throws -> EtcdEvent? {
        var event = EtcdEvent()
        var seen: UInt32 = 0
        let isObject = try reader.object("an event") { reader, name in
            if name.is("kv"), JSONReader.first(&seen, 0) {
                event.kv = try keyValue(&reader)
            } else if name.is("type"), JSONReader.first(&seen, 1) {
                event.type = try reader.string("\"type\"")
            } else {
                try reader.skipValue()
            }
        }
        return isObject ? event : nil
    }

    private static func keyValue(_ reader: inout JSONReader) throws -> EtcdKeyValue? {
        var keyValue = EtcdKeyValue()
        var seen: UInt32 = 0
        let isObject = try reader.object("\"kv\"") { reader, name in
            if name.is("key"), JSONReader.first(&seen, 0) {
                keyValue.key = try reader.base64("\"key\"").map(EtcdBytes.init)
            } else if name.is("value"), JSONReader.first(&seen, 1) {
                keyValue.value = try reader.base64("\"value\"").map(EtcdBytes.init)
            } else if name.is("mod_revision"), JSONReader.first(&seen, 2) {
                keyValue.mod_revision = try integer(&reader, "\"mod_revision\"")
            } else if name.is("create_revision"), JSONReader.first(&seen, 3) {
                keyValue.create_revision = try integer(&reader, "\"create_revision\"")
            } else if name.is("version"), JSONReader.first(&seen, 4) {
                keyValue.version = try integer(&reader, "\"version\"")
            } else {
                try reader.skipValue()
            }
        }
        return isObject ? keyValue : nil
    }

    private static func streamError(_ reader: inout JSONReader) throws -> EtcdStreamError? {
        var error = EtcdStreamError()
        var seen: UInt32 = 0
        let isObject = try reader.object("\"error\"") { reader, name in
            if name.is("grpc_code"), JSONReader.first(&seen, 0) {
                error.grpc_code = try reader.integer("\"grpc_code\"", as: Int.self)
            } else if name.is("http_code"), JSONReader.first(&seen, 1) {
                error.http_code = try reader.integer("\"http_code\"", as: Int.self)
            } else if name.is("message"), JSONReader.first(&seen, 2) {
                error.message = try reader.string("\"message\"")
            } else {
                try reader.skipValue()
            }
        }
        return isObject ? error : nil
    }

    private static func integer<Value: FixedWidthInteger & Codable & Sendable>(
        _ reader: inout JSONReader, _ field: @autoclosure () -> String
    ) throws -> EtcdInteger<Value>? {
        try reader.integer(field(), as: Value.self).map(EtcdInteger.init)
    }
}
