/// The keys the library keeps in a suite for itself, which are never settings
/// (docs/design.md, "Schemas" and "Migrations"): the migration record
/// (``DefaultsMigration/recordKey``) and a fleet suite's schema (`LiveDefaults.schema`). Reads of
/// them by name work; listings of settings (`dictionaryRepresentation()`, the `defaults` command,
/// a fleet suite's reports) leave them out.
package enum ReservedKeys {
    /// The key of a fleet suite's schema, kept in etcd beside its values.
    package static let schema = "LiveDefaults.schema"

    /// Every reserved key.
    package static let all: Set<String> = [schema, DefaultsMigration.recordKey]

    /// `values` without the reserved keys.
    package static func settings<Value>(in values: [String: Value]) -> [String: Value] {
        values.filter { !all.contains($0.key) }
    }
}
