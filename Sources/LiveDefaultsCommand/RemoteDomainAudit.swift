import Foundation
import LiveDefaults
import LiveDefaultsEtcd

/// A fleet suite's history for the command: its audit keys (docs/design.md, "History: a fleet
/// suite's audit keys"), read and rolled back as ``Defaults/rollBack(_:to:schema:)`` does for a
/// program.
extension RemoteCommandDomain {
    /// The suite's history, oldest first.
    ///
    /// - Throws: ``DefaultsError`` (`readFailed`): unreachable, permission denied, … in a sentence.
    package func history() throws -> SuiteHistory {
        do {
            return try remoteSuite.history()
        } catch {
            throw DefaultsError(.readFailed, error.message, suite: address.suite)
        }
    }

    /// Rolls `key` (every key when nil) back to `point`: one new change, recorded with the origin
    /// `rollback`, each value checked against `schema` first; nothing changes when one is refused.
    ///
    /// - Returns: The keys changed.
    /// - Throws: ``DefaultsError``: `historyUnavailable` when the changes after `point` were pruned,
    ///   `schemaMismatch` for a value the schema refuses, `writeFailed` when etcd does not take it.
    package func rollBack(_ key: String?, to point: DefaultsHistoryPoint, schema: DefaultsSchema?) throws -> [String] {
        let suiteName = address.suite
        let current = persistentValues()
        let planned = try history().rollback(of: key, to: point, suite: suiteName).filter {
            current[$0.key] != $0.value
        }
        guard !planned.isEmpty else { return [] }
        for (key, value) in planned {
            if let refusal = schema?.rollbackRefusal(of: key, to: value, suite: suiteName, kind: "fleet suite") {
                throw refusal
            }
        }
        try commit(planned, origin: .rollback)
        return planned.map(\.key)
    }
}
