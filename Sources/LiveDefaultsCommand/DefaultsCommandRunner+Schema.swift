import Foundation
import LiveDefaults
import LiveDefaultsPropertyList

/// The schema's part of the command: checking writes, redacting secrets, and the verbs `describe`, `list-keys`,
/// `reset`, `schema` and `install-schema` (docs/defaults-command.md, "Schemas").
extension DefaultsCommandRunner {
    /// The values to write to `domain`, each checked against its schema and converted (``CommandSchema``); without
    /// a schema, `values` as they are.
    ///
    /// - Throws: ``CommandFailure`` naming the key, the expected type and the schema, before anything is written.
    func admitted(
        _ values: [String: PropertyListValue], to domain: DomainReference, in store: any CommandDomain
    ) throws -> [String: PropertyListValue] {
        let found = try domains.schema(of: domain, values: store.persistentValues())
        if let (arguments, command) = historyArgumentsAwaitingSchema {
            HistoryIdentity.setCommand(Self.historyArguments(arguments, command, schema: found))
        }
        guard let schema = found else { return values }
        var admitted: [String: PropertyListValue] = [:]
        for (key, value) in values {
            switch schema.admit(value, forKey: key, isBare: valueIsBare) {
            case .success(let converted): admitted[key] = converted
            case .failure(let refusal): throw CommandFailure(refusal.message(domain: domain.displayName))
            }
        }
        return admitted
    }

    /// The settings as printed: secret ones redacted unless `--show-secrets` was given, and the
    /// library's own keys (the migration record, a fleet suite's schema) left out: they are not
    /// settings (a read of one by name still prints it).
    func shown(_ values: [String: PropertyListValue], of domain: DomainReference) throws -> [String: PropertyListValue]
    {
        let settings = ReservedKeys.settings(in: values)
        guard !revealsSecrets, let schema = try domains.schema(of: domain, values: values) else { return settings }
        return schema.shown(settings)
    }

    /// The layers `explain` prints: a secret key's value redacted in every layer unless
    /// `--show-secrets` was given (a system-wide or managed layer's value is as secret as the
    /// user's own).
    func shown(
        _ sources: [ValueSource], forKey key: String, of domain: DomainReference,
        values: @autoclosure () -> [String: PropertyListValue]
    ) throws -> [ValueSource] {
        guard !revealsSecrets, let schema = try domains.schema(of: domain, values: values()), schema.isSecret(key)
        else { return sources }
        return sources.map { source in
            var shown = source
            shown.value = CommandSchema.redaction
            return shown
        }
    }

    /// What `read` (and `read --system`) prints: the domain's values, or one key's, secrets redacted.
    ///
    /// - Throws: ``CommandFailure`` when the domain has no values, or not `key`.
    func printRead(_ stored: [String: PropertyListValue], of domain: DomainReference, key: String?) throws {
        let values = try shown(stored, of: domain)
        guard let key else {
            guard !values.isEmpty else { throw CommandFailure.missingDomain(domain) }
            print(.dictionary(values))
            return
        }
        // The library's own keys are no settings, but read by name they print as stored.
        guard let value = ReservedKeys.all.contains(key) ? stored[key] : values[key] else {
            throw CommandFailure.missingPair(domain, key)
        }
        print(value)
    }

    func performSchemaVerb(_ command: DefaultsCommand) throws {
        switch command {
        case .installSchema(let file, let domain, let system):
            try installSchema(file, domain: domain, system: system)

        case .describe(let domain, let key, let json):
            let store = try openForReading(domain)
            let values = store.persistentValues()
            let schema = try requireSchema(of: domain, values: values)
            let entries: [DefaultsSchema.Entry]
            if let key {
                guard let entry = schema.schema[key] else {
                    throw CommandFailure("defaults: key \(key) is not in the schema of \(domain.displayName)\n")
                }
                entries = [entry]
            } else {
                entries = schema.schema.entries
            }
            let value = { (entry: DefaultsSchema.Entry) -> PropertyListValue? in
                let stored = values[entry.name]
                return self.revealsSecrets ? stored : schema.shown(stored, forKey: entry.name)
            }
            if json {
                let objects = entries.map { Self.json($0, value: value($0)) }
                io.standardOutput((key == nil ? "[" + objects.joined(separator: ",") + "]" : objects[0]) + "\n")
            } else {
                io.standardOutput(entries.map { Self.text($0, value: value($0)) }.joined(separator: "\n"))
            }

        case .listKeys(let domain, let json):
            let values = try openForReading(domain).persistentValues()
            let names =
                try domains.schema(of: domain, values: values)?.schema.entries.map(\.name)
                ?? values.keys.filter { !ReservedKeys.all.contains($0) }.sorted()
            io.standardOutput(
                json
                    ? "[" + names.map(WatchReport.json).joined(separator: ",") + "]\n"
                    : names.map { $0 + "\n" }.joined())

        case .reset(let domain, let key, let json):
            let store = try openForWriting(domain, "reset", keys: key.map { [$0] })
            let values = store.persistentValues()
            let schema = try domains.schema(of: domain, values: values)
            let names: [String]
            if let key {
                if let schema, schema.schema[key] == nil, values[key] == nil {
                    throw CommandFailure("defaults: key \(key) is not in the schema of \(domain.displayName)\n")
                }
                names = values[key] == nil ? [] : [key]
            } else if let schema {
                names = schema.schema.entries.map(\.name).filter { values[$0] != nil }
            } else {
                names = values.keys.filter { !ReservedKeys.all.contains($0) }.sorted()
            }
            for name in names { store.set(nil, forKey: name) }
            if !names.isEmpty { try save(store, domain) }
            if json { io.standardOutput("{\"reset\":[" + names.map(WatchReport.json).joined(separator: ",") + "]}\n") }

        case .schema(let domain, let json):
            let schema = try requireSchema(of: domain, values: try openForReading(domain).persistentValues())
            if json {
                io.standardOutput(WatchReport.json(schema.schema.propertyList) + "\n")
            } else {
                io.writeStandardOutputData(try schema.schema.propertyListData())
            }

        default:
            preconditionFailure("\(command) is not a schema verb")
        }
    }

    private func requireSchema(of domain: DomainReference, values: [String: PropertyListValue]) throws
        -> CommandSchema
    {
        guard let schema = try domains.schema(of: domain, values: values) else {
            let places: String
            switch domain {
            case .remote(let address):
                places = "etcd key \(address.root)\(address.suite)/\(ReservedKeys.schema)"
            default:
                places = domains.schemaDirectoryPaths.joined(separator: ", ")
            }
            throw CommandFailure(
                "defaults: no schema is installed for \(domain.displayName) (looked in \(places)); "
                    + "install one with 'defaults install-schema <file>'\n")
        }
        return schema
    }

    /// Reads and checks the file, then installs it: as the file `<suite>.plist` in the user's (or first system)
    /// schema directory, or under an `etcd://` suite's prefix.
    private func installSchema(_ file: String, domain: DomainReference?, system: Bool) throws {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw CommandFailure("defaults: cannot read the schema file \(file)\n")
        }
        let schema = try DefaultsSchema(propertyListData: data, source: file)
        switch domain {
        case .remote(let address)?:
            let store = try openForWriting(.remote(address), "install the schema as", keys: [ReservedKeys.schema])
            store.set(schema.propertyList, forKey: ReservedKeys.schema)
            try save(store, .remote(address))
            io.standardOutput("Installed the schema of \(schema.suite) in \(address.text)\n")
        case .global?, .path?:
            throw CommandFailure(
                "defaults: \(file) is the schema of \(schema.suite); install it with no domain, or into an etcd:// suite\n"
            )
        case .named(let name)? where name != schema.suite:
            throw CommandFailure(
                "defaults: \(file) is the schema of \(schema.suite); install it with no domain, or into an etcd:// suite\n"
            )
        case .named?, nil:
            let directories =
                system ? Array(domains.schemaDirectories.dropFirst()) : Array(domains.schemaDirectories.prefix(1))
            guard let directory = directories.first else {
                throw CommandFailure("defaults: no system schema directory (XDG_DATA_DIRS)\n")
            }
            let installed = try schema.install(into: directory)
            io.standardOutput("Installed the schema of \(schema.suite) at \(installed.path)\n")
        }
    }

    /// `describe`'s text for one key: a secret value as `<secret>`, as `read` prints it; the fields of a
    /// dictionary and the elements of an array, indented, one line each:
    ///
    /// ```text
    /// rateLimit
    ///   type: dictionary
    ///   fields:
    ///     burst: integer
    ///     note: string (optional)
    /// ```
    private static func text(_ entry: DefaultsSchema.Entry, value: PropertyListValue?) -> String {
        var lines = [entry.name]
        if let summary = entry.summary { lines.append("  summary: \(summary)") }
        lines.append("  type: \(entry.type.rawValue)" + (entry.isSecret ? " (secret)" : ""))
        if let choices = entry.choices {
            lines.append("  choices: " + choices.map(OpenStepWriter.singleLineString).joined(separator: ", "))
        }
        if let range = entry.range {
            lines.append(
                "  range: \(DefaultsSchema.Entry.text(range.lowerBound)) to \(DefaultsSchema.Entry.text(range.upperBound))"
            )
        }
        lines += shapeLines(of: entry, indent: "  ")
        lines.append("  default: " + (entry.defaultValue.map(OpenStepWriter.singleLineString) ?? "(none)"))
        let shown: String
        switch value {
        case nil: shown = "(default)"
        case CommandSchema.redaction? where entry.isSecret: shown = "<secret>"
        case let value?: shown = OpenStepWriter.singleLineString(for: value)
        }
        lines.append("  value: " + shown)
        return lines.map { $0 + "\n" }.joined()
    }

    /// The lines of an entry's fields (`fields:`, then one line per field) and elements (`elements: <type>`),
    /// each nested shape indented under its line.
    private static func shapeLines(of entry: DefaultsSchema.Entry, indent: String) -> [String] {
        var lines: [String] = []
        if let fields = entry.fields {
            lines.append(indent + "fields:" + (fields.isEmpty ? " (none)" : ""))
            for field in fields {
                lines.append(indent + "  \(field.name): " + shapeLine(field))
                lines += shapeLines(of: field, indent: indent + "    ")
            }
        }
        if let elements = entry.elements {
            lines.append(indent + "elements: " + shapeLine(elements))
            lines += shapeLines(of: elements, indent: indent + "  ")
        }
        return lines
    }

    /// A field's or the elements' type and constraints on one line: `integer, range 1 to 10 (optional) — Burst`.
    private static func shapeLine(_ entry: DefaultsSchema.Entry) -> String {
        var line = entry.type.rawValue
        if let choices = entry.choices {
            line += ", choices " + choices.map(OpenStepWriter.singleLineString).joined(separator: ", ")
        }
        if let range = entry.range {
            line +=
                ", range \(DefaultsSchema.Entry.text(range.lowerBound)) to \(DefaultsSchema.Entry.text(range.upperBound))"
        }
        if entry.isSecret { line += ", secret" }
        if entry.isOptional { line += " (optional)" }
        if let summary = entry.summary { line += " — " + summary }
        return line
    }

    /// `describe --json`'s object for one key.
    private static func json(_ entry: DefaultsSchema.Entry, value: PropertyListValue?) -> String {
        var fields = [
            ("key", WatchReport.json(entry.name)), ("type", WatchReport.json(entry.type.rawValue)),
            ("summary", entry.summary.map(WatchReport.json) ?? "null"),
            ("default", WatchReport.json(entry.defaultValue)),
            ("value", WatchReport.json(value)), ("secret", entry.isSecret ? "true" : "false"),
        ]
        if let choices = entry.choices { fields.append(("choices", WatchReport.json(.array(choices)))) }
        if let range = entry.range {
            fields.append(
                (
                    "range",
                    "{\"min\":\(DefaultsSchema.Entry.text(range.lowerBound)),\"max\":\(DefaultsSchema.Entry.text(range.upperBound))}"
                ))
        }
        let shape = DefaultsSchema.description(of: entry)
        for name in ["fields", "elements"] {
            if let described = shape.dictionaryValue?[name] { fields.append((name, WatchReport.json(described))) }
        }
        return "{" + fields.map { WatchReport.json($0.0) + ":" + $0.1 }.joined(separator: ",") + "}"
    }
}
