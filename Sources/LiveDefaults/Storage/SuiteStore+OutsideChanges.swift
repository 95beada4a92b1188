extension SuiteStore {
    /// Starts following outside changes to the suite (for files: its directory is watched).
    package func startWatching() {
        guard !isWatching.exchange(true, ordering: .acquiringAndReleasing) else { return }
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

    /// Looks at the backend again after an outside change and delivers the difference (origin
    /// `.external`). Keys this process changed and has not written keep their local value.
    ///
    /// - Parameter goneForGood: The backend's watch said the suite is gone for good (a suite
    ///   found absent then reads as empty; otherwise an absent suite is no change).
    package func reload(goneForGood: Bool = false) {
        reload { goneForGood }
    }

    /// Checks a store that no watch kept up to date against its backend, as a store opened anew
    /// would read it (an absent suite reads as empty), and delivers what changed. Does nothing if
    /// a write or reload holds the I/O lock: that one reads the backend itself, and this may be
    /// called from inside one (a migration step that opens its own suite).
    package func catchUp() {
        _ = reload(waiting: false, started: {}, goneForGood: { true })
    }

    /// Reloads, asking `goneForGood` once no other write or reload runs (a scheduled reload takes
    /// the schedule's request then, so that a "gone for good" overtaken by later news is not
    /// applied, nor applied twice).
    private func reload(goneForGood: () -> Bool) {
        _ = reload(waiting: true, started: {}, goneForGood: goneForGood)
    }

    /// Reloads as above.
    ///
    /// - Parameters:
    ///   - waiting: Whether to wait for the I/O lock; if not, and it is held, nothing is done.
    ///   - started: Called once the I/O lock is held.
    ///   - goneForGood: Asked then, as above.
    /// - Returns: Whether it reloaded (false: the lock was held and `waiting` false).
    private func reload(waiting: Bool, started: () -> Void, goneForGood: () -> Bool) -> Bool {
        func body(_ operations: inout Int) -> (Deliveries, DefaultsError?) {
            operations += 1
            started()
            return reloadHeld(goneForGood: goneForGood(), origin: .external)
        }
        let outcome = waiting ? inputOutput.withLock(body) : inputOutput.withLockIfAvailable(body)
        guard let (deliveries, problem) = outcome else { return false }
        if let problem { DefaultsErrorReporting.report(problem) }
        deliveries.run()
        return true
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

    /// Asks for a reload soon. The schedule is the one owner of when to reload: requests made
    /// before the armed reload starts coalesce into it. It also says where: on the watcher's
    /// inotify thread once its call returns, while this suite's reloads are fast, else on a
    /// worker (docs/design.md, "Live reload: where reloads run").
    ///
    /// - Parameter goneForGood: The suite is gone for good (see ``reload(goneForGood:)``).
    package func scheduleReload(goneForGood: Bool = false) {
        let (arms, inline) = state.withLock {
            ($0.schedule.reloadRequested(goneForGood ? .goneForGood : .mayHaveChanged), $0.schedule.reloadsInline)
        }
        guard arms else { return }
        if inline, clock.runAfterWatcherCall({ [weak self] in self?.runScheduledReload(inline: true) }) { return }
        clock.run(after: .zero) { [weak self] in self?.runScheduledReload(inline: false) }
    }

    /// Runs the armed reload and tells the schedule how long it took, observers included. Inline
    /// (on the watcher's thread), it never waits for the I/O lock: held, the reload goes to a
    /// worker, as it does when not inline.
    private func runScheduledReload(inline: Bool) {
        let start = ContinuousClock.now
        let ran = reload(waiting: !inline) { [self] in
            state.withLock { $0.schedule.reloadStarted() }
        } goneForGood: { [self] in
            state.withLock { $0.schedule.takeReloadRequest() == .goneForGood }
        }
        guard ran else {
            clock.run(after: .zero) { [weak self] in self?.runScheduledReload(inline: false) }
            return
        }
        let duration = ContinuousClock.now - start
        state.withLock { $0.schedule.reloadFinished(taking: duration) }
    }
}
