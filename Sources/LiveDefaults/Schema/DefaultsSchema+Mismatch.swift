import Foundation

extension DefaultsSchema {
    /// The reports already made in this process, so that each is made once.
    private static let reported = Locked<Set<String>>([])

    /// Compares this schema (the one the app's keys make) with the one installed for its suite,
    /// and reports each difference once per process through ``DefaultsErrorReporting``
    /// (``DefaultsError/Code/schemaMismatch``; an installed file that cannot be read,
    /// ``DefaultsError/Code/invalidSchema``). Summaries are text for people and are not compared.
    ///
    /// Call it at start when a package installs the schema (the app's keys may have changed since):
    ///
    /// ```swift
    /// schema.checkInstalled()   // or try schema.install(), which makes them agree
    /// ```
    ///
    /// - Returns: The differences, one sentence each; empty when they agree or nothing is installed.
    @discardableResult
    public func checkInstalled() -> [String] {
        checkInstalled(environment: ProcessInfo.processInfo.environment)
    }

    package func checkInstalled(environment: [String: String]) -> [String] {
        let found: (schema: DefaultsSchema, file: URL)?
        do {
            found = try Self.find(suite: suite, environment: environment)
        } catch let error as DefaultsError {
            Self.reportOnce(error)
            return [error.message]
        } catch {
            return []
        }
        guard let found else { return [] }
        let differences = differences(from: found.schema)
        if !differences.isEmpty {
            Self.reportOnce(
                DefaultsError(
                    .schemaMismatch,
                    "The keys of suite \"\(suite)\" in the app and the schema installed at \(found.file.path) "
                        + "disagree: \(differences.joined(separator: "; ")). Install the app's schema again "
                        + "(schema.install(), or `defaults install-schema`).",
                    suite: suite, path: found.file.path))
        }
        return differences
    }

    private static func reportOnce(_ error: DefaultsError) {
        let isNew = reported.withLock { $0.insert("\(error.suite ?? "")\n\(error.message)").inserted }
        if isNew { DefaultsErrorReporting.report(error) }
    }

    /// How `installed` differs from this schema, key by key (summaries aside).
    package func differences(from installed: DefaultsSchema) -> [String] {
        var differences: [String] = []
        let names = Set(entries.map(\.name)).union(installed.entries.map(\.name)).sorted()
        for name in names {
            switch (self[name], installed[name]) {
            case (_?, nil): differences.append("key \"\(name)\" is missing from the installed schema")
            case (nil, _?): differences.append("key \"\(name)\" is in the installed schema but not in the app")
            case (let mine?, let theirs?):
                if mine.type != theirs.type {
                    differences.append(
                        "key \"\(name)\" is \(mine.type.rawValue) in the app, \(theirs.type.rawValue) installed")
                }
                if mine.defaultValue != theirs.defaultValue {
                    differences.append(
                        "the default of key \"\(name)\" is \(Self.text(mine.defaultValue)) in the app, "
                            + "\(Self.text(theirs.defaultValue)) installed")
                }
                if mine.choices != theirs.choices || mine.range != theirs.range {
                    differences.append("the values key \"\(name)\" allows differ")
                }
                if mine.isSecret != theirs.isSecret {
                    differences.append("key \"\(name)\" is \(mine.isSecret ? "" : "not ")secret in the app")
                }
                if Self.shape(of: mine) != Self.shape(of: theirs) {
                    differences.append("the fields or elements of key \"\(name)\" differ")
                }
            case (nil, nil): break
            }
        }
        return differences
    }

    /// An entry's fields and elements without their summaries (text for people, not compared).
    private static func shape(of entry: Entry) -> [Entry?] {
        func withoutSummary(_ entry: Entry) -> Entry {
            var changed = entry
            changed.summary = nil
            changed.fields = entry.fields?.map(withoutSummary)
            changed.elements = entry.elements.map(withoutSummary)
            return changed
        }
        return (entry.fields ?? []).map { withoutSummary($0) } + [entry.elements.map(withoutSummary)]
    }

    private static func text(_ value: PropertyListValue?) -> String {
        value.map { String(describing: $0) } ?? "none"
    }
}
