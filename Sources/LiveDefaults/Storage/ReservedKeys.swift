/// The keys the library keeps in a suite for itself, which are never settings
/// (docs/design.md, "Schemas" and "Migrations"): the migration record
/// (``DefaultsMigration/recordKey``) and a fleet suite's schema (`LiveDefaults.schema`). Reads of
/// them by name work; listings of settings (`dictionaryRepresentation()`, the `defaults` command,
/// a fleet suite's reports) leave them out.
package enum ReservedKeys {
    /// The key under an `etcd://` suite's prefix that holds its schema (a property-list dictionary,
    /// as in a schema file), so that every machine's `defaults` checks against the same one.
    package static let schema = "LiveDefaults.schema"

    /// Every reserved key: `list-keys` does not list them, and neither `reset` of a whole domain
    /// nor a whole domain written removes them (a removed record would run the app's migrations again).
    package static let all: Set<String> = [schema, DefaultsMigration.recordKey]

    /// `values` without the reserved keys.
    package static func settings<Value>(in values: [String: Value]) -> [String: Value] {
        values.filter { !all.contains($0.key) }
    }
}
