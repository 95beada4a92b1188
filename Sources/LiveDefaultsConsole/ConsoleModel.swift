import Foundation
import LiveDefaults
import LiveDefaultsCommand
import LiveDefaultsEtcd

/// What the console shows and changes: every domain open and observed, each key's row (its effective value,
/// the layers from `sources(forKey:)`, the schema, the forcing file), and edits run through the `defaults`
/// command's own code (docs/console.md).
package final class ConsoleModel: Sendable {
    /// An open domain: its store, and the observation that publishes its changes.
    private final class OpenDomain: Sendable {
        let id: String
        let reference: DomainReference
        /// Which files hold the domain: `user`, `system`, `managed`; `fleet` for an etcd suite.
        let kinds: [String]
        let defaults: Defaults
        let location: String
        let connection: FleetConnection?
        let tokens: Locked<[ObservationToken]> = Locked([])
        /// Each file of the suite's own layers, opened alone: a change in a layer that does not win (a shadowed
        /// system-wide value) changes no effective value, yet the page's list of layers must show it.
        let layerFiles: Locked<[Defaults]> = Locked([])

        init(
            id: String, reference: DomainReference, kinds: [String], defaults: Defaults, location: String,
            connection: FleetConnection? = nil
        ) {
            self.id = id
            self.reference = reference
            self.kinds = kinds
            self.defaults = defaults
            self.location = location
            self.connection = connection
        }
    }

    /// The command's view of the domains: the same directories, schemas and administered settings.
    package let domains: CommandDomains
    package let broadcaster = ConsoleBroadcaster()
    private let settings: AdministeredSettings
    private let fleetAddresses: [RemoteSuiteAddress]
    private let environment: [String: String]
    private let open = Locked<[String: OpenDomain]>([:])
    private let changes = DispatchQueue(label: "livedefaults.console.changes")
    private let scanTimer: Locked<DispatchSourceTimer?> = Locked(nil)
    private let stateTasks: Locked<[Task<Void, Never>]> = Locked([])

    /// - Parameters:
    ///   - domains: Where the domains are (the command's rules: `$XDG_CONFIG_HOME`, the schema directories).
    ///   - settings: The system-wide and managed directories.
    ///   - fleet: Fleet suites to show, as `etcd://` addresses.
    ///   - environment: Where a fleet suite's endpoints and credentials come from (as for `defaults`).
    package init(
        domains: CommandDomains = CommandDomains(), settings: AdministeredSettings = .fromEnvironment(),
        fleet: [RemoteSuiteAddress] = [], environment: [String: String] = ProcessInfo.processInfo.environment
    ) {
        self.domains = domains
        self.settings = settings
        self.fleetAddresses = fleet
        self.environment = environment
    }

    /// Opens every domain and follows them; looks for new or removed domain files every `scanInterval`.
    ///
    /// - Throws: ``ConsoleError`` when a fleet suite's address or environment is wrong.
    package func start(scanInterval: DispatchTimeInterval = .seconds(1)) throws {
        for address in fleetAddresses {
            let suite: FleetSuite
            do {
                suite = try address.fleetSuite(environment: environment)
            } catch {
                throw ConsoleError("\(address.text): \(error)")
            }
            let defaults = try Defaults.fleet(suite)
            guard let connection = defaults.fleetConnection else { continue }
            let domain = OpenDomain(
                id: address.text, reference: .remote(address), kinds: ["fleet"], defaults: defaults,
                location: "etcd " + suite.endpoints.map(\.absoluteString).joined(separator: ", ") + ", prefix "
                    + suite.root + (suite.root.hasSuffix("/") ? "" : "/") + suite.name + "/",
                connection: connection)
            observe(domain)
            open.withLock { $0[domain.id] = domain }
            let task = Task { [weak self] in
                for await _ in connection.stateUpdates() {
                    self?.publishDomains()
                }
            }
            stateTasks.withLock { $0.append(task) }
        }
        _ = scan()
        let timer = DispatchSource.makeTimerSource(queue: changes)
        timer.schedule(deadline: .now() + scanInterval, repeating: scanInterval)
        timer.setEventHandler { [weak self] in
            guard let self, self.scan() else { return }
            self.publishDomains()
        }
        timer.resume()
        scanTimer.withLock { $0 = timer }
    }

    /// Stops following.
    package func stop() {
        scanTimer.withLock { $0?.cancel() }
        for task in stateTasks.withLock({ $0 }) { task.cancel() }
        let domains = open.withLock { state in
            defer { state = [:] }
            return Array(state.values)
        }
        for domain in domains { domain.tokens.withLock { $0.forEach { $0.cancel() } } }
        broadcaster.close()
    }

    // MARK: Domains

    /// The local suites: a file in the user's directory, a system-wide directory or the managed one.
    private func localSuites() -> [String: [String]] {
        var suites: [String: [String]] = [:]
        func add(_ directory: String, _ kind: String) {
            for file in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
            where file.hasSuffix(".plist") && !file.hasPrefix(".") && file.count > ".plist".count {
                let name = String(file.dropLast(".plist".count))
                guard (try? SuiteLocation.validate(suiteName: name)) != nil else { continue }
                if suites[name]?.contains(kind) != true { suites[name, default: []].append(kind) }
            }
        }
        add(domains.directoryPath, "user")
        for directory in settings.systemDirectories { add(directory.path, "system") }
        if let managed = settings.managedDirectory { add(managed.path, "managed") }
        return suites
    }

    /// Opens domains whose files appeared and closes those whose files went; whether anything changed.
    @discardableResult
    private func scan() -> Bool {
        let found = localSuites()
        let current = open.withLock { $0 }
        var changed = false
        for (name, kinds) in found {
            if let existing = current[name], existing.kinds == kinds { continue }
            guard
                let defaults = try? Defaults(
                    suiteName: name, directory: URL(fileURLWithPath: domains.directoryPath, isDirectory: true),
                    administeredSettings: settings)
            else { continue }
            let reference: DomainReference = name == Defaults.globalDomain ? .global : .named(name)
            let location = (domains.directoryPath as NSString).appendingPathComponent(name + ".plist")
            let domain = OpenDomain(
                id: name, reference: reference, kinds: kinds, defaults: defaults, location: location)
            observe(domain)
            observeLayers(of: domain, named: name)
            let replaced = open.withLock { state in
                defer { state[name] = domain }
                return state[name]
            }
            replaced?.tokens.withLock { $0.forEach { $0.cancel() } }
            changed = true
        }
        for (id, domain) in current where domain.connection == nil && found[id] == nil {
            open.withLock { _ = $0.removeValue(forKey: id) }
            domain.tokens.withLock { $0.forEach { $0.cancel() } }
            changed = true
        }
        return changed
    }

    private func observe(_ domain: OpenDomain) {
        let token = domain.defaults.observeAll(queue: changes) { [weak self, weak domain] change in
            guard let self, let domain, !ReservedKeys.all.contains(change.key) else { return }
            self.publishChange(of: change.key, in: domain)
        }
        domain.tokens.withLock { $0.append(token) }
    }

    /// Observes the suite's own files one by one (the user's, the system-wide ones, the managed one), so that a
    /// change of any layer reaches the page, not only a change of the value that wins. They are only read.
    private func observeLayers(of domain: OpenDomain, named name: String) {
        var directories = [domains.directoryPath] + settings.systemDirectories.map(\.path)
        if let managed = settings.managedDirectory { directories.append(managed.path) }
        for directory in directories {
            let path = (directory as NSString).appendingPathComponent(name + ".plist")
            guard FileManager.default.fileExists(atPath: path),
                let file = try? Defaults(fileURL: URL(fileURLWithPath: path), watchesFiles: true)
            else { continue }
            let token = file.observeAll(queue: changes) { [weak self, weak domain] change in
                guard let self, let domain, !ReservedKeys.all.contains(change.key) else { return }
                self.publishChange(of: change.key, in: domain)
            }
            domain.tokens.withLock { $0.append(token) }
            domain.layerFiles.withLock { $0.append(file) }
        }
    }

    private func publishChange(of key: String, in domain: OpenDomain) {
        let schema = try? domains.schema(of: domain.reference, values: domain.defaults.persistentValues())
        let row = row(key, in: domain, schema: schema ?? nil, revealing: false)
        // A fleet suite's state moves with each change (its revision): the page's heading follows.
        let state = domain.connection.map { Self.describe($0.state) }
        broadcaster.publish("change") { _ in
            var event: ConsoleJSON = ["domain": .string(domain.id), "key": .string(key), "row": row ?? .null]
            if let state { event["state"] = state }
            return event
        }
    }

    private func publishDomains() {
        let list = domainList()
        broadcaster.publish("domains") { _ in ["domains": list] }
    }

    /// The domains, sorted: the global domain first, then suites by name, then fleet suites.
    package func domainList() -> ConsoleJSON {
        let domains = open.withLock { Array($0.values) }
        func rank(_ domain: OpenDomain) -> Int {
            domain.reference == .global ? 0 : domain.connection == nil ? 1 : 2
        }
        return .array(
            domains.sorted { (rank($0), $0.id) < (rank($1), $1.id) }.map { domain in
                var info = Self.describe(domain)
                if let connection = domain.connection { info["state"] = Self.describe(connection.state) }
                return info
            })
    }

    private static func describe(_ domain: OpenDomain) -> ConsoleJSON {
        [
            "id": .string(domain.id), "kinds": .array(domain.kinds.map { .string($0) }),
            "location": .string(domain.location),
        ]
    }

    /// A fleet suite's connection state, for the page: `{"name": live|connecting|stale|offline, "text": …}`.
    static func describe(_ state: FleetState) -> ConsoleJSON {
        switch state {
        case .connecting: return ["name": "connecting", "text": "connecting to etcd"]
        case .live(let revision): return ["name": "live", "text": .string("live at revision \(revision)")]
        case .stale(let revision, let since, let reason):
            return [
                "name": "stale",
                "text": .string(
                    "etcd unreachable since \(since.formatted(.iso8601)): values of revision \(revision) (\(reason))"),
            ]
        case .offline(let since, let reason):
            return [
                "name": "offline",
                "text": .string("etcd unreachable since \(since.formatted(.iso8601)), nothing known (\(reason))"),
            ]
        }
    }

    // MARK: Rows

    /// The page's picture of one domain: its rows, sorted by key, with the version of the last event they include.
    ///
    /// - Returns: nil when no such domain is open.
    package func snapshot(domain id: String?) -> ConsoleJSON {
        // The version first: an event numbered after it may repeat what the rows hold, never miss what they lack.
        let version = broadcaster.version
        var answer: ConsoleJSON = ["version": .integer(version), "domains": domainList()]
        guard let id, let domain = open.withLock({ $0[id] }) else { return answer }
        let values = domain.defaults.persistentValues()
        var description = Self.describe(domain)
        let schema: CommandSchema?
        do {
            schema = try domains.schema(of: domain.reference, values: values)
            if let schema { description["schema"] = .string(schema.source) }
        } catch {
            schema = nil
            description["schemaProblem"] = .string((error as? DefaultsError)?.message ?? "\(error)")
        }
        if let problem = domain.defaults.lastError { description["problem"] = .string(problem.message) }
        if let connection = domain.connection { description["state"] = Self.describe(connection.state) }
        var keys = Set(domain.defaults.dictionaryRepresentation().keys)
        keys.formUnion(schema?.schema.entries.map(\.name) ?? [])
        keys.subtract(ReservedKeys.all)
        description["rows"] = .array(keys.sorted().compactMap { row($0, in: domain, schema: schema, revealing: false) })
        answer["domain"] = description
        return answer
    }

    /// One key's row; nil when the domain does not hold it (only the global domain's layer does, or none).
    private func row(_ key: String, in domain: OpenDomain, schema: CommandSchema?, revealing: Bool) -> ConsoleJSON? {
        let sources = domain.defaults.sources(forKey: key)
        let entry = schema?.schema[key]
        if entry == nil
            && (sources.isEmpty || (domain.reference != .global && sources.allSatisfy { $0.layer == .globalDomain }))
        {
            return nil
        }
        let hidden = entry?.isSecret == true && !revealing
        var row: ConsoleJSON = ["key": .string(key), "secret": .bool(entry?.isSecret == true)]
        if let winner = sources.first(where: \.wins) {
            row["value"] = hidden ? ConsoleValues.secretNode : ConsoleValues.node(winner.value)
            row["text"] = .string(hidden ? "<secret>" : ConsoleValues.line(winner.value))
            row["type"] = .string(ConsoleValues.typeName(winner.value))
            if !hidden, winner.value.isContainer {
                row["editText"] = .string(ConsoleValues.editorText(winner.value, typed: entry != nil))
            }
            row["layer"] = .string(winner.layer.rawValue)
        }
        row["layers"] = .array(
            sources.map { source in
                var layer: ConsoleJSON = [
                    "layer": .string(source.layer.rawValue), "domain": .string(source.domain),
                    "wins": .bool(source.wins),
                    "text": .string(hidden ? "<secret>" : ConsoleValues.line(source.value)),
                ]
                if let location = source.location { layer["location"] = .string(location) }
                if let revision = source.revision { layer["revision"] = .integer(revision) }
                return layer
            })
        if let forcing = domain.defaults.forcingSource(ofKey: key) { row["forcedBy"] = .string(forcing) }
        if let entry, let schema { row["schema"] = ConsoleValues.schema(entry, source: schema.source) }
        return row
    }

    /// A secret key's row with its value shown (the page shows it for that one key until another is revealed).
    package func reveal(domain id: String, key: String) -> ConsoleJSON? {
        guard let domain = open.withLock({ $0[id] }) else { return nil }
        let schema = try? domains.schema(of: domain.reference, values: domain.defaults.persistentValues())
        return row(key, in: domain, schema: schema ?? nil, revealing: true)
    }

    // MARK: Edits

    /// An edit from the page, as `defaults write` takes it.
    package struct Edit: Sendable, Equatable {
        /// How the text is given: `bool`, `integer`, `real`, `string`, `date`, `data` (the flags of `defaults
        /// write`), or `text` (no flag: a bare value or a property list, which a schema reads as its types).
        package var kind: String
        package var text: String

        package init(kind: String, text: String) {
            self.kind = kind
            self.text = text
        }

        /// The arguments after the key, or nil for an unknown kind.
        package var valueArguments: [String]? {
            switch kind {
            case "bool": ["-bool", text]
            case "integer": ["-int", text]
            case "real": ["-float", text]
            case "string": ["-string", text]
            case "date": ["-date", text]
            case "data": ["-data", text]
            case "text": [text]
            default: nil
            }
        }
    }

    /// The domain as the command line names it.
    private static func argument(_ reference: DomainReference) -> String {
        switch reference {
        case .global: "-g"
        case .named(let name): name
        case .path(let path): path
        case .remote(let address): address.text
        }
    }

    /// Writes `edit` to `key` with `defaults write`'s own code (its parsing, the forced-key refusal, the schema's
    /// check and conversions, the atomic write): a refusal changes nothing.
    ///
    /// - Returns: nil when written, else what the command printed on standard error.
    package func write(domain id: String, key: String, _ edit: Edit) -> String? {
        guard let reference = open.withLock({ $0[id]?.reference }) else { return "There is no domain \(id)." }
        guard let value = edit.valueArguments else { return "'\(edit.kind)' is not a kind of value." }
        return runCommand(["write", Self.argument(reference), key] + value)
    }

    /// Removes `key` with `defaults delete`.
    ///
    /// - Returns: nil when removed, else what the command printed on standard error.
    package func delete(domain id: String, key: String) -> String? {
        guard let reference = open.withLock({ $0[id]?.reference }) else { return "There is no domain \(id)." }
        if let forcing = open.withLock({ $0[id]?.defaults })?.forcingSource(ofKey: key) {
            return "The key \(key) is forced by the administrator in \(forcing); nothing was removed."
        }
        return runCommand(["delete", Self.argument(reference), key])
    }

    private func runCommand(_ arguments: [String]) -> String? {
        runCommandPrinting(arguments).problem
    }

    /// Runs `defaults` with `arguments`: what it printed on standard output, and on failure what it printed on
    /// standard error (nil when it succeeded).
    private func runCommandPrinting(_ arguments: [String]) -> (output: String, problem: String?) {
        let output = Locked("")
        let errors = Locked("")
        let io = CommandIO(
            standardOutput: { text in output.withLock { $0 += text } },
            standardError: { text in errors.withLock { $0 += text } },
            writeStandardOutputData: { _ in }, readStandardInput: { Data() })
        let printed = { output.withLock { $0 } }
        switch DefaultsCommandRunner(domains: domains, io: io).run(arguments) {
        case .exit(DefaultsCommandRunner.success): return (printed(), nil)
        case .exit, .watching:
            let message = errors.withLock { $0 }.trimmingCharacters(in: .whitespacesAndNewlines)
            return (printed(), message.isEmpty ? "defaults \(arguments.first ?? "") failed." : message)
        }
    }

    // MARK: History

    /// How many of a key's changes the page shows, the newest.
    package static let historyLimit = 20

    /// The newest ``historyLimit`` changes of `key`, newest first, as `defaults history` reads them
    /// (``CommandDomains/historyEntries(of:_:revealingSecrets:)``: secret values redacted unless `revealing`):
    /// each `{"id", "date", "old", "new", "origin", "who"}`, the values as text. A domain that keeps no history
    /// (a fleet suite, for now) gives `{"unavailable": why}`.
    ///
    /// - Returns: nil when no such domain is open.
    package func history(domain id: String, key: String, revealing: Bool = false) -> ConsoleJSON? {
        guard let reference = open.withLock({ $0[id]?.reference }) else { return nil }
        // A change event's redraw asks for the history at once, and a writer renames the suite file
        // before it appends its record: waiting for the writer that holds the suite's lock shows
        // the change that was announced (docs/design.md, "History: reading").
        switch reference {
        case .remote:
            break  // A fleet suite's history is etcd's, read below in one range: no writer to wait for.
        default:
            if let log = try? domains.historySource(of: reference) as? HistoryLog { log.waitForWriter() }
        }
        let entries: [DefaultsHistoryEntry]
        do {
            entries = try domains.historyEntries(
                of: reference, HistoryQuery(key: key, limit: Self.historyLimit), revealingSecrets: revealing)
        } catch let error as DefaultsError {
            return ["unavailable": .string(error.message.prefix(1).uppercased() + error.message.dropFirst())]
        } catch {
            return ["unavailable": .string("\(error)")]
        }
        return [
            "entries": .array(
                entries.reversed().map { entry in
                    [
                        "id": .integer(Int64(clamping: entry.id)),
                        "date": .string(DefaultsHistoryEntry.timestamp(entry.date)),
                        "old": .string(DefaultsHistoryEntry.text(entry.oldValue)),
                        "new": .string(DefaultsHistoryEntry.text(entry.newValue)),
                        "origin": .string(entry.origin.rawValue),
                        "who": .string(DefaultsHistoryEntry.Writer.words(entry.writer)),
                    ]
                })
        ]
    }

    /// Restores `key` to its value right after history entry `entry` with `defaults rollback <domain> --to <entry>
    /// -- <key>` (its forced-key refusal, the domain's schema, the library's `rollBack`): every later change of the
    /// key is undone by a new change. A refusal (a forced key, a pruned entry, a value the schema refuses)
    /// changes nothing.
    ///
    /// - Returns: What the command printed (`key: old → new`, or that there was nothing to roll back), or its
    ///   refusal.
    package func rollBack(domain id: String, key: String, toEntry entry: UInt64) -> Result<String, ConsoleError> {
        guard let domain = open.withLock({ $0[id] }) else { return .failure(ConsoleError("There is no domain \(id).")) }
        if let forcing = domain.defaults.forcingSource(ofKey: key) {
            return .failure(
                ConsoleError("The key \(key) is forced by the administrator in \(forcing); nothing was rolled back."))
        }
        // The key after `--`: a key that starts with `-` is not an option.
        let (output, problem) = runCommandPrinting([
            "rollback", Self.argument(domain.reference), "--to", String(entry), "--", key,
        ])
        if let problem { return .failure(ConsoleError(problem)) }
        return .success(output.trimmingCharacters(in: .whitespacesAndNewlines))
    }
}

extension PropertyListValue {
    fileprivate var isContainer: Bool {
        switch self {
        case .array, .dictionary: true
        default: false
        }
    }
}
