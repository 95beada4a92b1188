import Foundation

extension EtcdClient {
    /// Puts and deletes in one transaction that applies only if each of `unchanged`'s keys still has
    /// its modification revision (0: the key is still absent). Never tried again here, nor on another
    /// member when its outcome is unknown: the caller reads again and decides.
    ///
    /// - Returns: Whether every compare held (the changes were made), and the revision they were made at.
    package func commit(
        puts: [(key: Data, value: Data)], deletes: [Data], unchanged: [(key: Data, modRevision: Int64)]
    ) throws -> (succeeded: Bool, revision: Int64) {
        let compares = unchanged.map { guarded in
            guarded.modRevision == 0
                ? EtcdCompare(
                    result: .EQUAL, target: .CREATE, key: EtcdBytes(guarded.key), create_revision: EtcdInt64(0))
                : EtcdCompare(
                    result: .EQUAL, target: .MOD, key: EtcdBytes(guarded.key),
                    mod_revision: EtcdInt64(guarded.modRevision))
        }
        let operations =
            puts.map { EtcdRequestOp(request_put: EtcdPutRequest(key: EtcdBytes($0.key), value: EtcdBytes($0.value))) }
            + deletes.map { EtcdRequestOp(request_delete_range: EtcdDeleteRangeRequest(key: EtcdBytes($0))) }
        let response: EtcdTxnResponse = try call(
            "/v3/kv/txn", EtcdTxnRequest(compare: compares, success: operations, failure: []), idempotent: false)
        return (response.succeeded == true, response.header?.revisionValue ?? 0)
    }
}
