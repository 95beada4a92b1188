import Foundation

// MARK: - One store per file per process

extension SuiteStore {
    private struct WeakStore {
        weak var store: SuiteStore?
    }

    private static let registry = Locked<[String: WeakStore]>([:])

    /// The process's store for the suite file at `location`, opened (and loaded) on first use.
    ///
    /// - Parameters:
    ///   - location: The suite file.
    ///   - watching: Whether the store follows outside changes to its file.
    /// - Returns: The one store of this process for that file.
    package static func open(_ location: SuiteLocation, watching: Bool) -> SuiteStore {
        installExitFlush
        // Loaded inside the registry's lock, so no one sees a store before its values are in; its
        // problems are reported after, since a handler may open a suite (and take that lock).
        var problems: [DefaultsError] = []
        let store = registry.withLock { registry -> SuiteStore in
            if let existing = registry[location.path]?.store { return existing }
            let store = SuiteStore(
                location: location, backend: FileBackend(location: location, operations: SystemFileOperations()),
                isRegistered: true)
            problems = store.load()
            registry[location.path] = WeakStore(store: store)
            return store
        }
        for problem in problems { DefaultsErrorReporting.report(problem) }
        if watching { store.startWatching() }
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
