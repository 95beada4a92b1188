import Foundation
import LiveDefaults

extension Defaults {
    /// Adds the fleet suite `suite` to the search list (docs/design.md, "Fleet settings: the remote
    /// store"). Reads never touch the network: the values are kept in memory, current through a
    /// watch; observation works as for any suite, origin `.external` for changes from etcd, and
    /// one etcd transaction reaches observers as one burst.
    ///
    /// The values are at once the last known ones (the offline cache), then etcd's. When etcd
    /// cannot be reached, one `DefaultsError.Code.remoteUnavailable` is reported and the suite
    /// follows etcd again once it answers (``FleetConnection/state``), which one
    /// `DefaultsError.Code.remoteRecovered` reports, with the outage's length and how many keys
    /// changed meanwhile.
    ///
    /// Adding a suite that is already searched (at either placement) does nothing but return its
    /// connection.
    ///
    /// - Parameters:
    ///   - suite: The fleet suite.
    ///   - placement: ``FleetPlacement/fleetDefaults`` (after the local suite) or
    ///     ``FleetPlacement/managed`` (before it).
    /// - Returns: The suite's connection (state, compare-and-set updates).
    @discardableResult
    public func addFleetSuite(_ suite: FleetSuite, placement: FleetPlacement = .fleetDefaults) -> FleetConnection {
        let connection = FleetStores.open(suite)
        addStore(connection.store, at: placement == .managed ? .beforeSuite : .afterSuite)
        return connection
    }

    /// Removes a fleet suite added with ``addFleetSuite(_:placement:)``.
    public func removeFleetSuite(_ suite: FleetSuite) {
        guard let store = FleetStores.existing(suite) else { return }
        removeStore(store)
    }

    /// Opens the fleet suite `suite` as the suite itself: `set` and `removeObject` write to etcd
    /// (coalesced, one transaction per flush), and reads and observation work as for a suite file.
    /// The search list is the argument domain, volatile domains, the fleet suite, suites added
    /// later, and the registration domain; no global domain.
    ///
    /// ```swift
    /// let admin = try Defaults.fleet(fleet)
    /// admin.set(true, forKey: "newCheckout")          // on every machine within milliseconds
    /// try await admin.fleetConnection?.synchronize()  // wait for etcd's answer
    /// ```
    ///
    /// A write etcd refuses (a role that may only read) is dropped and reported as
    /// `DefaultsError.Code.remoteRejected`: reads show etcd's value again. A write while etcd is
    /// unreachable stays pending and is sent again until it lands.
    public static func fleet(_ suite: FleetSuite) throws -> Defaults {
        try Defaults(primaryStore: FleetStores.open(suite).store)
    }

    /// The connection of this instance's suite when it is a fleet suite (``fleet(_:)``), else nil.
    public var fleetConnection: FleetConnection? {
        guard let backend = primaryStore.backend as? FleetBackend else { return nil }
        return FleetConnection(store: primaryStore, backend: backend)
    }

    /// The connection of a fleet suite this instance searches or opened, nil when it has none.
    public func fleetConnection(for suite: FleetSuite) -> FleetConnection? {
        guard let store = FleetStores.existing(suite), let backend = store.backend as? FleetBackend else { return nil }
        return FleetConnection(store: store, backend: backend)
    }
}

/// The process's fleet stores: one per suite description, shared, kept as long as someone uses it.
enum FleetStores {
    private struct WeakStore {
        weak var store: SuiteStore?
    }

    private static let registry = Locked<[FleetSuite: WeakStore]>([:])

    /// The process's store for `suite`, opened (loaded from the cache, following etcd) on first use.
    static func open(_ suite: FleetSuite) -> FleetConnection {
        installExitFlush
        var problems: [DefaultsError] = []
        var isNew = false
        let connection = registry.withLock { registry -> FleetConnection in
            if let store = registry[suite]?.store, let backend = store.backend as? FleetBackend {
                return FleetConnection(store: store, backend: backend)
            }
            let (connection, found) = makeStore(suite)
            problems = found
            isNew = true
            // The entries of stores that have gone are dropped here, as a new one comes (opening a
            // fleet suite is rare; a process that opens many descriptions over its life keeps none
            // of those it closed).
            registry = registry.filter { $0.value.store != nil }
            registry[suite] = WeakStore(store: connection.store)
            return connection
        }
        if isNew, let problem = connection.backend.pendingJournal.adoptDeadJournals(into: connection.store) {
            problems.append(problem)
        }
        for problem in problems { DefaultsErrorReporting.report(problem) }
        connection.store.startWatching()
        return connection
    }

    /// A store of its own, shared with no one (a second writer in the same process, for tests).
    static func openUnshared(_ suite: FleetSuite) -> FleetConnection {
        var (connection, problems) = makeStore(suite)
        if let problem = connection.backend.pendingJournal.adoptDeadJournals(into: connection.store) {
            problems.append(problem)
        }
        for problem in problems { DefaultsErrorReporting.report(problem) }
        connection.store.startWatching()
        return connection
    }

    private static func makeStore(_ suite: FleetSuite) -> (FleetConnection, [DefaultsError]) {
        let backend = FleetBackend(suite: suite)
        let store = SuiteStore(location: backend.location, backend: backend)
        // When etcd answers again after an outage: writes left by processes that died while it was
        // away become this process's own (docs/design.md, "The journal", fleet suites), and the
        // changes held meanwhile go out now, not after the back-off. Here, where the store and its
        // backend are put together: the backend holds no store.
        let journal = backend.pendingJournal
        backend.onRecovery { [weak store] in
            guard let store else { return }
            BlockingCalls.shared.submit {
                if let problem = journal.adoptDeadJournals(into: store) { DefaultsErrorReporting.report(problem) }
                guard store.hasPendingChanges else { return }
                do { try store.flush() } catch {
                    // The store's own retry goes on, and reported the first failure.
                }
            }
        }
        let problems = store.load()
        return (FleetConnection(store: store, backend: backend), problems)
    }

    static func existing(_ suite: FleetSuite) -> SuiteStore? {
        registry.withLock { $0[suite]?.store }
    }

    /// Whether the registry has an entry for `suite`, its store alive or not (for tests of leaks).
    static func isRegistered(_ suite: FleetSuite) -> Bool {
        registry.withLock { $0[suite] != nil }
    }

    /// At normal exit, sends what open fleet stores have pending when etcd answers, and reports
    /// what cannot be sent (it stays in the journal for the next process; it is never lost
    /// silently); writes the offline caches still waiting.
    private static let installExitFlush: Void = {
        atexit {
            let stores = FleetStores.registry.withLock { $0.values.compactMap(\.store) }
            for store in stores where store.hasPendingChanges {
                guard let backend = store.backend as? FleetBackend else { continue }
                if backend.fleetState.isLive {
                    do throws(DefaultsError) { try store.flush() } catch { DefaultsErrorReporting.report(error) }
                } else {
                    let fate =
                        if let journal = backend.pendingJournal.path {
                            "they stay in this process's journal (\(journal)), and the next process to open the "
                                + "suite with the same cache directory sends them."
                        } else {
                            "they were not written (this process has no journal: see its report). Write them "
                                + "again once etcd answers."
                        }
                    DefaultsErrorReporting.report(
                        DefaultsError(
                            .remoteUnavailable,
                            "The process exits with changes to fleet suite \"\(backend.suite.name)\" that etcd "
                                + "(\(backend.suite.whereabouts)) has not taken, as it cannot be reached: \(fate)",
                            suite: backend.suite.name))
                }
            }
            for store in stores { (store.backend as? FleetBackend)?.cache.saveNow() }
        }
    }()
}
