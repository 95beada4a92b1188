import Foundation

// Registration, volatile, persistent and added domains: the rest of the search list.
extension Defaults {
    /// Adds `defaults` to the registration domain, the bottom of the search list: the values keys
    /// have when nothing else sets them. Registered values are never written to a file.
    ///
    /// ```swift
    /// defaults.register(defaults: ["theme": "system", "fontSize": 14])
    /// ```
    public func register(defaults: [String: PropertyListValue]) {
        refresh(.many(Set(defaults.keys)), origin: .local) { state in
            state.registration.merge(defaults) { _, new in new }
        }
    }

    /// Registers typed keys' defaults, so that untyped reads (`bool(forKey:)`, `object(forKey:)`,
    /// `defaults read` of the registration domain…) see them too.
    ///
    /// A key's default otherwise applies to typed reads (`defaults[.key]`) only, as it is part of
    /// the key, not of the store; a value registered under the same name with
    /// ``register(defaults:)-([String:PropertyListValue])`` is a stored value to typed reads, and wins over the key's default.
    ///
    /// ```swift
    /// defaults.register(.theme, .fontSize)
    /// defaults.integer(forKey: "fontSize")   // 14, the key's default
    /// ```
    ///
    /// - Throws: ``DefaultsError/Code/encodingFailed`` when a default cannot be stored; nothing is
    ///   registered then. An optional key whose default is nil registers nothing.
    public func register(_ keys: AnyKey...) throws {
        var values: [String: PropertyListValue] = [:]
        for key in keys {
            do {
                if let value = try key.encodedDefault() { values[key.name] = value }
            } catch {
                throw DefaultsError(
                    .encodingFailed, "The default of key \"\(key.name)\" could not be encoded; nothing was registered.",
                    suite: suiteName, underlying: SendableDescription(error))
            }
        }
        register(defaults: values)
    }

    /// Adds Foundation objects to the registration domain, as `UserDefaults.register(defaults:)`.
    ///
    /// - Throws: ``DefaultsError/Code/notAPropertyList`` naming the first value that is not a
    ///   property list; nothing is registered then.
    @_disfavoredOverload
    public func register(defaults: [String: Any]) throws {
        guard case .dictionary(let values) = try PropertyListValue(foundationObject: defaults) else { return }
        register(defaults: values)
    }

    // MARK: Added suites

    /// Adds the suite `suiteName` to the search list, after this suite and before the global
    /// domain (as `UserDefaults.addSuite(named:)`). Adding a suite twice, or this suite, does nothing.
    ///
    /// - Throws: ``DefaultsError/Code/invalidSuiteName``.
    public func addSuite(named suiteName: String) throws {
        let location = try SuiteLocation(suiteName: suiteName, directory: directory)
        let store = stores.open(location)
        guard store !== suite, store !== global else { return }
        let added = state.withLock { state -> Bool in
            if state.addedSuites.contains(where: { $0 === store }) { return false }
            return true
        }
        guard added else { return }
        let delivery = ChangeLock.withLock {
            store.addReader(self)
            return applyRefresh(nil, origin: .local) { state in
                if !state.addedSuites.contains(where: { $0 === store }) { state.addedSuites.append(store) }
            }
        }
        if let delivery { perform(delivery) }
    }

    /// Removes a suite added with ``addSuite(named:)``.
    public func removeSuite(named suiteName: String) {
        guard let location = try? SuiteLocation(suiteName: suiteName, directory: directory) else { return }
        var removed: SuiteStore?
        refresh(nil, origin: .local) { state in
            if let index = state.addedSuites.firstIndex(where: { $0.location.path == location.path }) {
                removed = state.addedSuites.remove(at: index)
            }
        }
        removed?.removeReader(self)
    }

    // MARK: Stores of other backends

    /// Where a store added with ``addStore(_:at:)`` is searched.
    package enum StorePosition: Sendable {
        /// After the argument and volatile domains, before the suite: its values win over the
        /// suite's (a managed fleet suite).
        case beforeSuite
        /// Right after the suite, before suites added by name: the suite's values win (a fleet
        /// suite's defaults).
        case afterSuite
    }

    /// The store this instance reads and writes first.
    package var primaryStore: SuiteStore { suite }

    /// Adds `store` (any backend) to the search list at `position`, after the stores already
    /// there; observers see the keys whose effective values change. Adding a store that is
    /// already searched does nothing.
    ///
    /// - Returns: Whether the store was added.
    @discardableResult
    package func addStore(_ store: SuiteStore, at position: StorePosition) -> Bool {
        let addition = ChangeLock.withLock { () -> StoreAddition in
            let searched = state.withLock { state in
                store === suite || store === global
                    || (state.addedSuites + state.storesBeforeSuite + state.storesAfterSuite).contains { $0 === store }
            }
            if searched { return .alreadySearched }
            store.addReader(self)
            return .added(
                applyRefresh(nil, origin: .local) { state in
                    switch position {
                    case .beforeSuite: state.storesBeforeSuite.append(store)
                    case .afterSuite: state.storesAfterSuite.append(store)
                    }
                })
        }
        guard case .added(let delivery) = addition else { return false }
        if let delivery { perform(delivery) }
        if position == .beforeSuite { deliverForcingChanges() }
        return true
    }

    /// What ``addStore(_:at:)`` did under the change lock.
    private enum StoreAddition {
        /// The store was searched already: nothing changed.
        case alreadySearched
        /// The store was added; what to deliver once the change lock is released (nil: nothing).
        case added(Delivery?)
    }

    /// Removes a store added with ``addStore(_:at:)``.
    ///
    /// - Returns: Whether it was searched.
    @discardableResult
    package func removeStore(_ store: SuiteStore) -> Bool {
        var removed = false
        refresh(nil, origin: .local) { state in
            let count = state.storesBeforeSuite.count + state.storesAfterSuite.count
            state.storesBeforeSuite.removeAll { $0 === store }
            state.storesAfterSuite.removeAll { $0 === store }
            removed = state.storesBeforeSuite.count + state.storesAfterSuite.count != count
        }
        if removed {
            store.removeReader(self)
            deliverForcingChanges()
        }
        return removed
    }

    // MARK: Volatile domains

    /// The names of the volatile domains: the argument and registration domains and those set
    /// with ``setVolatileDomain(_:forName:)-([String:PropertyListValue],_)``.
    public var volatileDomainNames: [String] {
        [Self.argumentDomain] + state.withLock { $0.volatileDomains.map(\.name) } + [Self.registrationDomain]
    }

    /// The values of a volatile domain, nil when there is none of that name.
    public func volatileDomain(forName name: String) -> [String: Any]? {
        volatileValues(forName: name)?.mapValues(\.foundationObject)
    }

    /// The values of a volatile domain as property-list values.
    public func volatileValues(forName name: String) -> [String: PropertyListValue]? {
        state.withLock { state in
            switch name {
            case Self.argumentDomain: state.arguments
            case Self.registrationDomain: state.registration
            default: state.volatileDomains.first { $0.name == name }?.values
            }
        }
    }

    /// Sets a volatile domain: values searched after the argument domain and before the suite,
    /// kept in memory only. Setting ``argumentDomain`` or ``registrationDomain`` replaces that domain.
    public func setVolatileDomain(_ values: [String: PropertyListValue], forName name: String) {
        refresh(nil, origin: .local) { state in
            switch name {
            case Self.argumentDomain: state.arguments = values
            case Self.registrationDomain: state.registration = values
            default:
                if let index = state.volatileDomains.firstIndex(where: { $0.name == name }) {
                    state.volatileDomains[index].values = values
                } else {
                    state.volatileDomains.append((name, values))
                }
            }
        }
    }

    /// Sets a volatile domain from Foundation objects.
    ///
    /// - Throws: ``DefaultsError/Code/notAPropertyList``; nothing changes then.
    @_disfavoredOverload
    public func setVolatileDomain(_ values: [String: Any], forName name: String) throws {
        guard case .dictionary(let converted) = try PropertyListValue(foundationObject: values) else { return }
        setVolatileDomain(converted, forName: name)
    }

    /// Removes a volatile domain (the argument and registration domains are emptied).
    public func removeVolatileDomain(forName name: String) {
        refresh(nil, origin: .local) { state in
            switch name {
            case Self.argumentDomain: state.arguments = [:]
            case Self.registrationDomain: state.registration = [:]
            default: state.volatileDomains.removeAll { $0.name == name }
            }
        }
    }

    // MARK: Persistent domains

    /// The values stored in the suite `domainName` (its file), nil when it has none.
    public func persistentDomain(forName domainName: String) -> [String: Any]? {
        guard let store = try? persistentStore(named: domainName) else { return nil }
        let values = store.values()
        return values.isEmpty ? nil : values.mapValues(\.foundationObject)
    }

    /// Replaces everything stored in the suite `domainName`; observers of affected keys are told.
    ///
    /// - Throws: ``DefaultsError/Code/invalidSuiteName`` or ``DefaultsError/Code/notAPropertyList``;
    ///   nothing changes then.
    ///
    /// Posts ``Defaults/didChangeNotification`` (object: this instance) once before returning, for
    /// any domain, as Foundation does.
    public func setPersistentDomain(_ domain: [String: Any], forName domainName: String) throws {
        guard case .dictionary(let values) = try PropertyListValue(foundationObject: domain) else { return }
        try replacePersistentDomain(named: domainName, with: values)
    }

    /// Removes the suite `domainName` entirely; its file is deleted at the next flush.
    ///
    /// Posts ``Defaults/didChangeNotification`` (object: this instance) once before returning, for
    /// any domain — even one that had no values — as Foundation does.
    public func removePersistentDomain(forName domainName: String) {
        try? replacePersistentDomain(named: domainName, with: [:])
    }

    private func replacePersistentDomain(named domainName: String, with values: [String: PropertyListValue]) throws {
        let store = try persistentStore(named: domainName)
        store.replaceAll(with: values) {
            self.state.withLock { $0.notificationPostedByCaller = true }
        }
        // Cleared in case the change touched no value this instance sees.
        state.withLock { $0.notificationPostedByCaller = false }
        NotificationCenter.default.post(name: Defaults.didChangeNotification, object: self)
    }

    /// Replaces this suite's stored values (nil or empty removes the file at the next flush). For the
    /// `defaults` command (`write <domain> <plist>`, `delete <domain>`); not public API.
    package func replacePersistentValues(_ values: [String: PropertyListValue]?) {
        suite.replaceAll(with: values ?? [:])
    }

    private func persistentStore(named domainName: String) throws -> SuiteStore {
        if domainName == suiteName { return suite }
        let location = try SuiteLocation(suiteName: domainName, directory: directory)
        return stores.openUnwatched(location)
    }
}
