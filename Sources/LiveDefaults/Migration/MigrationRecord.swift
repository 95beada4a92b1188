import Foundation

/// What a suite records of its migrations, in its reserved key (``DefaultsMigration/recordKey``):
/// the last step run, and the keys a finished step still has to remove from other suites.
package struct MigrationRecord: Sendable, Equatable {
    package var version: Int
    /// Suite name → keys to remove there (a ``DefaultsMigration/move(_:fromSuite:)`` half done).
    package var moving: [String: [String]]
    /// A fleet suite's: names the commit that wrote the record, so that the process that made it
    /// delivers it with the origin `.migration` when the watch brings it (``MigrationMarks``).
    package var commit: String?

    package init(version: Int = 0, moving: [String: [String]] = [:], commit: String? = nil) {
        self.version = version
        self.moving = moving
        self.commit = commit
    }

    /// The record in `values`; none (version 0) when the key is absent or not a record.
    package init(in values: [String: PropertyListValue]) {
        guard case .dictionary(let record)? = values[DefaultsMigration.recordKey] else {
            self.init()
            return
        }
        var version = 0
        if case .integer(let number)? = record["version"] { version = Int(number) }
        var moving: [String: [String]] = [:]
        if case .dictionary(let suites)? = record["moving"] {
            for (suite, keys) in suites {
                if case .array(let names) = keys { moving[suite] = names.compactMap(\.stringValue) }
            }
        }
        self.init(version: version, moving: moving, commit: record["commit"]?.stringValue)
    }

    /// The record as stored.
    package var value: PropertyListValue {
        var record: [String: PropertyListValue] = ["version": .integer(Int64(version))]
        if !moving.isEmpty {
            record["moving"] = .dictionary(moving.mapValues { .array($0.map(PropertyListValue.string)) })
        }
        if let commit { record["commit"] = .string(commit) }
        return .dictionary(record)
    }

    /// `values` with this record in them.
    package func stored(in values: [String: PropertyListValue]) -> [String: PropertyListValue] {
        var values = values
        values[DefaultsMigration.recordKey] = value
        return values
    }

    /// Runs step `number` of `body` over `values` (a pure function, for the file and the etcd
    /// paths alike): the values after it, and the moves it asks for.
    package static func run(
        step number: Int, over values: [String: PropertyListValue],
        _ body: (inout DefaultsMigration) throws -> Void
    ) rethrows -> (values: [String: PropertyListValue], moves: [String: [String]]) {
        var step = DefaultsMigration(number: number, values: values)
        try body(&step)
        var result = step.values
        result[DefaultsMigration.recordKey] = values[DefaultsMigration.recordKey]
        return (result, step.moves)
    }
}
