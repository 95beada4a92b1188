import Foundation

/// One numbered step of a migration, as ``Defaults/migrate(to:_:)`` hands it to your code: the
/// suite's values as the steps before left them, and the changes this step makes to them.
///
/// ```swift
/// try defaults.migrate(to: 3) { step in
///     switch step.number {
///     case 1: step.rename("fontsize", to: "fontSize")
///     case 2: step.convert("fontSize") { old in old.stringValue.flatMap { Int64($0) }.map { .integer($0) } }
///     case 3: step.move(["theme"], fromSuite: "com.example.old-app")
///     default: break
///     }
/// }
/// ```
///
/// The steps' changes are written together with the record of the last one run (``recordKey``),
/// in one atomic replace of the suite file, so each step's changes are made exactly once: a crash
/// before the write leaves the steps to the next start, a crash after it leaves them done. Your
/// code for a step may run again after a crash, so it must change only the step it is given.
public struct DefaultsMigration: Sendable {
    /// The key of the suite that records the migrations run: a dictionary with `version` (the
    /// last step run) and, while a ``move(_:fromSuite:)`` is finishing, `moving` (the keys still to
    /// remove from their old suite); a fleet suite's also has `commit`, a name for the etcd
    /// transaction that wrote it. Reserved: do not write it yourself.
    public static let recordKey = "LiveDefaults.migration"

    /// The step's number (1 for the first).
    public let number: Int
    /// The suite's values, with the changes this step has made so far.
    public private(set) var values: [String: PropertyListValue]
    /// Keys to copy in from other suites (and then remove there): suite name → keys.
    private(set) var moves: [String: [String]] = [:]

    init(number: Int, values: [String: PropertyListValue]) {
        self.number = number
        self.values = values
    }

    /// Renames a key, keeping its value (replacing any value `new` had); nothing when `old` has none.
    ///
    /// - Parameters:
    ///   - old: The key's old name.
    ///   - new: Its new name.
    public mutating func rename(_ old: String, to new: String) {
        guard old != new, let value = values.removeValue(forKey: old) else { return }
        values[new] = value
    }

    /// Copies a key's value to a new name and keeps the old one (replacing any value `new` had);
    /// nothing when `old` has none. The first half of a rename during a rolling upgrade, while
    /// processes that know only `old` still run: they keep reading it, and a later version removes
    /// it (the article "Describing your settings", "Rolling upgrades").
    ///
    /// - Parameters:
    ///   - old: The key's old name, kept.
    ///   - new: Its new name.
    public mutating func copy(_ old: String, to new: String) {
        guard old != new, let value = values[old] else { return }
        values[new] = value
    }

    /// Changes a key's value, typically to another type: `transform` gets the stored value and
    /// returns the new one, or nil to remove the key. Nothing when the key has no value.
    ///
    /// - Parameters:
    ///   - key: The key.
    ///   - transform: The new value from the old one.
    public mutating func convert(_ key: String, _ transform: (PropertyListValue) -> PropertyListValue?) {
        guard let old = values[key] else { return }
        values[key] = transform(old)
    }

    /// Sets a key's value (nil removes it).
    ///
    /// - Parameters:
    ///   - value: The new value.
    ///   - key: The key.
    public mutating func set(_ value: PropertyListValue?, forKey key: String) {
        values[key] = value
    }

    /// Removes keys.
    ///
    /// - Parameter keys: The keys to remove.
    public mutating func remove(_ keys: [String]) {
        for key in keys { values[key] = nil }
    }

    /// Moves keys from another suite (in the same directory) into this one: their values are
    /// copied here, replacing any, and then removed there. Keys the other suite lacks are skipped.
    ///
    /// - Parameters:
    ///   - keys: The keys to move.
    ///   - suite: The other suite's name.
    public mutating func move(_ keys: [String], fromSuite suite: String) {
        moves[suite, default: []].append(contentsOf: keys)
    }
}
