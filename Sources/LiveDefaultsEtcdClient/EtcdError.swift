/// What went wrong talking to etcd: how the call ended, and a sentence that says where.
package struct EtcdError: Error, Sendable, CustomStringConvertible {
    /// How the call ended.
    package enum Kind: Sendable, Equatable {
        /// No endpoint answered (refused, reset, timed out).
        case unavailable
        /// etcd answered with an error (its gRPC code, when it gave one).
        case rejected(code: Int?)
        /// The answer was not what the gateway sends.
        case malformed
    }

    package let kind: Kind
    package let message: String

    package init(kind: Kind, message: String) {
        self.kind = kind
        self.message = message
    }

    package var description: String { message }

    /// etcd's gRPC code for "required revision has been compacted" and friends (OUT_OF_RANGE).
    package static let outOfRange = 11
    /// gRPC PERMISSION_DENIED.
    package static let permissionDenied = 7
    /// gRPC INVALID_ARGUMENT ("user name is empty", "authentication failed", a value too large).
    package static let invalidArgument = 3
    /// gRPC RESOURCE_EXHAUSTED ("database space exceeded", too many operations in a transaction).
    package static let resourceExhausted = 8
    /// gRPC UNAUTHENTICATED ("invalid auth token").
    package static let unauthenticated = 16
    /// gRPC UNAVAILABLE: "no leader" (nothing was done), or "request timed out" at a leader change
    /// (the outcome is unknown).
    package static let grpcUnavailable = 14
}
