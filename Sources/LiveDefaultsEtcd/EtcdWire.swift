import Foundation

// The JSON shapes of etcd's v3 gateway (`/v3/…`, etcd 3.4): bytes as base64, 64-bit integers as
// decimal strings, and every field left out when it holds its zero value, so every field here is
// optional and read through an accessor that gives the zero value (docs/design.md, "Fleet
// settings: the etcd gateway").

/// A signed 64-bit integer as the gateway writes it: a JSON string ("7"); a number is accepted too.
typealias EtcdInt64 = EtcdInteger<Int64>
/// An unsigned one (cluster and member IDs use the whole range).
typealias EtcdUInt64 = EtcdInteger<UInt64>

/// A 64-bit integer as the gateway writes it: a JSON string; a number is accepted too.
struct EtcdInteger<Value: FixedWidthInteger & Codable & Sendable>: Codable, Sendable, Equatable {
    var value: Value

    init(_ value: Value) { self.value = value }

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let text = try? container.decode(String.self) {
            guard let value = Value(text) else {
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "\"\(text)\" is not a 64-bit integer")
            }
            self.value = value
        } else {
            value = try container.decode(Value.self)
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(String(value))
    }
}

/// Bytes as the gateway writes them: base64 text.
struct EtcdBytes: Codable, Sendable, Equatable, Hashable {
    var data: Data

    init(_ data: Data) { self.data = data }
    init(_ string: String) { self.data = Data(string.utf8) }

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let data = Data(base64Encoded: text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not base64: \(text.prefix(40))")
        }
        self.data = data
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(data.base64EncodedString())
    }
}

struct EtcdResponseHeader: Codable, Sendable {
    var cluster_id: EtcdUInt64?
    var member_id: EtcdUInt64?
    var revision: EtcdInt64?
    var raft_term: EtcdUInt64?

    var revisionValue: Int64 { revision?.value ?? 0 }
    var clusterID: UInt64 { cluster_id?.value ?? 0 }
}

struct EtcdKeyValue: Codable, Sendable {
    var key: EtcdBytes?
    var value: EtcdBytes?
    var create_revision: EtcdInt64?
    var mod_revision: EtcdInt64?
    var version: EtcdInt64?
}

struct EtcdRangeRequest: Codable, Sendable {
    var key: EtcdBytes
    var range_end: EtcdBytes?
    var revision: EtcdInt64?
    var serializable: Bool?
    var count_only: Bool?
}

struct EtcdRangeResponse: Codable, Sendable {
    var header: EtcdResponseHeader?
    var kvs: [EtcdKeyValue]?
    var count: EtcdInt64?
}

struct EtcdPutRequest: Codable, Sendable {
    var key: EtcdBytes
    var value: EtcdBytes?
}

struct EtcdDeleteRangeRequest: Codable, Sendable {
    var key: EtcdBytes
    var range_end: EtcdBytes?
}

struct EtcdCompare: Codable, Sendable {
    enum Result: String, Codable, Sendable { case EQUAL, GREATER, LESS, NOT_EQUAL }
    enum Target: String, Codable, Sendable { case VERSION, CREATE, MOD, VALUE }
    var result: Result
    var target: Target
    var key: EtcdBytes
    var version: EtcdInt64?
    var create_revision: EtcdInt64?
    var mod_revision: EtcdInt64?
    var value: EtcdBytes?
}

struct EtcdRequestOp: Codable, Sendable {
    var request_range: EtcdRangeRequest?
    var request_put: EtcdPutRequest?
    var request_delete_range: EtcdDeleteRangeRequest?
}

struct EtcdTxnRequest: Codable, Sendable {
    var compare: [EtcdCompare]
    var success: [EtcdRequestOp]
    var failure: [EtcdRequestOp]
}

struct EtcdTxnResponse: Codable, Sendable {
    var header: EtcdResponseHeader?
    var succeeded: Bool?
}

struct EtcdWatchCreateRequest: Codable, Sendable {
    var key: EtcdBytes
    var range_end: EtcdBytes?
    var start_revision: EtcdInt64?
    var progress_notify: Bool?
}

struct EtcdWatchRequest: Codable, Sendable {
    var create_request: EtcdWatchCreateRequest
}

struct EtcdEvent: Codable, Sendable {
    /// Absent for a put (its zero value), "DELETE" for a deletion.
    var type: String?
    var kv: EtcdKeyValue?
}

struct EtcdWatchResult: Codable, Sendable {
    var header: EtcdResponseHeader?
    var watch_id: EtcdInt64?
    var created: Bool?
    var canceled: Bool?
    var compact_revision: EtcdInt64?
    var cancel_reason: String?
    var events: [EtcdEvent]?
}

struct EtcdStreamError: Codable, Sendable {
    var grpc_code: Int?
    var http_code: Int?
    var message: String?
}

/// One line of a watch stream: a result or an error.
struct EtcdWatchLine: Codable, Sendable {
    var result: EtcdWatchResult?
    var error: EtcdStreamError?
}

/// A unary call's error body: `{"error": "…", "code": 11, "message": "…"}`.
struct EtcdErrorBody: Codable, Sendable {
    var error: String?
    var code: Int?
    var message: String?
}

struct EtcdAuthenticateRequest: Codable, Sendable {
    var name: String
    var password: String
}

struct EtcdAuthenticateResponse: Codable, Sendable {
    var token: String?
}
