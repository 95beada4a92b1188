import Foundation

// System-wide defaults and forced keys (docs/design.md, "Administered settings").
extension Defaults {
    /// Opens the suite `suiteName` with the administrator's layers found through `administeredSettings`
    /// instead of the environment (tests point them at temporary directories).
    ///
    /// ```swift
    /// let settings = AdministeredSettings(
    ///     systemDirectories: [URL(fileURLWithPath: "/opt/site/xdg")],
    ///     managedDirectory: URL(fileURLWithPath: "/opt/site/managed"))
    /// let defaults = try Defaults(suiteName: "com.example.app", administeredSettings: settings)
    /// ```
    ///
    /// - Parameters:
    ///   - suiteName: A name such as "com.example.app", or ``globalDomain``.
    ///   - directory: Where suite files are; nil for the XDG rule.
    ///   - watchesFiles: Whether changes made to the files by other processes are followed live.
    ///   - administeredSettings: Where system-wide defaults and managed files are
    ///     (``AdministeredSettings/none`` for neither).
    /// - Throws: ``DefaultsError/Code/invalidSuiteName`` for a name that cannot name a file.
    public convenience init(
        suiteName: String, directory: URL? = nil, watchesFiles: Bool = true,
        administeredSettings: AdministeredSettings
    ) throws {
        let directoryPath = directory?.suiteDirectoryPath
        let location = try SuiteLocation(suiteName: suiteName, directory: directoryPath)
        try self.init(
            location: location, directory: directoryPath, stores: .files(watching: watchesFiles),
            administeredSettings: administeredSettings)
    }

    // MARK: Forced keys

    /// Whether an administrator forces `key`: a managed file of this suite or of the global domain
    /// holds it, or a managed fleet suite does. Reads then give the forced value, whatever this
    /// suite holds; only the argument domain wins over it.
    ///
    /// - Parameter key: The key.
    /// - Returns: Whether the key is forced.
    public func objectIsForced(forKey key: String) -> Bool {
        ChangeLock.withLock { isForced(key) }
    }

    /// Whether `key` is forced, for a caller that holds the ``ChangeLock``.
    private func isForced(_ key: String) -> Bool {
        state.withLock { state in
            state.forced.contains { $0.orderedValue(forKey: key) != nil }
                || state.storesBeforeSuite.contains { $0.orderedValue(forKey: key) != nil }
        }
    }

    /// Whether an administrator forces `key` in the suite `domain`: for this suite as
    /// ``objectIsForced(forKey:)``; for another suite, whether its managed file (or the global
    /// domain's) holds the key, by the same settings and ownership rule.
    ///
    /// - Parameters:
    ///   - key: The key.
    ///   - domain: A suite name.
    /// - Returns: Whether the key is forced in that suite.
    public func objectIsForced(forKey key: String, inDomain domain: String) -> Bool {
        if domain == suiteName { return objectIsForced(forKey: key) }
        let settings = candidateLayers.settings
        guard let directory = settings.managedDirectory?.path else { return false }
        let names = domain == Self.globalDomain ? [domain] : [domain, Self.globalDomain]
        return names.contains { name in
            Self.managedValues(suiteName: name, directory: directory, trustedOwner: settings.trustedOwner)[key] != nil
        }
    }

    /// The managed file that forces `key` in this suite (nil when none does): the file's path, or
    /// for a managed fleet suite its location.
    package func forcingSource(ofKey key: String) -> String? {
        ChangeLock.withLock {
            state.withLock { state in
                (state.forced + state.storesBeforeSuite).first { $0.orderedValue(forKey: key) != nil }?.location.path
            }
        }
    }

    /// The values of suite `suiteName`'s managed file in `directory`, empty when there is none or
    /// it is not trusted (a one-off read, not watched).
    package static func managedValues(
        suiteName: String, directory: String, trustedOwner: UInt32
    ) -> [String: PropertyListValue] {
        guard let location = try? SuiteLocation(suiteName: suiteName, directory: directory) else { return [:] }
        let load = ManagedFileBackend(location: location, trustedOwner: trustedOwner).load()
        for problem in load.warnings { DefaultsErrorReporting.report(problem) }
        return load.snapshot.values
    }

    /// Calls `handler` each time `key` becomes forced (true) or released (false) by a change of a
    /// managed file or a managed fleet suite. The effective value's own change, if any, goes to the
    /// key's observers as usual.
    ///
    /// ```swift
    /// let token = defaults.observeForcing(ofKey: "homepage") { isForced in
    ///     homepageField.isEnabled = !isForced
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - key: The key.
    ///   - handler: Called on the thread that applied the change, once no lock is held.
    /// - Returns: A token; the calls stop when it is cancelled or released.
    public func observeForcing(
        ofKey key: String, _ handler: @escaping @Sendable (_ isForced: Bool) -> Void
    ) -> ObservationToken {
        let observers = candidateLayers.forcedObservers
        let id = ChangeLock.withLock {
            let isForced = isForced(key)
            return observers.withLock { observers in
                observers.nextID += 1
                observers.entries[observers.nextID] = ForcedObservers.Entry(
                    key: key, handler: handler, isForced: isForced)
                return observers.nextID
            }
        }
        return ObservationToken { observers.withLock { _ = $0.entries.removeValue(forKey: id) } }
    }

    /// Reports the first write of `key` while it is forced (``DefaultsError/Code/forcedKey``).
    func noteWriteIfForced(_ key: String) {
        guard let source = forcingSource(ofKey: key) else { return }
        guard candidateLayers.reportedForcedWrites.withLock({ $0.insert(key).inserted }) else { return }
        DefaultsErrorReporting.report(
            DefaultsError(
                .forcedKey,
                "The key \"\(key)\" of suite \"\(suiteName)\" is forced by \(source): the change is kept in the "
                    + "suite, but reads give the forced value until the administrator releases the key.",
                suite: suiteName, path: source))
    }

    /// Applies a change of an administered layer or a managed fleet suite: which candidates the
    /// search list holds, the effective values, and the observers of forced keys. Called under the
    /// ``ChangeLock``.
    ///
    /// - Returns: ``AdministeredRefresh/notAdministered`` when `store` is neither (the caller
    ///   refreshes as usual), else what to deliver.
    func refreshAdministered(_ store: SuiteStore, _ keys: ChangedKeys, origin: ChangeOrigin) -> AdministeredRefresh {
        let isCandidate = candidateLayers.contains(store)
        let isManagedFleet = !isCandidate && state.withLock { $0.storesBeforeSuite.contains { $0 === store } }
        guard isCandidate || isManagedFleet else { return .notAdministered }
        var delivery = applyRefresh(keys, origin: origin) { state in
            if isCandidate { candidateLayers.updateSearchList(&state) }
        }
        let calls = forcingChanges()
        if calls.isEmpty { return .applied(delivery) }
        if delivery == nil { delivery = Delivery(batch: nil, notifies: false, waits: false) }
        delivery?.forcing = calls
        return .applied(delivery)
    }

    /// The calls owed to observers of forced keys whose state changed since they were last told.
    /// Called under the ``ChangeLock``, so each observer hears the changes in order.
    func forcingChanges() -> [@Sendable () -> Void] {
        let observers = candidateLayers.forcedObservers
        let table = observers
        var calls: [@Sendable () -> Void] = []
        let watched = observers.withLock { $0.entries.map { ($0.key, $0.value.key) } }
        for (id, key) in watched {
            let isForced = isForced(key)
            observers.withLock { observers in
                guard var entry = observers.entries[id], entry.isForced != isForced else { return }
                entry.isForced = isForced
                observers.entries[id] = entry
                let handler = entry.handler
                // No call starts once the token is cancelled (``ObservationToken/cancel()``).
                calls.append { if table.withLock({ $0.entries[id] != nil }) { handler(isForced) } }
            }
        }
        return calls
    }

    /// Tells observers of forced keys what a change of the search list's stores did (a managed
    /// fleet suite added or removed).
    func deliverForcingChanges() {
        let calls = ChangeLock.withLock {
            candidateLayers.noteForcingLayers(state.withLock { $0 })
            return forcingChanges()
        }
        for call in calls { call() }
    }
}

/// What ``Defaults/refreshAdministered(_:_:origin:)`` did.
enum AdministeredRefresh {
    /// The store is not an administered layer nor a managed fleet suite: the caller refreshes as usual.
    case notAdministered
    /// The change was applied; what to deliver once the change lock is released (nil: nothing).
    case applied(Defaults.Delivery?)
}
