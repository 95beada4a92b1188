import Dispatch

// Observing keys: tokens delivering old and new effective values.
extension Defaults {
    /// Observes the effective value of `key` through the search list: `handler` is called once per
    /// change (never when the old and new values are equal), whatever caused it — a set or removal,
    /// a registration, a domain added or replaced, or another process editing the file.
    ///
    /// Local changes are delivered on the thread that made them, right after the change, unless
    /// another thread is delivering at that moment (it then delivers this change too, in order);
    /// external changes are delivered on a background thread. Pass a serial `queue` to be called
    /// there instead. Callbacks never run under the store's lock: they may read and write the
    /// store, the same key included.
    ///
    /// - Parameters:
    ///   - key: The key to observe.
    ///   - options: ``ObservationOptions/initial`` calls at once with the current value;
    ///     ``ObservationOptions/prior`` calls before each local change too. The old and new values
    ///     are always given.
    ///   - queue: Where to call `handler`; nil calls it directly (see above).
    ///   - handler: Receives each change; a nil value means the key has no value.
    /// - Returns: A token: the observation lasts until it is cancelled or released.
    ///
    /// ```swift
    /// let token = defaults.observe("theme") { change in
    ///     print(change.oldValue as Any, "→", change.newValue as Any, change.origin)
    /// }
    /// ```
    public func observe(
        _ key: String, options: ObservationOptions = [], queue: DispatchQueue? = nil,
        _ handler: @escaping @Sendable (DefaultsChange<PropertyListValue?>) -> Void
    ) -> ObservationToken {
        register(Observer(key: key, options: options, queue: queue, backlogLimit: queueLimit, handler: handler))
    }

    /// Observes every key's effective value (as `defaults watch` does): one call per changed key.
    public func observeAll(
        options: ObservationOptions = [], queue: DispatchQueue? = nil,
        _ handler: @escaping @Sendable (DefaultsChange<PropertyListValue?>) -> Void
    ) -> ObservationToken {
        register(Observer(key: nil, options: options, queue: queue, backlogLimit: queueLimit, handler: handler))
    }

    /// Observes a typed key: the change's values have the key's type — `Int` for a
    /// `Key<Int>` (its default stands in when the key has no value), `Profile?` for a
    /// `Key<Profile?>`. A stored value that cannot be read as the type is delivered as the key's
    /// default, and the failure is reported once (``DefaultsErrorReporting``). Changes that decode
    /// to equal values are not delivered (compared with `==`, or by their stored forms when `Value`
    /// is not `Equatable`), nor a change between two stored values that both read as the default
    /// (absent, or not of the type): a run of bad values is told once. Threads and `queue` as for
    /// ``observe(_:options:queue:_:)-(String,_,_,_)``.
    ///
    /// ```swift
    /// let token = defaults.observe(.port) { change in
    ///     server.rebind(to: change.newValue)   // an Int, never nil
    /// }
    /// ```
    public func observe<Value>(
        _ key: Key<Value>, options: ObservationOptions = [], queue: DispatchQueue? = nil,
        _ handler: @escaping @Sendable (DefaultsChange<Value>) -> Void
    ) -> ObservationToken {
        let observer = Observer(key: key.name, options: options, queue: queue, backlogLimit: queueLimit) {
            [weak self] change in
            // The old value was new once: only a new value is reported when it cannot be decoded
            // (docs/design.md, "Observation: typed changes").
            let old = Self.decodedValue(change.oldValue, as: key, reportingTo: nil)
            let new = Self.decodedValue(change.newValue, as: key, reportingTo: self)
            // When neither is a value of the type (absent, or not decodable, as across a run of bad
            // values), both are the default: nothing changed, whether or not `Value` is Equatable.
            if !change.isPrior, !change.isInitial, old == nil && new == nil { return }
            let (oldValue, newValue) = (old ?? key.defaultValue, new ?? key.defaultValue)
            if !change.isPrior, !change.isInitial, Self.isSame(oldValue, newValue, as: key) { return }
            handler(
                DefaultsChange(
                    key: change.key, oldValue: oldValue, newValue: newValue, origin: change.origin,
                    isPrior: change.isPrior, isInitial: change.isInitial))
        }
        return register(observer)
    }

    /// Observes a typed key on the main actor: `handler` is main-actor isolated, so it may change
    /// main-actor state directly. Mark the closure `@MainActor` to choose this form.
    ///
    /// ```swift
    /// let token = defaults.observe(.port) { @MainActor change in
    ///     config.port = change.newValue      // `config` is main-actor isolated
    /// }
    /// ```
    ///
    /// Changes arrive on the main actor (the main queue) in the order they were made, soon after
    /// each change (not during the call that made it); none starts after the token is cancelled.
    public func observe<Value>(
        _ key: Key<Value>, options: ObservationOptions = [],
        _ handler: @escaping @MainActor @Sendable (DefaultsChange<Value>) -> Void
    ) -> ObservationToken {
        // Called on the main queue, in order; the main queue is the main actor's executor
        // (docs/design.md, "Observation: on the main actor").
        observe(key, options: options, queue: .main) { change in
            MainActor.assumeIsolated { handler(change) }
        }
    }

    /// Whether two decoded values of `key` are the same: by `==` when `Value` is `Equatable`, else
    /// by their stored forms — a `Codable` struct is often not `Equatable` (the docs' `Rollout`), and
    /// a bad value followed by the registered default is the default twice.
    static func isSame<Value>(_ lhs: Value, _ rhs: Value, as key: Key<Value>) -> Bool {
        if let equal = Equality.compared(lhs, rhs) { return equal }
        do {
            return try key.encode(lhs) == key.encode(rhs)
        } catch {
            return false
        }
    }

    /// A stored value as `key`'s type: its default when there is none or it cannot be decoded (then
    /// reported once through `defaults`, if given).
    static func decode<Value>(
        _ stored: PropertyListValue?, as key: Key<Value>, reportingTo defaults: Defaults?
    ) -> Value {
        decodedValue(stored, as: key, reportingTo: defaults) ?? key.defaultValue
    }

    /// A stored value as `key`'s type; nil, where the default stands in, when there is none or it
    /// cannot be decoded (then reported once through `defaults`, if given). (An optional key's
    /// stored value decodes to `.some`, never to nil.)
    static func decodedValue<Value>(
        _ stored: PropertyListValue?, as key: Key<Value>, reportingTo defaults: Defaults?
    ) -> Value? {
        guard let stored else { return nil }
        do {
            return .some(try key.decode(stored))
        } catch {
            defaults?.noteUndecodable(key, stored, error)
            return nil
        }
    }

    /// Reports that `stored` cannot be read as `key`'s type, unless this value of the key was
    /// reported already: each bad value once, when it is first read or delivered.
    @usableFromInline
    func noteUndecodable(_ key: AnyKey, _ stored: PropertyListValue, _ error: any Error) {
        let isNew = reportedUndecodable.withLock { reported in
            if reported[key.name] == stored { return false }
            reported[key.name] = stored
            return true
        }
        if isNew {
            DefaultsErrorReporting.report(
                KeyCoding.decodingError(
                    key: key.name, suite: suiteName, stored: stored, cause: error, secret: key.isSecret))
        }
    }

    /// The backlog limit for a `queue:` observer registered now.
    private var queueLimit: Int { backlogLimit.load(ordering: .relaxed) }

    private func register(_ observer: Observer) -> ObservationToken {
        let options = observer.options
        state.withLock { state in
            state.observers.add(observer)
            priorObservers.store(state.observers.priorObserverCount, ordering: .releasing)
            if let key = observer.key { state.effective.setObserved(HashedKey(key), true) }
            if options.contains(.initial), let key = observer.key {
                let current = state.effective[HashedKey(key)]
                state.observers.queue.append(
                    QueuedChange(
                        observer: observer,
                        change: DefaultsChange(
                            key: key, oldValue: current, newValue: current, origin: .local, isInitial: true)))
            }
        }
        deliverQueuedChanges()
        return ObservationToken { [weak self] in
            observer.isActive.store(false, ordering: .releasing)
            self?.state.withLock { state in
                state.observers.remove(observer)
                self?.priorObservers.store(state.observers.priorObserverCount, ordering: .releasing)
                if let key = observer.key.map(HashedKey.init), !state.observers.hasObservers(of: key) {
                    state.effective.setObserved(key, false)
                }
            }
        }
    }
}

/// Compares two values of a type that may or may not be Equatable.
enum Equality {
    /// Whether `lhs` equals `rhs`; false when the type is not Equatable (every change is delivered).
    static func areEqual<Value>(_ lhs: Value, _ rhs: Value) -> Bool {
        compared(lhs, rhs) ?? false
    }

    /// Whether `lhs` equals `rhs`; nil when the type is not Equatable.
    static func compared<Value>(_ lhs: Value, _ rhs: Value) -> Bool? {
        guard let lhs = lhs as? any Equatable else { return nil }
        return isEqual(lhs, rhs)
    }

    private static func isEqual<Left: Equatable>(_ lhs: Left, _ rhs: Any) -> Bool {
        guard let rhs = rhs as? Left else { return false }
        return lhs == rhs
    }
}
