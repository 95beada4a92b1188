import Foundation

extension EtcdCompare {
    /// A compare that holds while `key` still has the modification revision `modRevision` (0:
    /// while it is absent): the guard of every compare-and-set the client makes.
    static func unchanged(_ key: Data, since modRevision: Int64) -> EtcdCompare {
        modRevision == 0
            ? EtcdCompare(result: .EQUAL, target: .CREATE, key: EtcdBytes(key), create_revision: EtcdInt64(0))
            : EtcdCompare(result: .EQUAL, target: .MOD, key: EtcdBytes(key), mod_revision: EtcdInt64(modRevision))
    }
}

extension EtcdClient {
    /// Puts and deletes in one transaction that applies only if each of `unchanged`'s keys still has
    /// its modification revision (0: the key is still absent). Never tried again here, nor on another
    /// member when its outcome is unknown: the caller reads again and decides.
    ///
    /// - Returns: Whether every compare held (the changes were made), and the revision they were made at.
    package func commit(
        puts: [(key: Data, value: Data)], deletes: [Data], unchanged: [(key: Data, modRevision: Int64)]
    ) throws -> (succeeded: Bool, revision: Int64) {
        let compares = unchanged.map { EtcdCompare.unchanged($0.key, since: $0.modRevision) }
        let operations =
            puts.map { EtcdRequestOp(request_put: EtcdPutRequest(key: EtcdBytes($0.key), value: EtcdBytes($0.value))) }
            + deletes.map { EtcdRequestOp(request_delete_range: EtcdDeleteRangeRequest(key: EtcdBytes($0))) }
        let response: EtcdTxnResponse = try call(
            "/v3/kv/txn", EtcdTxnRequest(compare: compares, success: operations, failure: []), idempotent: false)
        return (response.succeeded == true, response.header?.revisionValue ?? 0)
    }
}

/// One operation's answer in a transaction: a range's keys, when the operation was a range.
package struct EtcdResponseOp: Codable, Sendable {
    package var response_range: EtcdRangeResponse?
}

/// A transaction's answer with its operations' answers (``EtcdClient/transaction(_:)``).
package struct EtcdTxnResult: Codable, Sendable {
    package var header: EtcdResponseHeader?
    package var succeeded: Bool?
    package var responses: [EtcdResponseOp]?
}

extension EtcdClient {
    /// Sends one transaction as it is, and gives etcd's whole answer (the ranges of the branch
    /// taken included). Never tried again here; on another member when its outcome is unknown
    /// only if `idempotent` (a second copy of one that applied changes nothing).
    package func transaction(_ request: EtcdTxnRequest, idempotent: Bool = false) throws -> EtcdTxnResult {
        try call("/v3/kv/txn", request, idempotent: idempotent)
    }

    /// Every key under `prefix` except those under `excluded` (itself under `prefix`), at one
    /// revision: one read-only transaction of two ranges, on either side of `excluded`.
    ///
    /// - Parameters:
    ///   - prefix: The keys to read: every key that starts with it.
    ///   - excluded: The keys left out: every key that starts with it.
    ///   - timeout: How long each member may take to answer; nil for the client's request timeout.
    /// - Returns: The answer's header (its revision) and the keys with their values, in key order.
    /// - Throws: ``EtcdError`` when no member answered, or etcd refused.
    package func range(prefix: Data, excluding excluded: Data, timeout: TimeInterval? = nil) throws -> (
        header: EtcdResponseHeader, kvs: [EtcdKeyValue]
    ) {
        let below = EtcdRangeRequest(key: EtcdBytes(prefix), range_end: EtcdBytes(excluded))
        let above = EtcdRangeRequest(
            key: EtcdBytes(Self.prefixEnd(excluded)), range_end: EtcdBytes(Self.prefixEnd(prefix)))
        let answer: EtcdTxnResult = try call(
            "/v3/kv/txn",
            EtcdTxnRequest(
                compare: [], success: [EtcdRequestOp(request_range: below), EtcdRequestOp(request_range: above)],
                failure: []),
            timeout: timeout)
        let kvs = (answer.responses ?? []).flatMap { $0.response_range?.kvs ?? [] }
        return (answer.header ?? EtcdResponseHeader(), kvs)
    }
}

extension EtcdClient {
    /// What a guarded transaction did: whether its compares held, its revision, and, when they
    /// did not, each key asked for as it is now (absent: not listed).
    package struct GuardedOutcome: Sendable {
        package var succeeded: Bool
        package var revision: Int64
        package var current: [Data: EtcdKeyValue]
    }

    /// Puts, deletes and deletions of key ranges in one transaction that applies only if each of
    /// `unchanged`'s keys still has its modification revision (0: still absent); when one does
    /// not, the same transaction reads `readOnFailure` instead, so the caller can try again at
    /// once with what it found. Never tried again here; on another member when its outcome is
    /// unknown, as plain puts are: a second copy of one that applied fails its compares (the keys
    /// moved) and changes nothing.
    ///
    /// - Parameters:
    ///   - puts: The keys to set, with their values.
    ///   - deletes: The keys to delete.
    ///   - deleteRanges: Key ranges to delete: every key from `from` up to (not including) `to`.
    ///   - unchanged: The keys that must be as they were read.
    ///   - readOnFailure: The keys read when a compare fails.
    /// - Returns: Whether it applied, etcd's revision and, when it did not, the keys read.
    /// - Throws: ``EtcdError`` when no member answered, or etcd refused.
    package func commit(
        puts: [(key: Data, value: Data)], deletes: [Data], deleteRanges: [(from: Data, to: Data)],
        unchanged: [(key: Data, modRevision: Int64)], readOnFailure: [Data]
    ) throws -> GuardedOutcome {
        let compares = unchanged.map { EtcdCompare.unchanged($0.key, since: $0.modRevision) }
        let operations =
            puts.map { EtcdRequestOp(request_put: EtcdPutRequest(key: EtcdBytes($0.key), value: EtcdBytes($0.value))) }
            + deletes.map { EtcdRequestOp(request_delete_range: EtcdDeleteRangeRequest(key: EtcdBytes($0))) }
            + deleteRanges.map {
                EtcdRequestOp(
                    request_delete_range: EtcdDeleteRangeRequest(key: EtcdBytes($0.from), range_end: EtcdBytes($0.to)))
            }
        let reads = readOnFailure.map { EtcdRequestOp(request_range: EtcdRangeRequest(key: EtcdBytes($0))) }
        let answer = try transaction(
            EtcdTxnRequest(compare: compares, success: operations, failure: reads), idempotent: true)
        var current: [Data: EtcdKeyValue] = [:]
        if answer.succeeded != true {
            for response in answer.responses ?? [] {
                for kv in response.response_range?.kvs ?? [] {
                    if let key = kv.key?.data { current[key] = kv }
                }
            }
        }
        return GuardedOutcome(
            succeeded: answer.succeeded == true, revision: answer.header?.revisionValue ?? 0, current: current)
    }
}
