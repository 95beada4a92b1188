import Foundation

// The JSON shapes of etcd's v3 gateway (`/v3/…`, etcd 3.4): bytes as base64, 64-bit integers as
// decimal strings, and every field left out when it holds its zero value, so every field here is
// optional and read through an accessor that gives the zero value (docs/design.md, "Fleet
// settings: the etcd gateway").

/// A signed 64-bit integer as the gateway writes it: a JSON string ("7"); a number is accepted too.
package typealias EtcdInt64 = EtcdInteger<Int64>
/// An unsigned one (cluster and member IDs use the whole range).
package typealias EtcdUInt64 = EtcdInteger<UInt64>

/// A 64-bit integer as the gateway writes it: a JSON string; a number is accepted too.
package struct EtcdInteger<Value: FixedWidthInteger & Codable & Sendable>: Codable, Sendable, Equatable {
    package var value: Value

    package init(_ value: Value) { self.value = value }

    package init(from decoder: any Decoder) throws {
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

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(String(value))
    }
}

/// Bytes as the gateway writes them: base64 text.
package struct EtcdBytes: Codable, Sendable, Equatable, Hashable {
    package var data: Data

    package init(_ data: Data) { self.data = data }
    package init(_ string: String) { self.data = Data(string.utf8) }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let data = Data(base64Encoded: text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not base64: \(text.prefix(40))")
        }
        self.data = data
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(data.base64EncodedString())
    }
}

package struct EtcdResponseHeader: Codable, Sendable {
    package var cluster_id: EtcdUInt64?
    package var member_id: EtcdUInt64?
    package var revision: EtcdInt64?
    package var raft_term: EtcdUInt64?

    package var revisionValue: Int64 { revision?.value ?? 0 }
    package var clusterID: UInt64 { cluster_id?.value ?? 0 }
}

package struct EtcdKeyValue: Codable, Sendable {
    package var key: EtcdBytes?
    package var value: EtcdBytes?
    package var create_revision: EtcdInt64?
    package var mod_revision: EtcdInt64?
    package var version: EtcdInt64?
}

package struct EtcdRangeRequest: Codable, Sendable {
    package var key: EtcdBytes
    package var range_end: EtcdBytes?
    package var revision: EtcdInt64?
    package var serializable: Bool?
    package var count_only: Bool?
    package var limit: EtcdInt64?
    package var keys_only: Bool?
}

package struct EtcdRangeResponse: Codable, Sendable {
    package var header: EtcdResponseHeader?
    package var kvs: [EtcdKeyValue]?
    package var count: EtcdInt64?
}

package struct EtcdPutRequest: Codable, Sendable {
    package var key: EtcdBytes
    package var value: EtcdBytes?
}

package struct EtcdDeleteRangeRequest: Codable, Sendable {
    package var key: EtcdBytes
    package var range_end: EtcdBytes?
}

package struct EtcdCompare: Codable, Sendable {
    package enum Result: String, Codable, Sendable { case EQUAL, GREATER, LESS, NOT_EQUAL }
    package enum Target: String, Codable, Sendable { case VERSION, CREATE, MOD, VALUE }
    package var result: Result
    package var target: Target
    package var key: EtcdBytes
    package var version: EtcdInt64?
    package var create_revision: EtcdInt64?
    package var mod_revision: EtcdInt64?
    package var value: EtcdBytes?
}

package struct EtcdRequestOp: Codable, Sendable {
    package var request_range: EtcdRangeRequest?
    package var request_put: EtcdPutRequest?
    package var request_delete_range: EtcdDeleteRangeRequest?
}

package struct EtcdTxnRequest: Codable, Sendable {
    package var compare: [EtcdCompare]
    package var success: [EtcdRequestOp]
    package var failure: [EtcdRequestOp]
}

package struct EtcdTxnResponse: Codable, Sendable {
    package var header: EtcdResponseHeader?
    package var succeeded: Bool?
}

package struct EtcdWatchCreateRequest: Codable, Sendable {
    package var key: EtcdBytes
    package var range_end: EtcdBytes?
    package var start_revision: EtcdInt64?
    package var progress_notify: Bool?
}

package struct EtcdWatchRequest: Codable, Sendable {
    package var create_request: EtcdWatchCreateRequest
}

package struct EtcdEvent: Codable, Sendable {
    /// Absent for a put (its zero value), "DELETE" for a deletion.
    package var type: String?
    package var kv: EtcdKeyValue?
}

package struct EtcdWatchResult: Codable, Sendable {
    package var header: EtcdResponseHeader?
    package var watch_id: EtcdInt64?
    package var created: Bool?
    package var canceled: Bool?
    package var compact_revision: EtcdInt64?
    package var cancel_reason: String?
    package var events: [EtcdEvent]?
}

package struct EtcdStreamError: Codable, Sendable {
    package var grpc_code: Int?
    package var http_code: Int?
    package var message: String?
}

/// One line of a watch stream: a result or an error.
package struct EtcdWatchLine: Codable, Sendable {
    package var result: EtcdWatchResult?
    package var error: EtcdStreamError?
}

/// A unary call's error body: `{"error": "…", "code": 11, "message": "…"}`.
package struct EtcdErrorBody: Codable, Sendable {
    package var error: String?
    package var code: Int?
    package var message: String?
}

package struct EtcdAuthenticateRequest: Codable, Sendable {
    package var name: String
    package var password: String
}

package struct EtcdAuthenticateResponse: Codable, Sendable {
    package var token: String?
}
