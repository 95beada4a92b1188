extension SuiteStore {
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
            let readerCount = state.withLockHeld { state -> Int in
                let changed = state.values.set(value, forKey: hashed)
                backend.journal(value, forKey: key)
                armFlush(&state)
                return changed ? state.readers.count : 0
            }
            var deliveries = Deliveries()
            // Each reader read where it is stored, under the change lock: no copy of the array
            // and no retain and release of the array and of each reader (two atomic operations
            // each, on every `set`: docs/performance.md, "Issue 40"). The readers change only
            // under the change lock, and not from a reader's step.
            for index in 0..<readerCount {
                guard let defaults = state.withLockHeld({ $0.readerDefaults(at: index) }) else { continue }
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

    // MARK: Flushing

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
    func flush(tellingReaders: Bool) throws(DefaultsError) {
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
}
