import Foundation
import LiveDefaultsWatching

/// One suite's values in this process, and the order in which they change (docs/design.md, "Store
/// model and backends"): the values themselves are a pure ``SuiteValues``, when background work
/// runs is a pure ``StoreSchedule`` on a ``StoreClock``, and where the values are kept is a
/// ``SuiteBackend`` (a file, contracts 3–5; or memory).
///
/// There is one store per file per process (``SuiteStore/open(_:watching:)``); every ``Defaults``
/// that searches the suite shares it.
package final class SuiteStore: Sendable {
    package let location: SuiteLocation
    package let backend: any SuiteBackend
    private let clock: any StoreClock
    /// Whether this store is in the process's registry of file stores.
    private let isRegistered: Bool
    /// The values, the schedule, the last error and the readers: changed only in the process's
    /// change order, so that a `set` and its readers' refresh take one lock (``ChangeOrdered``).
    private let state: ChangeOrdered<State>
    /// Serialises the backend's loads, writes and reloads for this store (never held while
    /// delivering to observers). It counts them: the thread sanitizer mistakes accesses to an empty (`Void`)
    /// guarded value in two different objects for a race, so the lock guards a real one.
    private let inputOutput = Locked<Int>(0)

    private struct State {
        var values = SuiteValues()
        var schedule = StoreSchedule()
        var lastError: DefaultsError?
        /// The ``Defaults`` whose search list has this store, told of each change in its step.
        var readers: [Reader] = []
    }

    /// A ``Defaults`` that searches this store, held weakly: the `Defaults` holds the store, and a
    /// reader gone is dropped the next time one is added. A class, not a struct: a struct holding
    /// a weak reference is copied and destroyed through the runtime's weak-reference calls
    /// whenever it is read out of the array, on every `set` (about 110 instructions).
    private final class Reader {
        weak var defaults: Defaults?

        init(_ defaults: Defaults) {
            self.defaults = defaults
        }
    }

    /// A store that is not in the registry (the registry's own, in-memory suites, tests). Call
    /// ``load()`` before using it.
    package init(
        location: SuiteLocation, backend: any SuiteBackend, clock: any StoreClock = DispatchStoreClock(),
        isRegistered: Bool = false
    ) {
        self.location = location
        self.backend = backend
        self.clock = clock
        self.isRegistered = isRegistered
        self.state = ChangeOrdered(State())
    }

    deinit {
        // The last user is gone: write what it changed rather than lose it.
        // No one reads it any more, and this may run under the change lock (the last reference
        // to a `Defaults` dropped there): the flush does not take it.
        if state.withExclusiveAccess({ $0.values.hasPendingChanges }) {
            do { try flush(tellingReaders: false) } catch { DefaultsErrorReporting.report(error) }
        }
        if isRegistered { Self.forget(location.path) }
    }

    // MARK: Reading

    /// The stored value of `key`, nil when the suite has none.
    package func value(forKey key: String) -> PropertyListValue? {
        state.withLock { $0.values.current[key] }
    }

    /// Every stored value.
    package func values() -> [String: PropertyListValue] {
        state.withLock { $0.values.current }
    }

    /// The stored value of `key`, for a caller that holds the ``ChangeLock`` (a `Defaults`
    /// resolving a key in a change's step).
    func orderedValue(forKey key: String) -> PropertyListValue? {
        state.withLockHeld { $0.values.current[key] }
    }

    /// Every stored value, for a caller that holds the ``ChangeLock``.
    func orderedValues() -> [String: PropertyListValue] {
        state.withLockHeld { $0.values.current }
    }

    /// The last problem with this suite's file (a corrupt file, a failed write), nil when none.
    package var lastError: DefaultsError? { state.withLock { $0.lastError } }

    /// Whether this process has changes not yet written.
    package var hasPendingChanges: Bool {
        state.withLock { $0.values.hasPendingChanges }
    }

    // MARK: Writing

    /// Sets (or, with nil, removes) `key`: memory at once, the backend at the next flush.
    ///
    /// - Parameters:
    ///   - value: The new value, or nil to remove the key.
    ///   - key: The key.
    ///   - beforeApplying: Run under the change lock just before the value changes (a `Defaults`
    ///     queues its prior calls there, so they come right before their change).
    package func set(_ value: PropertyListValue?, forKey key: String, beforeApplying: (() -> Void)? = nil) {
        // Hashed once, for the pending changes and for each reader's effective values.
        let hashed = HashedKey(key)
        let deliveries = ChangeLock.withLock { () -> Deliveries in
            beforeApplying?()
            var readers: [Reader] = []
            state.withLockHeld { state in
                if state.values.set(value, forKey: hashed) { readers = state.readers }
                backend.journal(value, forKey: key)
                armFlush(&state)
            }
            var deliveries = Deliveries()
            for reader in readers {
                guard let defaults = reader.defaults else { continue }
                deliveries.append(defaults, defaults.storeChanged(self, key: hashed, to: value, origin: .local))
            }
            return deliveries
        }
        deliveries.run()
    }

    /// Sets (nil: removes) each key of `values` as one step, recorded in the suite's history with
    /// `origin` (a rollback, a migration) rather than the process's own (docs/design.md, "History:
    /// origins"). The plain ``set(_:forKey:beforeApplying:)`` stays as it is.
    package func set(_ values: [(key: String, value: PropertyListValue?)], origin: DefaultsHistoryEntry.Origin) {
        let deliveries = ChangeLock.withLock { () -> Deliveries in
            var changed: [(key: String, value: PropertyListValue?)] = []
            let readers = state.withLockHeld { state -> [Reader] in
                for (key, value) in values {
                    if state.values.set(value, forKey: key) { changed.append((key, value)) }
                    if let generation = state.values.pendingGeneration(forKey: key) {
                        backend.journalOrigin(origin, forKey: key, generation: generation)
                    }
                    backend.journal(value, forKey: key)
                }
                armFlush(&state)
                return state.readers
            }
            var deliveries = Deliveries()
            for reader in readers {
                guard let defaults = reader.defaults else { continue }
                for (key, value) in changed {
                    deliveries.append(
                        defaults, defaults.storeChanged(self, key: HashedKey(key), to: value, origin: .local))
                }
            }
            return deliveries
        }
        deliveries.run()
    }

    /// Replaces every value of the suite (nil or empty removes them all).
    ///
    /// - Parameters:
    ///   - values: The suite's new values.
    ///   - beforeApplying: As for ``set(_:forKey:beforeApplying:)``.
    package func replaceAll(with values: [String: PropertyListValue], beforeApplying: (() -> Void)? = nil) {
        let deliveries = ChangeLock.withLock { () -> Deliveries in
            beforeApplying?()
            let (changes, readers) = state.withLockHeld { state in
                let changes = state.values.replaceAll(with: values)
                backend.journalReplacement(values)
                armFlush(&state)
                return (changes, state.readers)
            }
            return tell(readers, changes, origin: .local)
        }
        deliveries.run()
    }

    // MARK: Readers

    /// Tells `defaults` of every change of this store from now on, in the step that makes it.
    /// Call under the ``ChangeLock``, in the step that reads the store's values for `defaults`.
    func addReader(_ defaults: Defaults) {
        state.withLockHeld { state in
            state.readers.removeAll { $0.defaults == nil }
            state.readers.append(Reader(defaults))
        }
    }

    /// Stops telling `defaults` (a suite removed from its search list).
    func removeReader(_ defaults: Defaults) {
        state.withLock { state in
            state.readers.removeAll { $0.defaults == nil || $0.defaults === defaults }
        }
    }

    /// Tells `readers` which keys changed. Called under the change lock, in the same step as the
    /// change itself, so every reader sees every change in the order it was applied.
    private func tell(_ readers: [Reader], _ changes: [StoredChange], origin: ChangeOrigin) -> Deliveries {
        var deliveries = Deliveries()
        guard !changes.isEmpty else { return deliveries }
        let keys = ChangedKeys.many(Set(changes.lazy.map(\.key)))
        for reader in readers {
            guard let defaults = reader.defaults else { continue }
            deliveries.append(defaults, defaults.storeChanged(self, keys: keys, origin: origin))
        }
        return deliveries
    }

    /// Changes the store's state with `body` and tells the readers what changed, as one step
    /// under the change lock (docs/design.md, "Observation: one order for every change").
    ///
    /// - Returns: The readers' deliveries, for the caller to run once it holds no lock.
    private func applyChange(origin: ChangeOrigin, _ body: (inout State) -> [StoredChange]) -> Deliveries {
        ChangeLock.withLock {
            let (changes, readers) = state.withLockHeld { state in (body(&state), state.readers) }
            return tell(readers, changes, origin: origin)
        }
    }
}

// MARK: - Loading, flushing and reloading

extension SuiteStore {
    /// Loads the values from the backend for the first time. A bad file leaves the store empty and
    /// usable, with the error in ``lastError``. Call it once, right after making the store and
    /// before any other thread can reach it: the registry of stores loads under its own lock, and
    /// taking the change lock there would order the two locks against a store's deinitialiser.
    ///
    /// - Returns: The problems to report, which the caller reports once it holds no lock (a
    ///   handler may open a suite itself).
    package func load() -> [DefaultsError] {
        inputOutput.withLock { operations -> [DefaultsError] in
            operations += 1
            let load = backend.load()
            state.withExclusiveAccess { state in
                state.values = SuiteValues(stored: load.snapshot.values, version: load.snapshot.version)
                if let error = load.error { state.lastError = error }
            }
            return [load.error].compactMap { $0 } + load.warnings
        }
    }

    /// Writes this process's pending changes now, through the backend (for files: lock ▸ re-read if
    /// changed ▸ merge ▸ atomic replace).
    ///
    /// - Throws: ``DefaultsError`` when the file cannot be locked or written. The values stay in
    ///   memory and pending, and a later flush writes them.
    package func flush() throws(DefaultsError) {
        try flush(tellingReaders: true)
    }

    /// Writes the pending changes, as ``flush()`` does.
    ///
    /// - Parameter tellingReaders: False from the deinitialiser, which holds the only reference and
    ///   may run under the change lock: the state is then reached without it.
    /// - Throws: ``DefaultsError`` when nothing was written.
    private func flush(tellingReaders: Bool) throws(DefaultsError) {
        var deliveries = Deliveries()
        defer { deliveries.run() }
        func access<Result>(_ body: (inout State) -> Result) -> Result {
            tellingReaders ? state.withLock(body) : state.withExclusiveAccess(body)
        }
        try inputOutput.withLock { operations throws(DefaultsError) in
            operations += 1
            // The stored values are taken out of the state while the write runs (every use of them
            // is under `inputOutput`, as this is), so the backend merges into them in place.
            let taken = access { state -> (SuiteWrite, SuiteSnapshot)? in
                guard let outgoing = state.values.outgoing() else { return nil }
                backend.journalMark()
                return (outgoing, SuiteSnapshot(values: state.values.takeStored(), version: state.values.version))
            }
            guard case (let outgoing, var known)? = taken else { return }
            let written: SuiteWritten
            do throws(DefaultsError) {
                written = try backend.write(outgoing, over: &known)
            } catch {
                access { state in
                    state.values.putBackStored(known.values)
                    state.lastError = error
                }
                throw error
            }
            let install = { (state: inout State) -> [StoredChange] in
                state.schedule.flushSucceeded()
                if let code = state.lastError?.code,
                    code == .writeFailed || code == .lockFailed || code == .corruptFile || code == .remoteUnavailable
                        || code == .remoteRejected
                {
                    state.lastError = nil
                }
                // Values other processes wrote, net of this process's changes made during the write.
                return state.values.install(
                    written.snapshot.values, version: written.snapshot.version, after: outgoing,
                    unchangedByOthers: written.unchangedByOthers)
            }
            if tellingReaders {
                deliveries = applyChange(origin: .external, install)
            } else {
                _ = access(install)
            }
            if let refusal = written.refusal {
                access { $0.lastError = refusal }
                throw refusal
            }
        }
    }

    /// Looks at the backend again after an outside change and delivers the difference (origin
    /// `.external`). Keys this process changed and has not written keep their local value.
    ///
    /// - Parameter goneForGood: The backend's watch said the suite is gone for good (a suite
    ///   found absent then reads as empty; otherwise an absent suite is no change).
    package func reload(goneForGood: Bool = false) {
        reload { goneForGood }
    }

    /// Reloads, asking `goneForGood` once no other write or reload runs (a scheduled reload takes
    /// the schedule's request then, so that a "gone for good" overtaken by later news is not
    /// applied, nor applied twice).
    private func reload(goneForGood: () -> Bool) {
        let (deliveries, problem) = inputOutput.withLock { operations in
            operations += 1
            return reloadHeld(goneForGood: goneForGood(), origin: .external)
        }
        if let problem { DefaultsErrorReporting.report(problem) }
        deliveries.run()
    }

    /// Runs `body` — a migration, which writes the backend's storage under its own lock — while no
    /// write or reload of this store runs, and reloads in the same hold: the changes reach
    /// observers with the origin `.migration` when `body` called its `willWrite` (this process
    /// wrote them), else (steps another process ran) `.external`. The watcher's reload of the same
    /// write waits for the hold, then finds the file this store has read: no mark to look up, the
    /// change carries its origin (docs/design.md, "Migrations").
    package func migrating<Value>(
        _ body: (_ willWrite: () -> Void) throws(DefaultsError) -> Value
    ) throws(DefaultsError) -> Value {
        let (outcome, deliveries, problem) = inputOutput.withLock {
            operations -> (Result<Value, DefaultsError>, Deliveries, DefaultsError?) in
            operations += 1
            var wrote = false
            let outcome: Result<Value, DefaultsError>
            do throws(DefaultsError) {
                outcome = .success(try body { wrote = true })
            } catch {
                outcome = .failure(error)
            }
            let (deliveries, problem) = reloadHeld(goneForGood: false, origin: wrote ? .migration : .external)
            return (outcome, deliveries, problem)
        }
        if let problem { DefaultsErrorReporting.report(problem) }
        deliveries.run()
        return try outcome.get()
    }

    /// Looks at the backend again and installs what changed, delivered with `origin`. Call
    /// holding the I/O lock.
    ///
    /// - Returns: The deliveries to run and a problem to report, once no lock is held.
    private func reloadHeld(goneForGood: Bool, origin: ChangeOrigin) -> (Deliveries, DefaultsError?) {
        switch backend.reload(goneForGood: goneForGood) {
        case .unchanged:
            return (Deliveries(), nil)
        case .failed(let error):
            return (Deliveries(), error)
        case .unreadable(let error, let isNew):
            state.withLock { $0.lastError = error }
            return (Deliveries(), isNew ? error : nil)
        case .changed(let snapshot):
            // An edit outside LiveDefaults is recorded in the suite's history by one process.
            backend.recordOutsideChange(from: state.withLock { $0.values.stored }, to: snapshot.values)
            let deliveries = applyChange(origin: origin) { state in
                if state.lastError?.code == .corruptFile { state.lastError = nil }
                return state.values.install(snapshot.values, version: snapshot.version, after: nil)
            }
            return (deliveries, nil)
        }
    }

    /// Applies a backend's per-key changes on this thread, if no write or reload is under way
    /// (a remote follower's news is delivered on its own thread, without a hop); returns false,
    /// doing nothing, if one is. Keys this process changed and has not written keep their local
    /// value; nothing of the suite is compared but the keys given.
    ///
    /// Changes at a version older than the values installed are stale (a fleet watch batch
    /// decided before this process's write, and arriving after its answer): they would take the
    /// write back from reads. They are not applied either, and false asks for the reload that
    /// reads the backend whole.
    package func applyIfIdle(_ changes: [SuiteKeyChange], version: UInt64) -> Bool {
        var isStale = false
        let applied = inputOutput.withLockIfAvailable { operations -> Deliveries in
            operations += 1
            return applyChange(origin: .external) { state in
                guard version >= state.values.version else {
                    isStale = true
                    return []
                }
                return state.values.apply(changes, version: version)
            }
        }
        guard let deliveries = applied, !isStale else { return false }
        // One message of the follower is one burst: its notification is posted here, with no
        // timer and no worker woken (docs/design.md, "The change notification").
        deliveries.run(postingNow: true)
        return true
    }

    /// Asks for a reload soon, off the calling thread. The schedule is the one owner of when to
    /// reload: requests made before the armed reload starts coalesce into it.
    ///
    /// - Parameter goneForGood: The suite is gone for good (see ``reload(goneForGood:)``).
    package func scheduleReload(goneForGood: Bool = false) {
        let arms = state.withLock { $0.schedule.reloadRequested(goneForGood ? .goneForGood : .mayHaveChanged) }
        guard arms else { return }
        clock.run(after: .zero) { [weak self] in
            guard let self else { return }
            self.state.withLock { $0.schedule.reloadStarted() }
            self.reload { self.state.withLock { $0.schedule.takeReloadRequest() == .goneForGood } }
        }
    }

    /// Arms the background flush when the schedule says so (once per burst of changes).
    @inline(__always)
    private func armFlush(_ state: inout State) {
        guard let delay = state.schedule.changeMade() else { return }
        arm(after: delay)
    }

    private func arm(after delay: Duration) {
        clock.run(after: delay) { [weak self] in
            self?.backgroundFlush()
        }
    }

    private func backgroundFlush() {
        state.withLock { $0.schedule.flushStarted() }
        do {
            try flush()
        } catch {
            // Keep the values and try again later, backing off; report once per distinct problem.
            let isFirstFailure = state.withLock { state -> Bool in
                let failure = state.schedule.flushFailed()
                if let delay = failure.retryAfter { arm(after: delay) }
                return failure.isFirstFailure
            }
            if isFirstFailure { DefaultsErrorReporting.report(error) }
        }
    }

    /// Starts following outside changes to the suite (for files: its directory is watched).
    package func startWatching() {
        backend.startWatching { [weak self] change in
            guard let self else { return }
            switch change {
            case .mayHaveChanged:
                self.scheduleReload()
            case .goneForGood:
                self.scheduleReload(goneForGood: true)
            case .changed(let changes, let version):
                // Busy with a write or a reload: the reload that follows reads the backend whole.
                if !self.applyIfIdle(changes, version: version) { self.scheduleReload() }
            }
        }
    }
}
