import Foundation
import LiveDefaultsWatching
import Synchronization

/// One suite's values in this process, and the order in which they change (docs/design.md, "Store
/// model and backends"): the values themselves are a pure ``SuiteValues``, when background work
/// runs is a pure ``StoreSchedule`` on a ``StoreClock``, and where the values are kept is a
/// ``SuiteBackend`` (a file, contracts 3–5; or memory).
///
/// There is one store per file per process (``SuiteStore/open(_:watching:)``); every ``Defaults``
/// that searches the suite shares it.
///
/// Its jobs, a file each:
/// - `SuiteStore.swift`: the state, making and loading the store, reading it, and telling its
///   readers of each change;
/// - `SuiteStore+LocalChanges.swift`: this process's changes (``set(_:forKey:beforeApplying:)``,
///   ``replaceAll(with:beforeApplying:)``) and writing them to the backend (``flush()``, the
///   background flush);
/// - `SuiteStore+OutsideChanges.swift`: following the backend (``startWatching()``) and taking in
///   what changed there (``reload(goneForGood:)``, ``scheduleReload(goneForGood:)``,
///   ``applyIfIdle(_:version:)``), a migration's writes among them (``migrating(_:)``);
/// - `StoreRegistry.swift`: the process's one store per file (``open(_:watching:)``).
package final class SuiteStore: Sendable {
    package let location: SuiteLocation
    package let backend: any SuiteBackend
    let clock: any StoreClock
    /// Whether this store is in the process's registry of file stores.
    private let isRegistered: Bool
    /// The values, the schedule, the last error and the readers: changed only in the process's
    /// change order, so that a `set` and its readers' refresh take one lock (``ChangeOrdered``).
    let state: ChangeOrdered<State>
    /// Serialises the backend's loads, writes and reloads for this store (never held while
    /// delivering to observers). It counts them: the thread sanitizer mistakes accesses to an empty (`Void`)
    /// guarded value in two different objects for a race, so the lock guards a real one.
    let inputOutput = Locked<Int>(0)
    /// Whether ``startWatching()`` was called: the store follows its outside from then on.
    let isWatching = Atomic<Bool>(false)

    struct State {
        var values = SuiteValues()
        var schedule = StoreSchedule()
        var lastError: DefaultsError?
        /// The ``Defaults`` whose search list has this store, told of each change in its step.
        var readers: [Reader] = []

        /// The `Defaults` of the reader at `index`, if that reader is still there and its
        /// `Defaults` alive (a strong reference, loaded from the weak one in place).
        @inline(__always)
        func readerDefaults(at index: Int) -> Defaults? {
            index < readers.count ? readers[index].defaults : nil
        }
    }

    /// A ``Defaults`` that searches this store, held weakly: the `Defaults` holds the store, and a
    /// reader gone is dropped the next time one is added. A class, not a struct: a struct holding
    /// a weak reference is copied and destroyed through the runtime's weak-reference calls
    /// whenever it is read out of the array, on every `set` (about 110 instructions).
    final class Reader {
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
    func tell(_ readers: [Reader], _ changes: [StoredChange], origin: ChangeOrigin) -> Deliveries {
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
    func applyChange(origin: ChangeOrigin, _ body: (inout State) -> [StoredChange]) -> Deliveries {
        ChangeLock.withLock {
            let (changes, readers) = state.withLockHeld { state in (body(&state), state.readers) }
            return tell(readers, changes, origin: origin)
        }
    }
}

// MARK: - Loading

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
}
