import Foundation
import Synchronization

/// A settings store with the UserDefaults model: one property-list file per suite, a layered
/// search list, registered defaults — plus observation, live reload and crash-safe writes.
///
/// ```swift
/// let defaults = try Defaults(suiteName: "com.example.app")
/// defaults.register(defaults: ["theme": "system", "fontSize": 14])
/// defaults.set(true, forKey: "has_seen_onboarding")
/// defaults.bool(forKey: "has_seen_onboarding")   // true
/// try defaults.synchronize()                      // optional: flush now
/// ```
///
/// Lookups follow the search list, first match wins: the argument domain (`-key value` in the
/// process's arguments), keys an administrator forces, volatile domains (in the order they were
/// set), this machine's file of the suite, the suite, added suites (in the order they were added),
/// the global domain (`NSGlobalDomain`), system-wide defaults, the registration domain.
///
/// Reads take one short lock and look up one dictionary; they never touch the disk. Writes change
/// memory at once, notify observers, and are written by a coalesced background flush (and at
/// normal exit). Every instance is safe to use from any thread.
public final class Defaults: Sendable {
    /// The name of the global domain, searched by every suite (file `NSGlobalDomain.plist`).
    public static let globalDomain = "NSGlobalDomain"
    /// The name of the argument domain (`-key value` pairs in the process's arguments).
    public static let argumentDomain = "NSArgumentDomain"
    /// The name of the registration domain (values given to ``register(defaults:)-([String:PropertyListValue])``).
    public static let registrationDomain = "NSRegistrationDomain"

    /// The defaults of this program: the suite named after the main bundle's identifier or, for a
    /// command-line program, the process name — the suite Foundation's `UserDefaults.standard`
    /// uses on Linux.
    public static let standard: Defaults = {
        let name = Bundle.main.bundleIdentifier ?? ProcessInfo.processInfo.processName
        do {
            return try Defaults(suiteName: name)
        } catch {
            // A process name is never an invalid suite name in practice; fall back to a fixed name.
            // Only the name is checked when a Defaults is made, so a valid fixed name cannot fail.
            do {
                return try Defaults(suiteName: "LiveDefaults.standard")
            } catch {
                preconditionFailure("Defaults.standard: the fixed suite name was refused: \(error)")
            }
        }
    }()

    /// The suite this instance reads and writes first.
    public let suiteName: String
    /// The directory suite files are in; nil for the XDG rule (`$XDG_CONFIG_HOME`, else `~/.config`).
    package let directory: String?
    let watchesFiles: Bool
    /// Where this instance's stores come from: the process's file stores, or an in-memory world.
    let stores: StoreSource
    let suite: SuiteStore
    /// Whether the suite is a file (false for a store given to ``init(primaryStore:watchesFiles:)``).
    let suiteHasFile: Bool
    let global: SuiteStore?
    /// The administrator's layers (system-wide files, managed files; none for an instance opened
    /// by path, in memory or on another backend).
    let candidateLayers: CandidateLayers
    let state: Locked<State>
    /// Where writers wait while the observers' queue is full.
    let backlogGate = BacklogGate()
    /// The most changes the observers' queue holds before writers wait (``ObservationBacklog``).
    let backlogLimit = Atomic<Int>(ObservationBacklog.defaultLimit)
    /// How many registered observers asked for prior calls (``ObserverTable/priorObserverCount``,
    /// kept beside it under the state lock): a write reads it without the lock.
    let priorObservers = Atomic<Int>(0)
    /// The keys used through Swift Observation (``ObservableSetting``, ``Setting``).
    let trackedSettings = Locked(TrackedSettings())
    /// The undecodable value last reported for each typed key (``noteUndecodable(_:_:_:)``).
    let reportedUndecodable = Locked<[String: PropertyListValue]>([:])

    struct State {
        var arguments: [String: PropertyListValue]
        var volatileDomains: [(name: String, values: [String: PropertyListValue])] = []
        var addedSuites: [SuiteStore] = []
        /// Stores of other backends searched before the suite (``addStore(_:at:)``: a managed
        /// fleet suite), in the order they were added.
        var storesBeforeSuite: [SuiteStore] = []
        /// Stores of other backends searched right after the suite, before added suites (a fleet
        /// suite's defaults), in the order they were added.
        var storesAfterSuite: [SuiteStore] = []
        /// Managed files that hold values: searched right after the argument domain (forced keys).
        var forced: [SuiteStore] = []
        /// System-wide files that hold values: searched after the global domain, before registration.
        var system: [SuiteStore] = []
        /// This machine's file of the suite (ByHost), when it holds values: searched right before the suite.
        var currentHost: [SuiteStore] = []
        /// The suite's file for any host, for an instance whose suite is a ByHost file: right after it.
        var anyHost: [SuiteStore] = []
        var registration: [String: PropertyListValue] = [:]
        /// What each key resolves to through the search list, kept current on every change.
        var effective = EffectiveValues()
        var observers = ObserverTable()
        var notificationScheduled = false
        /// Set while a persistent-domain call of this instance changes a store: the call posts the
        /// notification itself, at once, as Foundation does.
        var notificationPostedByCaller = false

        /// Whether no layer comes before the suite in the search list: the layers
        /// `walkSearchList(suite:global:_:)` visits before the suite (SearchList.swift) are all empty.
        @inline(__always)
        var hasNoLayerAboveSuite: Bool {
            arguments.isEmpty && forced.isEmpty && storesBeforeSuite.isEmpty && volatileDomains.isEmpty
                && currentHost.isEmpty
        }
    }

    /// Opens the suite `suiteName`, stored in `$XDG_CONFIG_HOME/<suiteName>.plist` (else
    /// `~/.config/<suiteName>.plist`), the file Foundation's UserDefaults uses.
    ///
    /// - Parameters:
    ///   - suiteName: A name such as "com.example.app", or ``globalDomain``.
    ///   - directory: Where suite files are; nil for the XDG rule.
    ///   - watchesFiles: Whether changes made to the files by other processes are followed live.
    /// - Throws: ``DefaultsError/Code/invalidSuiteName`` for a name that cannot name a file.
    ///   A corrupt file does not throw: the store opens empty and ``lastError`` says what happened.
    public convenience init(suiteName: String, directory: URL? = nil, watchesFiles: Bool = true) throws {
        try self.init(suiteName: suiteName, directoryPath: directory?.suiteDirectoryPath, watchesFiles: watchesFiles)
    }

    /// ``init(suiteName:directory:watchesFiles:)`` with the directory as a path: the `defaults` command
    /// keeps paths, since `URL`'s `path` costs a one-shot command a first generic instantiation inside
    /// Foundation (docs/design.md, "The `defaults` command's start-up").
    package convenience init(suiteName: String, directoryPath: String?, watchesFiles: Bool) throws {
        let location = try SuiteLocation(suiteName: suiteName, directory: directoryPath)
        try self.init(
            location: location, directory: directoryPath, stores: .files(watching: watchesFiles),
            administeredSettings: .fromEnvironment())
    }

    /// Opens the suite `suiteName` in a new in-memory world: no file is read or written and
    /// nothing is watched. Everything else works as for a suite on disk — the search list (its
    /// global domain and added suites are in the same world), registered defaults, observation,
    /// typed keys, ``synchronize()``. For tests and previews of code that uses `Defaults`.
    ///
    /// Each call makes a new world, empty at first, shared with no other instance: tests running
    /// in parallel do not see each other's values.
    ///
    /// - Throws: ``DefaultsError/Code/invalidSuiteName`` for a name that would not name a file,
    ///   as ``init(suiteName:directory:watchesFiles:)`` does.
    public static func inMemory(suiteName: String = "InMemory") throws -> Defaults {
        let suites = MemorySuites()
        let location = try SuiteLocation(suiteName: suiteName, directory: suites.directory)
        return try Defaults(location: location, directory: suites.directory, stores: .memory(suites))
    }

    /// Opens a plist file directly as the domain (as `defaults read /path/file.plist` does).
    package convenience init(fileURL: URL, watchesFiles: Bool = true) throws {
        let location = SuiteLocation(filePath: fileURL.path)
        try self.init(location: location, directory: location.directory, stores: .files(watching: watchesFiles))
    }

    /// Opens `store` as the suite, whatever its backend (a fleet suite kept in etcd): `set` and
    /// `removeObject` write to it. No global domain is searched; suites added by name are files.
    package convenience init(primaryStore store: SuiteStore, watchesFiles: Bool = true) throws {
        try self.init(location: store.location, directory: nil, stores: .files(watching: watchesFiles), primary: store)
    }

    init(
        location: SuiteLocation, directory: String?, stores: StoreSource, primary: SuiteStore? = nil,
        administeredSettings: AdministeredSettings? = nil, host: Host? = nil
    ) throws {
        // The suite directory's `stat` made once for this open's stores (docs/design.md, "Opening a
        // suite: what a cold open does").
        let directoryMemo = OpenDirectoryMemo.begin()
        defer { directoryMemo?.end() }
        self.suiteName = location.name
        self.directory = directory
        self.stores = stores
        self.watchesFiles = stores.watchesFiles
        let hostLayer = try Self.hostLayer(
            of: location, host: host, searchesCurrentHost: administeredSettings != nil, watching: stores.watchesFiles)
        self.suite = try primary ?? stores.open(host.map { try location.byHost($0) } ?? location)
        self.suiteHasFile = primary == nil
        if primary != nil {
            self.global = nil
        } else if location.name == Self.globalDomain
            && location.directory == (directory ?? SuiteLocation.defaultDirectory())
        {
            self.global = nil
        } else {
            let globalLocation = SuiteLocation(globalDomainIn: directory)
            self.global =
                globalLocation.path == location.path ? nil : stores.open(globalLocation, keepsUnwatched: true)
        }
        self.candidateLayers = CandidateLayers(
            settings: administeredSettings ?? .none, suiteName: location.name,
            excluding: location.path, global?.location.path,
            host: hostLayer.map { (stores.open($0.location), $0.isAnyHost) }, watching: stores.watchesFiles)
        self.state = Locked(State(arguments: ArgumentDomain.current))
        // One step of the change order: no change can fall between the values read and listening.
        ChangeLock.withLock {
            state.withLock { state in
                candidateLayers.updateSearchList(&state)
                state.effective = EffectiveValues(
                    Self.resolveAll(state, suite: suite, global: global), observedKeys: state.observers.observedKeys)
            }
            suite.addReader(self)
            global?.addReader(self)
            for store in candidateLayers.stores { store.addReader(self) }
        }
    }

    /// The last problem with this suite's file — a corrupt file found at load or reload, a flush
    /// that failed — or nil when there is none. The same errors go to ``DefaultsErrorReporting``.
    public var lastError: DefaultsError? { suite.lastError }

    // MARK: Reading

    /// The effective value of `key` through the search list, as a property-list value.
    public func propertyList(forKey key: String) -> PropertyListValue? {
        let key = HashedKey(key)
        return state.withLock { state in
            if _fastPath(state.effective.isTableMade) { return state.effective.tableValue(key) }
            return state.effective.countedRead(key)
        }
    }

    /// The effective value of `key` converted by `transform` while the lock is held, so the value
    /// itself is never copied out (the getters' fast path). `transform` must be quick and must not
    /// call back into this store.
    @inline(__always)
    func withEffectiveValue<Result>(forKey key: String, _ transform: (PropertyListValue?) -> Result) -> Result {
        let key = HashedKey(key)
        return state.withLock { state in
            // The table's lookup on the path reads take once it is made (docs/design.md, "Opening a
            // suite: the effective values made on demand").
            if _fastPath(state.effective.isTableMade) { return transform(state.effective.tableValue(key)) }
            return transform(state.effective.countedRead(key))
        }
    }

    /// The suite's own values (its file and this process's unwritten changes), without the rest of
    /// the search list.
    public func persistentValues() -> [String: PropertyListValue] {
        suite.values()
    }

    /// Every effective setting through the search list, as Foundation objects. The keys the
    /// library keeps for itself (the migration record, ``DefaultsMigration/recordKey``, and a fleet
    /// suite's schema) are not settings and are left out; `object(forKey:)` still reads them.
    public func dictionaryRepresentation() -> [String: Any] {
        var values: [String: Any] = [:]
        for (key, value) in state.withLock({ $0.effective.values }) where !ReservedKeys.all.contains(key) {
            values[key] = value.foundationObject
        }
        return values
    }

    // MARK: Writing

    /// Sets the suite's value of `key`; nil removes it.
    ///
    /// Memory and observers see the change at once; the file is written by the next flush.
    public func set(_ value: PropertyListValue?, forKey key: String) {
        write(value, forKey: key)
    }

    /// The one path every write of a suite value takes.
    @usableFromInline
    func write(_ value: PropertyListValue?, forKey key: String) {
        // Atomic loads, not the lock, when no observer asked for prior calls and no key can be
        // forced (the usual case).
        if priorObservers.load(ordering: .acquiring) > 0 || candidateLayers.mayForce.load(ordering: .acquiring) {
            writeSlowly(value, forKey: key)
        } else {
            suite.set(value, forKey: key)
        }
    }

    /// A write when observers asked for prior calls, or when keys may be forced.
    private func writeSlowly(_ value: PropertyListValue?, forKey key: String) {
        noteWriteIfForced(key)
        if priorObservers.load(ordering: .acquiring) > 0, state.withLock({ $0.observers.wantsPrior(key) }) {
            // Queued in the same step as the change, so it comes right before it, with its old value.
            suite.set(value, forKey: key) { self.queuePrior(of: key, suiteValue: value) }
            deliverQueuedChanges()
        } else {
            suite.set(value, forKey: key)
        }
    }

    /// Removes the suite's value of `key`; a value from lower in the search list (a registered
    /// default, say) shows through again.
    public func removeObject(forKey key: String) {
        write(nil, forKey: key)
    }

    /// Writes every pending change of this suite, the global domain and added suites now.
    ///
    /// Not needed for durability in normal operation (changes are flushed in the background within
    /// milliseconds and at exit), but it reports failures.
    ///
    /// - Throws: ``DefaultsError`` (``DefaultsError/Code/writeFailed`` for a full disk or an
    ///   unwritable directory). The values stay in memory and are written once a flush succeeds.
    public func synchronize() throws {
        var stores = [suite]
        if let global { stores.append(global) }
        stores += state.withLock { $0.storesBeforeSuite + $0.storesAfterSuite + $0.addedSuites }
        var firstError: DefaultsError?
        for store in stores {
            do { try store.flush() } catch { firstError = firstError ?? error }
        }
        if let firstError { throw firstError }
    }

    // MARK: Search list

    /// Walks the search list for `key`. Called under the ``ChangeLock`` (stores' values are read
    /// in the change order).
    ///
    /// - Parameters:
    ///   - key: The key.
    ///   - state: This instance's layers.
    ///   - suite: The suite's store.
    ///   - global: The global domain's store, if searched.
    ///   - suiteValue: The suite's value of `key` when the caller knows it (the suite's change
    ///     being applied gives it), so that the suite is not asked again; nil to ask it.
    /// - Returns: The value of the first layer that has the key, nil when none has it.
    ///
    /// `state` is `inout` though only read: a caller holding the state lock passes it in place. Passed
    /// by value from inside the lock's closure, the whole `State` was copied and destroyed on every
    /// `set` (its outlined copy retains each layer: about 800 instructions, a sixth of a `set`).
    @inline(__always)
    static func resolve(
        _ key: String, _ state: inout State, suite: SuiteStore, global: SuiteStore?,
        suiteValue: PropertyListValue?? = nil
    ) -> PropertyListValue? {
        // A suite's own `set` with no layer above the suite (the usual case): the suite's new value
        // is the effective one, without the walk and its lookup's copy of the key (about 100
        // instructions of every `set`, docs/design.md, "Observation: the `set` path").
        if case .some(.some(let known)) = suiteValue, state.hasNoLayerAboveSuite { return known }
        var lookup = SearchListLookup(key: key, suiteValue: suiteValue)
        state.walkSearchList(suite: suite, global: global, &lookup)
        if lookup.stoppedAtKnownSuiteValue, case .some(let known) = suiteValue { return known }
        return lookup.found
    }

    /// ``resolve(_:_:suite:global:suiteValue:)`` for a caller with a copy of the state (tests).
    static func resolve(
        _ key: String, _ state: State, suite: SuiteStore, global: SuiteStore?,
        suiteValue: PropertyListValue?? = nil
    ) -> PropertyListValue? {
        var state = state
        return resolve(key, &state, suite: suite, global: global, suiteValue: suiteValue)
    }

    /// Every key's effective value, built from the bottom of the search list up. Called under the
    /// ``ChangeLock``.
    static func resolveAll(_ state: State, suite: SuiteStore, global: SuiteStore?) -> [String: PropertyListValue] {
        var layers: [SearchLayer] = []
        state.forEachSearchLayer(suite: suite, global: global) {
            layers.append($0)
            return true
        }
        var values: [String: PropertyListValue] = [:]
        for layer in layers.reversed() {
            let layerValues: [String: PropertyListValue]
            switch layer {
            case .values(_, _, let memory): layerValues = memory
            case .store(_, let store), .suite(let store): layerValues = store.orderedValues()
            }
            // The first layer with values is taken whole, its storage shared: merged into an empty
            // dictionary, a suite's thousand keys were hashed again and the table grown step by
            // step (a third of a cold load's instructions).
            if values.isEmpty {
                values = layerValues
            } else if !layerValues.isEmpty {
                values.merge(layerValues) { _, upper in upper }
            }
        }
        return values
    }

    /// Posted on `NotificationCenter.default` (object: the ``Defaults``) after effective values
    /// change; bursts post once. It has the name of `UserDefaults.didChangeNotification`, so code
    /// written against that notification works unchanged.
    public static let didChangeNotification = UserDefaults.didChangeNotification
}
