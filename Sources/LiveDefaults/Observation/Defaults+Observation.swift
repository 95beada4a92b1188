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
    ///   - options: ``ObservationOptions/old`` and ``ObservationOptions/new`` fill the change's
    ///     values; ``ObservationOptions/initial`` calls at once with the current value;
    ///     ``ObservationOptions/prior`` calls before each local change too.
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
        _ key: String, options: ObservationOptions = [.old, .new], queue: DispatchQueue? = nil,
        _ handler: @escaping @Sendable (DefaultsChange<PropertyListValue>) -> Void
    ) -> ObservationToken {
        register(Observer(key: key, options: options, queue: queue, backlogLimit: queueLimit, handler: handler))
    }

    /// Observes every key's effective value (as `defaults watch` does): one call per changed key.
    public func observeAll(
        options: ObservationOptions = [.old, .new], queue: DispatchQueue? = nil,
        _ handler: @escaping @Sendable (DefaultsChange<PropertyListValue>) -> Void
    ) -> ObservationToken {
        register(Observer(key: nil, options: options, queue: queue, backlogLimit: queueLimit, handler: handler))
    }

    /// Observes a typed key: the change's values are of the key's type. A stored value that cannot
    /// be read as the type is delivered as the key's default, and the failure is reported through
    /// ``DefaultsErrorReporting``. Changes that decode to equal values are not delivered.
    public func observe<Value>(
        _ key: Key<Value>, options: ObservationOptions = [.old, .new], queue: DispatchQueue? = nil,
        _ handler: @escaping @Sendable (DefaultsChange<Value>) -> Void
    ) -> ObservationToken {
        let suiteName = suiteName
        let decode: @Sendable (PropertyListValue?) -> Value = { stored in
            guard let stored else { return key.defaultValue }
            do {
                return try key.decode(stored)
            } catch {
                DefaultsErrorReporting.report(
                    KeyCoding.decodingError(key: key.name, suite: suiteName, stored: stored, cause: error))
                return key.defaultValue
            }
        }
        // Decoding needs both values even when the caller asked for neither, to drop equal ones.
        let observer = Observer(
            key: key.name, options: options.union([.old, .new]), queue: queue, backlogLimit: queueLimit
        ) { change in
            let old = decode(change.oldValue)
            let new = decode(change.newValue)
            if !change.isPrior, !change.isInitial, Equality.areEqual(old, new) { return }
            handler(
                DefaultsChange(
                    key: change.key, oldValue: options.contains(.old) && !change.isInitial ? old : nil,
                    newValue: (options.contains(.new) || change.isInitial) && !change.isPrior ? new : nil,
                    origin: change.origin,
                    isPrior: change.isPrior, isInitial: change.isInitial))
        }
        return register(observer, requestedOptions: options)
    }

    /// The backlog limit for a `queue:` observer registered now.
    private var queueLimit: Int { backlogLimit.load(ordering: .relaxed) }

    private func register(_ observer: Observer, requestedOptions: ObservationOptions? = nil) -> ObservationToken {
        let options = requestedOptions ?? observer.options
        state.withLock { state in
            state.observers.add(observer)
            if let key = observer.key { state.effective.setObserved(HashedKey(key), true) }
            if options.contains(.initial), let key = observer.key {
                let current = state.effective[HashedKey(key)]
                state.observers.queue.append(
                    (
                        observer,
                        DefaultsChange(key: key, oldValue: nil, newValue: current, origin: .local, isInitial: true)
                    ))
            }
        }
        deliverQueuedChanges()
        return ObservationToken { [weak self] in
            observer.isActive.store(false, ordering: .releasing)
            self?.state.withLock { state in
                state.observers.remove(observer)
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
        guard let lhs = lhs as? any Equatable else { return false }
        return isEqual(lhs, rhs)
    }

    private static func isEqual<Left: Equatable>(_ lhs: Left, _ rhs: Any) -> Bool {
        guard let rhs = rhs as? Left else { return false }
        return lhs == rhs
    }
}
