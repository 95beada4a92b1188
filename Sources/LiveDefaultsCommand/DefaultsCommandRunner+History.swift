import Foundation
import LiveDefaults
import LiveDefaultsPropertyList

/// The history's verbs: `history`, `diff` and `rollback` (docs/defaults-command.md, "History"). Secret
/// values are redacted unless `--show-secrets` is given.
extension DefaultsCommandRunner {
    func performHistoryVerb(_ command: DefaultsCommand) throws {
        switch command {
        case .history(let domain, let key, let since, let limit, let json):
            let entries = try domains.historyEntries(
                of: domain, HistoryQuery(key: key, since: since, limit: limit), revealingSecrets: revealsSecrets)
            // Written 64 KiB at a time: the buffers are reused, where the whole output's (and
            // its copies on the way out) were fresh pages.
            var printer = HistoryPrinter(capacity: 68 * 1024)
            // Consecutive entries mostly share a writer: its words are made once.
            var writer: DefaultsHistoryEntry.Writer?
            var words = ""
            if json { printer.append(UInt8(ascii: "[")) }
            for index in entries.indices {
                if index == 0 || entries[index].writer != writer {
                    writer = entries[index].writer
                    words = json ? Self.json(writer) : DefaultsHistoryEntry.Writer.words(writer)
                }
                if json {
                    if index > 0 { printer.append(",\n ") }
                    printer.json(entries[index], writer: words)
                } else {
                    printer.line(entries[index], who: words)
                }
                if printer.bytes.count >= 64 * 1024 {
                    io.writeStandardOutputData(Data(printer.bytes))
                    printer.bytes.removeAll(keepingCapacity: true)
                }
            }
            if json { printer.append("]\n") }
            if !printer.bytes.isEmpty { io.writeStandardOutputData(Data(printer.bytes)) }

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
        try domains.historySource(of: domain).readHistory()
    }

    /// A value as a line shows it: old-style text, `(none)` for no value.
    static func text(_ value: PropertyListValue?) -> String {
        guard let value else { return "(none)" }
        if case .integer(let number) = value { return String(number) }
        return OpenStepWriter.singleLineString(for: value)
    }

    /// A writer as JSON; `null` for none.
    static func json(_ writer: DefaultsHistoryEntry.Writer?) -> String {
        guard let who = writer else { return "null" }
        return "{\"uid\":\(who.userID),\"user\":\(WatchReport.json(who.userName)),"
            + "\"machineID\":\(WatchReport.json(who.machineID)),\"host\":\(WatchReport.json(who.hostName)),"
            + "\"pid\":\(who.processID),\"executable\":\(WatchReport.json(who.executable)),"
            + "\"command\":[\(who.command.map(WatchReport.json).joined(separator: ","))]}"
    }

    /// The arguments the history records as this run's command: from its verb on, with secret values replaced by
    /// `<secret>` (`schema`, the domain's, knows which keys are secret; without one nothing is).
    static func historyArguments(_ arguments: [String], _ command: DefaultsCommand, schema: CommandSchema?) -> [String]
    {
        var command = command
        if case .showingSecrets(let inner) = command { command = inner }
        let verbIndex = arguments.firstIndex { CommandVerb.named($0.lowercased()) != nil } ?? 0
        var recorded = Array(arguments[verbIndex...])
        guard let schema else { return recorded }
        let redaction = "<secret>"
        switch command {
        case .write(_, let key, _):
            if schema.isSecret(key), recorded.count > 3 { recorded.replaceSubrange(3..., with: [redaction]) }
        case .writeDomain(_, let values):
            if values.keys.contains(where: schema.isSecret), let last = recorded.indices.last {
                recorded[last] = redaction
            }
        default:
            break
        }
        return recorded
    }
}
