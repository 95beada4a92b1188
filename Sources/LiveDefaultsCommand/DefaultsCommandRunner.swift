import Foundation
import LiveDefaults
import LiveDefaultsPropertyList

/// Where the `defaults` command reads and writes its text and data.
package struct CommandIO: Sendable {
    /// Writes text to standard output (each call written through at once, so `watch` lines are never held back).
    package var standardOutput: @Sendable (String) -> Void
    /// Writes text to standard error.
    package var standardError: @Sendable (String) -> Void
    /// Writes bytes to standard output (`export … -`).
    package var writeStandardOutputData: @Sendable (Data) -> Void
    /// Reads all of standard input (`import … -`).
    package var readStandardInput: @Sendable () -> Data

    package init(
        standardOutput: @escaping @Sendable (String) -> Void, standardError: @escaping @Sendable (String) -> Void,
        writeStandardOutputData: @escaping @Sendable (Data) -> Void,
        readStandardInput: @escaping @Sendable () -> Data
    ) {
        self.standardOutput = standardOutput
        self.standardError = standardError
        self.writeStandardOutputData = writeStandardOutputData
        self.readStandardInput = readStandardInput
    }

    /// The process's standard streams. Output is written with write(2), not FileHandle, whose first use
    /// initialises CoreFoundation: a share of a one-shot command's start-up (docs/design.md, "The `defaults`
    /// command's start-up").
    package static let standard = CommandIO(
        standardOutput: { writeAll(1, Array($0.utf8)) },
        standardError: { writeAll(2, Array($0.utf8)) },
        writeStandardOutputData: { writeAll(1, Array($0)) },
        readStandardInput: { FileHandle.standardInput.readDataToEndOfFile() })

    /// Writes all of `bytes` to a descriptor, as FileHandle's write does (a closed pipe ends the process
    /// with SIGPIPE, as it would).
    private static func writeAll(_ descriptor: Int32, _ bytes: [UInt8]) {
        bytes.withUnsafeBytes { buffer in
            guard let start = buffer.baseAddress else { return }
            var offset = 0
            while offset < buffer.count {
                let written = write(descriptor, start + offset, buffer.count - offset)
                if written > 0 {
                    offset += written
                } else if written < 0 && errno == EINTR {
                    continue
                } else {
                    return
                }
            }
        }
    }
}

/// How a run of the command ends.
package enum CommandOutcome {
    /// Exit with this status.
    case exit(Int32)
    /// `watch` is running: keep the process (and this token) alive; changes are printed as they come.
    case watching(AnyObject)
}

/// Runs `defaults` commands: parses arguments, validates everything before a domain is touched, executes
/// against the store, and prints what macOS's `defaults` prints.
///
/// ```swift
/// let runner = DefaultsCommandRunner(domains: CommandDomains(), io: .standard)
/// switch runner.run(Array(CommandLine.arguments.dropFirst())) { … }
/// ```
package struct DefaultsCommandRunner: Sendable {
    /// Exit status for success.
    package static let success: Int32 = 0
    /// Exit status for a missing domain or key, or a failed read or write (as macOS).
    package static let failure: Int32 = 1
    /// Exit status for a malformed command line or value (macOS's usage status, 255).
    package static let usageError: Int32 = 255

    package var domains: CommandDomains
    package var io: CommandIO
    /// Whether secret values are printed in full (`--show-secrets`).
    var revealsSecrets = false
    /// Whether this run names itself (its verb and arguments) as the writer of its changes in the
    /// suites' history: the `defaults` executable's runs do; a runner inside another program (the
    /// tests) leaves that program's own identity alone.
    package var namesItselfInHistory = false
    /// The arguments of a `write` whose recorded command waits for the domain's schema, which says which values
    /// are secret: ``admitted(_:to:in:)`` records them once it has looked the schema up (one look-up, one open).
    var historyArgumentsAwaitingSchema: (arguments: [String], command: DefaultsCommand)?
    /// Whether `write`'s value was given without a type flag, or the whole domain in old-style text (a schema may
    /// convert it: ``CommandSchema``).
    var valueIsBare = false

    package init(domains: CommandDomains, io: CommandIO) {
        self.domains = domains
        self.io = io
    }

    /// Parses and runs the arguments after the program name.
    package func run(_ arguments: [String]) -> CommandOutcome {
        let command: DefaultsCommand
        do {
            command = try DefaultsCommand.parse(arguments)
        } catch {
            if let message = error.macOSMessage {
                io.standardError(message)
            } else {
                // macOS prints its usage on standard output; the line on standard error says what was wrong.
                io.standardOutput(CommandVerb.helpText)
                io.standardError(error.line + "\n")
            }
            return .exit(error.status)
        }
        var runner = self
        if case .write(_, _, let operation) = command {
            runner.valueIsBare = Self.valueIsUntyped(operation, arguments: arguments)
        }
        // A whole domain in old-style text, `{ fontSize = 14; }`, has only strings: a schema reads each as a
        // bare value. XML says its types.
        if case .writeDomain = command, let text = arguments.last {
            runner.valueIsBare = text.drop(while: \.isWhitespace).first != "<"
        }
        if let host = HostOption.host(in: arguments) {
            runner.domains = domains.forHost(host)
        }
        // The writer the suite's history names for this run's changes (docs/design.md, "History"). A `write`'s
        // arguments may hold a secret value: they are recorded once the schema is known (``admitted(_:to:in:)``).
        if namesItselfInHistory {
            switch command {
            case .write, .writeDomain:
                runner.historyArgumentsAwaitingSchema = (arguments, command)
            default:
                HistoryIdentity.setCommand(Self.historyArguments(arguments, command, schema: nil))
            }
        }
        return runner.execute(command)
    }

    /// Whether the strings in `write`'s value stand for text as typed, which a schema may read as its own type
    /// (docs/defaults-command.md, "Schemas"): a bare value (`14`), old-style text (`'{ burst = 3; }'`, where every
    /// scalar is a string), and the elements of `-array`, `-dict`, `-array-add` and `-dict-add` — unless the
    /// value is XML, which says its types, or `-string` is given, which always means a string.
    private static func valueIsUntyped(_ operation: WriteOperation, arguments: [String]) -> Bool {
        // The value's arguments only: a key named `-string` says nothing of the value.
        let value = Array(valueArguments(ofWrite: arguments))
        if case .set(.string(let text)) = operation, value.last == text {
            return value.count < 2 || value[value.count - 2] != "-string"
        }
        guard !value.contains("-string") else { return false }
        if case .set = operation, let text = value.last { return !ValueArguments.looksLikeXML(text) }
        return true
    }

    /// The arguments of `write <domain> <key> <value…>` after the key: past the host option, the
    /// verb, the domain (`-app <name>` is two) and the key.
    static func valueArguments(ofWrite arguments: [String]) -> ArraySlice<String> {
        var index = arguments.first == "-currentHost" ? 1 : arguments.first == "-host" ? 2 : 0
        index += 1
        if index < arguments.count, arguments[index] == "-app" { index += 1 }
        index += 2
        return arguments[min(index, arguments.count)...]
    }

    /// Runs a parsed command.
    package func execute(_ command: DefaultsCommand) -> CommandOutcome {
        do {
            return try perform(command)
        } catch let failure as CommandFailure {
            io.standardError(failure.message)
            return .exit(Self.failure)
        } catch let error as DefaultsError {
            io.standardError("defaults: \(error.message)\n")
            return .exit(Self.failure)
        } catch {
            io.standardError("defaults: \(error)\n")
            return .exit(Self.failure)
        }
    }

    /// A failure whose message is printed as is (macOS's wording, leading and trailing line breaks included).
    struct CommandFailure: Error {
        var message: String
        init(_ message: String) { self.message = message }

        static func missingDomain(_ domain: DomainReference) -> Self {
            Self("\nDomain \(domain.displayName) does not exist\n")
        }
        static func missingPair(_ domain: DomainReference, _ key: String) -> Self {
            Self("\nThe domain/default pair of (\(domain.preferencesName), \(key)) does not exist\n")
        }
        static func notDeleted(_ domain: DomainReference) -> Self {
            Self("\nDomain (\(domain.preferencesName)) not found.\nDefaults have not been changed.\n")
        }
    }

    func open(_ domain: DomainReference, for access: CommandDomainAccess, watching: Bool = false) throws
        -> any CommandDomain
    {
        let store = try domains.open(domain, domains.directoryPath, watching)
        try store.prepare(for: access)
        return store
    }

    /// Opens a domain to read it: a corrupt file is an error, not an empty domain.
    ///
    /// A remote domain's value that is not a property list is skipped, and said so on standard
    /// error (``unreadable(_:in:problem:)``), unless `key` is that key: then it is the error.
    /// `searchList` asks for the store with its whole search list (`explain`, `read --system`),
    /// never the suite file alone.
    func openForReading(
        _ domain: DomainReference, key: String? = nil, searchList: Bool = false
    ) throws -> any CommandDomain {
        let snapshot = searchList ? nil : try domains.openForReading?(domain, domains.directoryPath)
        let store = try snapshot ?? open(domain, for: .read)
        if let error = store.lastError, error.code == .corruptFile || error.code == .readFailed {
            throw CommandFailure("defaults: cannot read domain \(domain.displayName): \(error.message)\n")
        }
        let unreadable = store.unreadableValues
        if let key, let problem = unreadable[key] {
            throw CommandFailure("defaults: cannot read \(Self.unreadable(key, in: domain, problem: problem))\n")
        }
        for (skipped, problem) in unreadable.sorted(by: { $0.key < $1.key }) where key == nil {
            io.standardError("defaults: skipped \(Self.unreadable(skipped, in: domain, problem: problem))\n")
        }
        return store
    }

    /// A key whose stored value is not a property list, what is wrong, and how to repair it.
    private static func unreadable(_ key: String, in domain: DomainReference, problem: String) -> String {
        let name = domain.displayName
        let quotedKey = key.debugDescription
        return
            "key \(quotedKey) of \(name): \(problem). Write a value with `defaults write \(name) \(quotedKey) <value>`, "
            + "or remove the key with `defaults delete \(name) \(quotedKey)`"
    }

    /// Opens a domain to change it with `verb`, at `keys` (nil: the whole domain); a corrupt file is
    /// reported (the store keeps it aside before replacing it).
    func openForWriting(_ domain: DomainReference, _ verb: String, keys: [String]?) throws
        -> any CommandDomain
    {
        let store = try open(domain, for: .change(verb: verb, keys: keys))
        if let error = store.lastError, error.code == .corruptFile {
            io.standardError("defaults: warning: \(error.message)\n")
        }
        return store
    }

    /// Writes the domain's changes; a failure prints macOS's line (`rename` has its own), then the reason,
    /// which macOS does not give.
    func save(_ store: any CommandDomain, _ domain: DomainReference, renaming: Bool = false) throws {
        do {
            try store.synchronize()
        } catch let error as DefaultsError {
            let line =
                renaming
                ? "Failed to write domain \(domain.displayName)"
                : "Could not write domain \(domain.displayName); exiting"
            throw CommandFailure("\(line)\ndefaults: \(error.message)\n")
        }
    }

    func print(_ value: PropertyListValue) {
        io.standardOutput(OpenStepWriter.string(for: value) + "\n")
    }

    // MARK: Verbs

    func perform(_ command: DefaultsCommand) throws -> CommandOutcome {
        switch command {
        case .help:
            io.standardOutput(CommandVerb.helpText)

        case .readAll:
            var all: [String: PropertyListValue] = [:]
            for domain in domains.domainNames().map(Self.domain(named:)) {
                let values = try shown(try openForReading(domain).persistentValues(), of: domain)
                if !values.isEmpty { all[domain.displayName] = .dictionary(values) }
            }
            print(.dictionary(all))

        case .read(let domain, let key):
            try printRead(try openForReading(domain, key: key).persistentValues(), of: domain, key: key)

        case .readType(let domain, let key):
            guard let value = try openForReading(domain, key: key).persistentValues()[key] else {
                throw CommandFailure.missingPair(domain, key)
            }
            io.standardOutput("Type is \(value.typeName)\n")

        case .write(let domain, let key, let operation):
            let store = try openForWriting(domain, "write", keys: [key])
            try refuseForced([key], in: store, domain)
            let value = try newValue(of: key, in: store, applying: operation)
            store.set(try admitted([key: value], to: domain, in: store)[key], forKey: key)
            try save(store, domain)

        case .writeDomain(let domain, let values):
            let store = try openForWriting(domain, "write", keys: nil)
            try refuseForced(values.keys.sorted(), in: store, domain)
            var replaced = try admitted(values, to: domain, in: store)
            // The reserved keys stay unless the new domain names them.
            let current = store.persistentValues()
            for key in ReservedKeys.all where replaced[key] == nil {
                replaced[key] = current[key]
            }
            store.replacePersistentValues(replaced)
            try save(store, domain)

        case .rename(let domain, let old, let new):
            let store = try openForWriting(domain, "rename", keys: [old, new])
            guard let value = store.persistentValues()[old] else {
                throw CommandFailure(
                    "Key \(old) does not exist in domain \(domain.displayName); leaving defaults unchanged\n")
            }
            if old != new {
                // The value lands at a key the schema may describe: checked as a write of it is.
                store.set(try admitted([new: value], to: domain, in: store)[new], forKey: new)
                store.set(nil, forKey: old)
                try save(store, domain, renaming: true)
            }

        case .delete(let domain, let key):
            let store = try openForWriting(domain, "delete", keys: key.map { [$0] })
            let values = store.persistentValues()
            if let key {
                // A value that is not a property list reads as absent, and is removed all the same.
                guard values[key] != nil || store.unreadableValues[key] != nil else {
                    throw CommandFailure.notDeleted(domain)
                }
                store.set(nil, forKey: key)
            } else {
                guard !values.isEmpty || !store.unreadableValues.isEmpty else {
                    throw CommandFailure.notDeleted(domain)
                }
                store.replacePersistentValues(nil)
            }
            try save(store, domain)

        case .domains:
            let names = domains.domainNames().filter { $0 != DomainReference.globalDomainName }
            io.standardOutput(names.joined(separator: ", ") + "\n")

        case .find(let word):
            try find(word)

        case .importDomain(let domain, let source):
            try importDomain(domain, from: source)

        case .exportDomain(let domain, let destination):
            try exportDomain(domain, to: destination)

        case .version:
            io.standardOutput("defaults (LiveDefaults) \(CommandVersion.text)\n")

        case .complete(let words):
            io.standardOutput(CommandCompletion.candidates(words, domains: domains).map { $0 + "\n" }.joined())

        case .watch(let domain, let keys, let json):
            return .watching(try watch(domain, keys: Set(keys), json: json))

        case .readSystemWide(let domain, let key):
            try printRead(try openForReading(domain, searchList: true).systemWideValues(), of: domain, key: key)

        case .explain(let domain, let key, let json):
            let store = try openForReading(domain, searchList: true)
            let sources = store.sources(forKey: key)
            var ignored = Self.ignoredManagedLayers(
                of: domain, key: key, settings: AdministeredSettings.fromEnvironment())
            guard !sources.isEmpty || !ignored.isEmpty else { throw CommandFailure.missingPair(domain, key) }
            if !revealsSecrets, try domains.schema(of: domain, values: store.persistentValues())?.isSecret(key) == true
            {
                for index in ignored.indices { ignored[index].value = CommandSchema.redaction }
            }
            let report = ExplainReport(
                domain: domain.displayName, key: key,
                sources: try shown(sources, forKey: key, of: domain, values: store.persistentValues()), ignored: ignored
            )
            io.standardOutput(json ? report.json + "\n" : report.lines.joined(separator: "\n") + "\n")

        case .showingSecrets(let command):
            var runner = self
            runner.revealsSecrets = true
            return try runner.perform(command)

        case .installSchema, .describe, .listKeys, .reset, .schema:
            try performSchemaVerb(command)

        case .history, .diff, .rollback:
            try performHistoryVerb(command)
        }
        return .exit(Self.success)
    }

    /// The managed files of `domain` (its own, then the global domain's) that hold `key` but are ignored because
    /// a user other than the trusted owner could change them (``ManagedFileTrust``): `explain` lists them, so
    /// that a key whose only value is there is not said not to exist. Read only for `explain`.
    private static func ignoredManagedLayers(of domain: DomainReference, key: String, settings: AdministeredSettings)
        -> [ExplainReport.IgnoredLayer]
    {
        guard let directory = settings.managedDirectory?.path else { return [] }
        let names: [String]
        switch domain {
        case .named(let name): names = [name, DomainReference.globalDomainName]
        case .global: names = [DomainReference.globalDomainName]
        case .path, .remote: return []
        }
        return names.compactMap { name in
            let path = (directory as NSString).appendingPathComponent(name + ".plist")
            let trust = ManagedFileTrust(path: path, suite: name, trustedOwner: settings.trustedOwner)
            guard let problem = trust.problem(), let data = FileManager.default.contents(atPath: path),
                let value = (try? PropertyListCodec.decode(data))?.value.dictionaryValue?[key]
            else { return nil }
            let reason = problem.message.prefix { $0 != ";" }
            return ExplainReport.IgnoredLayer(
                layer: .managed, location: path, value: value,
                reason: reason.prefix(1).lowercased() + reason.dropFirst())
        }
    }

    /// Refuses a write of keys an administrator forces: reads would not show it (docs/design.md,
    /// "Administered settings: forced keys").
    private func refuseForced(_ keys: [String], in store: any CommandDomain, _ domain: DomainReference) throws {
        for key in keys {
            guard let source = store.forcingSource(ofKey: key) else { continue }
            throw CommandFailure(
                "defaults: the key \(key) of domain \(domain.displayName) is forced by the administrator in "
                    + "\(source); nothing was written.\n")
        }
    }

    /// The value `operation` leaves at `key`; `-array-add`/`-dict-add` need the current one.
    private func newValue(of key: String, in store: any CommandDomain, applying operation: WriteOperation) throws
        -> PropertyListValue
    {
        switch operation {
        case .set(let value):
            return value
        case .arrayAdd(let elements):
            switch store.persistentValues()[key] {
            case nil: return .array(elements)
            case .array(let existing)?: return .array(existing + elements)
            case _?:
                throw CommandFailure(
                    "Value for key \(key) is not an array; cannot append.  Leaving defaults unchanged.\n")
            }
        case .dictionaryAdd(let entries):
            switch store.persistentValues()[key] {
            case nil: return .dictionary(entries)
            case .dictionary(let existing)?: return .dictionary(existing.merging(entries) { _, new in new })
            case _?:
                throw CommandFailure(
                    "Value for key \(key) is not a dictionary; cannot append.  Leaving defaults unchanged.\n")
            }
        }
    }

    /// A domain found in the directory, by its file's base name.
    private static func domain(named name: String) -> DomainReference {
        name == DomainReference.globalDomainName ? .global : .named(name)
    }

    /// Prints, for each domain where anything matches, the entries whose key or string value (at any depth)
    /// contains `word` (all of them when the domain's name does), as macOS does: case-insensitively, and not
    /// numbers, dates, data or Booleans.
    private func find(_ word: String) throws {
        var found = false
        for domain in domains.domainNames().map(Self.domain(named:)) {
            let values = try shown(try openForReading(domain).persistentValues(), of: domain)
            let everything = Self.contains(domain.preferencesName, word)
            let matching = values.filter { everything || Self.contains($0.key, word) || Self.contains($0.value, word) }
            guard !matching.isEmpty else { continue }
            found = true
            io.standardOutput(
                "Found \(matching.count) keys in domain '\(domain.displayName)': "
                    + OpenStepWriter.string(for: .dictionary(matching)) + "\n")
        }
        if !found { io.standardError("No domain, key, nor value containing '\(word)'\n") }
    }

    private static func contains(_ text: String, _ word: String) -> Bool {
        text.range(of: word, options: .caseInsensitive) != nil
    }

    /// Whether a string in `value` (a dictionary's keys included) contains `word`.
    private static func contains(_ value: PropertyListValue, _ word: String) -> Bool {
        switch value {
        case .string(let string): contains(string, word)
        case .array(let elements): elements.contains { contains($0, word) }
        case .dictionary(let entries): entries.contains { contains($0.key, word) || contains($0.value, word) }
        default: false
        }
    }

    private func importDomain(_ domain: DomainReference, from source: String) throws {
        let data: Data
        if source == "-" {
            data = io.readStandardInput()
        } else {
            do {
                data = try Data(contentsOf: URL(fileURLWithPath: source))
            } catch {
                throw CommandFailure("Could not read data from \(source)\n")
            }
        }
        let value: PropertyListValue
        var runner = self
        do {
            let decoded = try PropertyListCodec.decode(data)
            value = decoded.value
            // Old-style text has only strings: a schema reads each value as `write` reads the same text.
            runner.valueIsBare = decoded.format == .openStep
        } catch {
            throw CommandFailure("Could not parse property list from \(source) due to \(error.message)\n")
        }
        guard case .dictionary(let values) = value else {
            throw CommandFailure(
                "Property list \(OpenStepWriter.string(for: value)) was not a dictionary\n"
                    + "Defaults have not been changed.\n")
        }
        // macOS sets each imported key and removes none: the imported dictionary is merged into the domain.
        let store = try runner.openForWriting(domain, "import", keys: Array(values.keys))
        for (key, value) in try runner.admitted(values, to: domain, in: store) { store.set(value, forKey: key) }
        try runner.save(store, domain)
    }

    /// Writes the domain (an empty dictionary when it does not exist, as on macOS).
    private func exportDomain(_ domain: DomainReference, to destination: String) throws {
        let values = try openForReading(domain).persistentValues()
        if destination == "-" {
            io.writeStandardOutputData(try PropertyListCodec.encode(.dictionary(values), format: .xml))
            return
        }
        let data = try PropertyListCodec.encode(.dictionary(values), format: .binary)
        do {
            try data.write(to: URL(fileURLWithPath: destination), options: .atomic)
        } catch {
            throw CommandFailure("Could not export domain \(domain.displayName) to \(destination) due to \(error)\n")
        }
    }

    private func watch(_ domain: DomainReference, keys: Set<String>, json: Bool) throws -> AnyObject {
        let store = try open(domain, for: .read, watching: true)
        for (skipped, problem) in store.unreadableValues.sorted(by: { $0.key < $1.key }) {
            io.standardError("defaults: skipped \(Self.unreadable(skipped, in: domain, problem: problem))\n")
        }
        let io = io
        let name = domain == .global ? DomainReference.globalDomainName : domain.displayName
        let schema = revealsSecrets ? nil : try domains.schema(of: domain, values: store.persistentValues())
        let token = store.watchChanges(queue: DispatchQueue(label: "defaults.watch")) { change in
            // The library's own keys are no settings: shown only when named.
            guard keys.isEmpty ? !ReservedKeys.all.contains(change.key) : keys.contains(change.key) else { return }
            let report = WatchReport(
                domain: name, key: change.key,
                oldValue: schema?.shown(change.oldValue, forKey: change.key) ?? change.oldValue,
                newValue: schema?.shown(change.newValue, forKey: change.key) ?? change.newValue,
                origin: change.isExternal ? "external" : "local")
            io.standardOutput((json ? report.jsonLine : report.line) + "\n")
        }
        let subject = keys.isEmpty ? name : "\(keys.sorted().joined(separator: ", ")) in \(name)"
        io.standardError("Watching \(subject) for changes; press Control-C to stop.\n")
        // The observation does not keep the store alive; the session keeps both.
        return WatchSession(store: store, token: token)
    }

    /// What a running `watch` must keep alive: the open domain and its observation.
    private final class WatchSession: Sendable {
        let store: any CommandDomain
        let token: any AnyObject & Sendable

        init(store: any CommandDomain, token: any AnyObject & Sendable) {
            self.store = store
            self.token = token
        }
    }
}
