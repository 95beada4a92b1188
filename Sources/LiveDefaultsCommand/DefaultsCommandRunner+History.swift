import Foundation
import LiveDefaults
import LiveDefaultsPropertyList

/// The history's verbs: `history`, `diff` and `rollback` (docs/defaults-command.md, "History"). Secret
/// values are redacted unless `--show-secrets` is given.
extension DefaultsCommandRunner {
    func performHistoryVerb(_ command: DefaultsCommand) throws {
        switch command {
        case .history(let domain, let key, let since, let limit, let json):
            let history = try readHistory(of: domain)
            var entries = history.filtered(key: key, since: nil, limit: nil)
            switch since {
            case .entry(let id)?: entries.removeAll { $0.id < id }
            case .date(let date)?: entries.removeAll { $0.date < date }
            case nil: break
            }
            if let limit, entries.count > limit { entries.removeFirst(entries.count - limit) }
            let schemaValues = revealsSecrets ? [:] : try schemaValues(of: domain)
            let schema = revealsSecrets ? nil : try domains.schema(of: domain, values: schemaValues)
            if json {
                var last: (writer: DefaultsHistoryEntry.Writer?, json: String)?
                var items: [String] = []
                items.reserveCapacity(entries.count)
                for entry in entries {
                    if last == nil || last?.writer != entry.writer {
                        last = (entry.writer, Self.json(entry.writer))
                    }
                    items.append(Self.json(entry, schema, writer: last?.json ?? "null"))
                }
                io.standardOutput("[" + items.joined(separator: ",\n ") + "]\n")
            } else {
                // Consecutive entries mostly share a writer: its words are made once.
                var last: (writer: DefaultsHistoryEntry.Writer?, words: String)?
                var output = ""
                for entry in entries {
                    if last == nil || last?.writer != entry.writer { last = (entry.writer, Self.who(entry.writer)) }
                    output += Self.line(entry, schema, who: last?.words ?? "")
                    output += "\n"
                }
                io.standardOutput(output)
            }

        case .diff(let domain, let since, let json):
            let history = try readHistory(of: domain)
            let then = try history.rollback(of: nil, to: since, suite: domain.displayName)
            let now = try openForReading(domain).persistentValues()
            let schema = revealsSecrets ? nil : try domains.schema(of: domain, values: now)
            let changed = then.filter { now[$0.key] != $0.value }.sorted { $0.key < $1.key }
            func shown(_ value: PropertyListValue?, _ key: String) -> PropertyListValue? {
                schema?.shown(value, forKey: key) ?? value
            }
            if json {
                let items = changed.map {
                    "{\"key\":\(WatchReport.json($0.key)),\"then\":\(WatchReport.json(shown($0.value, $0.key))),"
                        + "\"now\":\(WatchReport.json(shown(now[$0.key], $0.key)))}"
                }
                io.standardOutput("[" + items.joined(separator: ",\n ") + "]\n")
            } else {
                for (key, value) in changed {
                    io.standardOutput("\(key): \(Self.text(shown(value, key))) → \(Self.text(shown(now[key], key)))\n")
                }
            }

        case .rollback(let domain, let key, let point):
            let store = try openForWriting(domain, "rollback", keys: key.map { [$0] })
            let before = store.persistentValues()
            let schema = try domains.schema(of: domain, values: before)
            let changed = try store.rollBack(key, to: point, schema: schema?.schema)
            let after = store.persistentValues()
            let shown = revealsSecrets ? nil : schema
            if changed.isEmpty { io.standardOutput("Nothing to roll back in \(domain.displayName).\n") }
            for key in changed {
                io.standardOutput(
                    "\(key): \(Self.text(shown?.shown(before[key], forKey: key) ?? before[key])) → "
                        + "\(Self.text(shown?.shown(after[key], forKey: key) ?? after[key]))\n")
            }

        default:
            preconditionFailure("not a history verb: \(command)")
        }
    }

    /// The history of a local domain, read from its log without opening the store; of a fleet
    /// suite, from its audit keys.
    private func readHistory(of domain: DomainReference) throws -> SuiteHistory {
        let location: SuiteLocation
        switch domain {
        case .global: location = try SuiteLocation(suiteName: Defaults.globalDomain, directory: domains.directoryPath)
        case .named(let name): location = try SuiteLocation(suiteName: name, directory: domains.directoryPath)
        case .path(let path): location = SuiteLocation(filePath: path + ".plist")
        case .remote:
            guard let remote = try openForReading(domain) as? RemoteCommandDomain else {
                throw CommandFailure("defaults: \(domain.displayName) keeps no history here.\n")
            }
            return try remote.history()
        }
        return try HistoryLog(suitePath: location.path, suite: location.name).readHistory()
    }

    /// A time as `2026-12-03T17:14:36.348Z` (UTC, milliseconds), made with `gmtime_r`: Foundation's
    /// formatter costs a 10,000-entry history more than the rest of it.
    static func timestamp(_ date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        var seconds = time_t(milliseconds / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ number: Int32) -> String { number < 10 ? "0\(number)" : "\(number)" }
        let fraction = Int(milliseconds % 1000)
        let millis = fraction < 10 ? "00\(fraction)" : fraction < 100 ? "0\(fraction)" : "\(fraction)"
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):"
            + "\(two(parts.tm_min)):\(two(parts.tm_sec)).\(millis)Z"
    }

    /// A value as a line shows it: old-style text, `(none)` for no value.
    static func text(_ value: PropertyListValue?) -> String {
        guard let value else { return "(none)" }
        if case .integer(let number) = value { return String(number) }
        return OpenStepWriter.singleLineString(for: value)
    }

    /// Who made a change, in words.
    static func who(_ writer: DefaultsHistoryEntry.Writer?) -> String {
        guard let writer else { return "unknown writer (outside LiveDefaults)" }
        let user = writer.userName.isEmpty ? "uid \(writer.userID)" : writer.userName
        let what = writer.command.isEmpty ? writer.executable : "defaults " + writer.command.joined(separator: " ")
        return "\(user)@\(writer.hostName) pid \(writer.processID): \(what)"
    }

    static func line(_ entry: DefaultsHistoryEntry, _ schema: CommandSchema?, who: String) -> String {
        let old = schema?.shown(entry.oldValue, forKey: entry.key) ?? entry.oldValue
        let new = schema?.shown(entry.newValue, forKey: entry.key) ?? entry.newValue
        let date = Self.timestamp(entry.date)
        return "\(entry.id)\t\(date)\t\(entry.key): \(text(old)) → \(text(new))\t\(entry.origin.rawValue)\t" + who
    }

    static func json(_ entry: DefaultsHistoryEntry, _ schema: CommandSchema?, writer: String) -> String {
        let old = schema?.shown(entry.oldValue, forKey: entry.key) ?? entry.oldValue
        let new = schema?.shown(entry.newValue, forKey: entry.key) ?? entry.newValue
        return "{\"id\":\(entry.id),\"date\":\"\(timestamp(entry.date))\",\"suite\":\(WatchReport.json(entry.suite)),"
            + "\"key\":\(WatchReport.json(entry.key)),\"old\":\(WatchReport.json(old)),\"new\":\(WatchReport.json(new)),"
            + "\"origin\":\"\(entry.origin.rawValue)\",\"writer\":\(writer)}"
    }

    /// A writer as JSON; `null` for none.
    static func json(_ writer: DefaultsHistoryEntry.Writer?) -> String {
        guard let who = writer else { return "null" }
        return "{\"uid\":\(who.userID),\"user\":\(WatchReport.json(who.userName)),"
            + "\"machineID\":\(WatchReport.json(who.machineID)),\"host\":\(WatchReport.json(who.hostName)),"
            + "\"pid\":\(who.processID),\"executable\":\(WatchReport.json(who.executable)),"
            + "\"command\":[\(who.command.map(WatchReport.json).joined(separator: ","))]}"
    }

    /// The arguments the history records as this run's command: secret values replaced by
    /// `<secret>` (the schema knows which keys are secret).
    func historyArguments(_ arguments: [String], _ command: DefaultsCommand) -> [String] {
        var command = command
        if case .showingSecrets(let inner) = command { command = inner }
        let verbIndex = arguments.firstIndex { CommandVerb.named($0.lowercased()) != nil } ?? 0
        var recorded = Array(arguments[verbIndex...])
        let redaction = "<secret>"
        switch command {
        case .write(let domain, let key, _):
            let secret =
                (try? domains.schema(of: domain, values: (try? schemaValues(of: domain)) ?? [:]))??.isSecret(key)
                ?? false
            if secret, recorded.count > 3 { recorded.replaceSubrange(3..., with: [redaction]) }
        case .writeDomain(let domain, let values):
            guard let schema = (try? domains.schema(of: domain, values: (try? schemaValues(of: domain)) ?? [:])) ?? nil
            else { break }
            if values.keys.contains(where: schema.isSecret), let last = recorded.indices.last {
                recorded[last] = redaction
            }
        default:
            break
        }
        return recorded
    }
}
