import Foundation

// MARK: - One store per file per process

extension SuiteStore {
    private struct WeakStore {
        weak var store: SuiteStore?
    }

    private static let registry = Locked<[String: WeakStore]>([:])

    /// The global domain's store this process last opened without watching it, kept once its last
    /// ``Defaults`` is gone, as Foundation keeps its global domain: every suite searches it, and an
    /// open finds it here at the cost of one `stat` rather than opening and reading it again
    /// (docs/design.md, "Opening a suite: the global domain kept"). A watched store is never kept,
    /// so that closing every `Defaults` still lets go of every watch.
    private static let keptGlobalDomain = Locked<SuiteStore?>(nil)

    /// The process's store for the suite file at `location`, opened (and loaded) on first use.
    ///
    /// A store found open that no watch keeps up to date is checked against its file first (one
    /// `stat` when the file has not changed), so that a suite opened again sees what other
    /// processes wrote since, as a store opened anew would.
    ///
    /// - Parameters:
    ///   - location: The suite file.
    ///   - watching: Whether the store follows outside changes to its file.
    ///   - keepsUnwatched: Whether the store is kept after its last user when it is not watched
    ///     (the global domain's, ``keptGlobalDomain``).
    /// - Returns: The one store of this process for that file.
    package static func open(_ location: SuiteLocation, watching: Bool, keepsUnwatched: Bool = false) -> SuiteStore {
        installExitFlush
        // Loaded inside the registry's lock, so no one sees a store before its values are in; its
        // problems are reported after, since a handler may open a suite (and take that lock).
        var problems: [DefaultsError] = []
        var wasOpen = false
        let store = registry.withLock { registry -> SuiteStore in
            if let existing = registry[location.path]?.store {
                wasOpen = true
                return existing
            }
            let store = SuiteStore(
                location: location, backend: FileBackend(location: location, operations: SystemFileOperations()),
                isRegistered: true)
            problems = store.load()
            registry[location.path] = WeakStore(store: store)
            return store
        }
        for problem in problems { DefaultsErrorReporting.report(problem) }
        // Read before the watch starts: a change between the last look and the watch is caught
        // by the check below.
        let wasFollowed = wasOpen && store.isWatching.load(ordering: .acquiring)
        if watching { store.startWatching() }
        if wasOpen, !wasFollowed { store.catchUp() }
        if keepsUnwatched {
            let released = keptGlobalDomain.withLock { kept -> SuiteStore? in
                let previous = kept
                kept = watching ? nil : store
                return previous
            }
            // Released after the lock: were it the last reference, its deinit would flush.
            _ = released
        }
        return store
    }

    /// Drops the registry's entry for `path` once its store is gone (a new store for the same
    /// file may have taken the entry meanwhile; that one stays).
    static func forget(_ path: String) {
        let survivor = registry.withLock { registry -> SuiteStore? in
            // One hash of the path, not two (a lookup, then a removal by key): about 1,000
            // instructions of each store's deinit (docs/performance.md).
            guard let index = registry.index(forKey: path) else { return nil }
            let store = registry.values[index].store
            if store == nil { registry.remove(at: index) }
            // Released after the lock: were it the last reference, its deinit would take the lock.
            return store
        }
        _ = survivor
    }

    /// Whether the registry of open stores has an entry for `location` (for tests of leaks).
    package static func isRegistered(_ location: SuiteLocation) -> Bool {
        registry.withLock { $0[location.path] != nil }
    }

    /// Flushes every open store: run at normal process exit.
    package static func flushAll() {
        let stores = registry.withLock { $0.values.compactMap(\.store) }
        for store in stores where store.hasPendingChanges {
            do { try store.flush() } catch { DefaultsErrorReporting.report(error) }
        }
    }

    private static let installExitFlush: Void = {
        atexit { SuiteStore.flushAll() }
    }()
}
