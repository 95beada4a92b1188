import Foundation

/// A suite kept in memory only: no file, no lock, no watcher (``Defaults/inMemory(suiteName:)``).
///
/// A write stores the values as they are; nothing outside this process changes them.
package final class MemoryBackend: SuiteBackend {
    private let stored = Locked(SuiteSnapshot())

    package init() {}

    package func load() -> SuiteLoad {
        SuiteLoad(snapshot: stored.withLock { $0 })
    }

    package func write(_ changes: SuiteWrite, over known: inout SuiteSnapshot) throws(DefaultsError) -> SuiteWritten {
        let snapshot = stored.withLock { stored -> SuiteSnapshot in
            stored = SuiteSnapshot(values: changes.applied(to: stored.values), version: stored.version + 1)
            return stored
        }
        return SuiteWritten(snapshot: snapshot, unchangedByOthers: true)
    }

    package func reload(goneForGood: Bool) -> SuiteReload { .unchanged }

    package func startWatching(_ onChange: @escaping @Sendable (SuiteChange) -> Void) {}
}

/// The suites of one in-memory world: the suite a ``Defaults/inMemory(suiteName:)`` opens, its
/// global domain and the suites it adds, shared by the instances made from it and by no one else.
package final class MemorySuites: Sendable {
    /// The directory its suites' (never created) paths are in: unique, so no two worlds share a
    /// store and no file store is ever mistaken for one of these.
    package let directory = "/dev/null/LiveDefaults-in-memory/" + UUID().uuidString
    private let stores = Locked<[String: SuiteStore]>([:])

    package init() {}

    /// The store for `location`, made on first use and kept as long as this world.
    package func open(_ location: SuiteLocation) -> SuiteStore {
        stores.withLock { stores in
            if let store = stores[location.path] { return store }
            let store = SuiteStore(location: location, backend: MemoryBackend(), clock: DispatchStoreClock())
            _ = store.load()
            stores[location.path] = store
            return store
        }
    }
}
