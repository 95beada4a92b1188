import Foundation
import Synchronization

/// The layers one ``Defaults`` searches only while they hold values (docs/design.md, "Administered
/// settings" and "Per-host values"): the managed files that force keys, the system-wide files, each
/// a read-only ``SuiteStore``, and the suite's ByHost file (or, for a ByHost suite, its file for
/// any host).
///
/// An instance that follows files opens and watches every file, whether or not it or its directory
/// exists yet (a candidate): a directory made later is followed live. One that does not follow
/// files opens only the files that are there. Only the candidates that hold values are in the
/// search list (`Defaults.State.forced`, `.system`, `.currentHost` and `.anyHost`), so a layer with no file costs nothing on
/// the read or write path. ``updateSearchList(_:)`` recomputes which are, whenever a candidate
/// changes.
final class CandidateLayers: Sendable {
    let settings: AdministeredSettings
    /// Managed files, the one that wins first: the suite's, then the global domain's.
    let managed: [SuiteStore]
    /// System-wide files, the one that wins first: the suite's in each directory, then the global
    /// domain's in each directory.
    let system: [SuiteStore]
    /// The suite's ByHost file searched before the suite (`isAnyHost` false), or, for an instance
    /// whose suite is a ByHost file, the suite's file for any host searched after it.
    let host: (store: SuiteStore, isAnyHost: Bool)?
    /// Whether the search list has a layer that forces keys (a managed file with values, a managed
    /// fleet suite): a write checks it without the lock, and takes its slow path only then.
    let mayForce = Atomic<Bool>(false)
    /// Keys whose forced set was already reported (once per key and instance).
    let reportedForcedWrites = Locked<Set<String>>([])
    /// Who observes keys becoming forced or released.
    let forcedObservers = Locked<ForcedObservers>(ForcedObservers())

    /// Opens the candidates of suite `suiteName`.
    ///
    /// - Parameters:
    ///   - settings: Where the files are.
    ///   - suiteName: The suite.
    ///   - suitePath: The suite's own file, never opened here.
    ///   - globalPath: The global domain's own file, never opened here.
    ///   - host: The host layer (``host``), if any.
    ///   - watching: Whether the files are followed live.
    init(
        settings: AdministeredSettings, suiteName: String, excluding suitePath: String, _ globalPath: String?,
        host: (SuiteStore, Bool)?, watching: Bool
    ) {
        self.settings = settings
        self.host = host.map { (store: $0.0, isAnyHost: $0.1) }
        let names = suiteName == Defaults.globalDomain ? [suiteName] : [suiteName, Defaults.globalDomain]
        // The suite's own name was validated when it was opened, or is a file's; the global
        // domain's is a constant.
        func location(of name: String, in directory: String) -> SuiteLocation? {
            let location =
                name == Defaults.globalDomain
                ? SuiteLocation(globalDomainIn: directory) : try? SuiteLocation(suiteName: name, directory: directory)
            guard let location, location.path != suitePath, location.path != globalPath else { return nil }
            return location
        }
        let paths = settings.paths
        var managed: [SuiteStore] = []
        if let directory = paths.managed, watching || Self.isDirectory(directory) {
            for name in names {
                guard let location = location(of: name, in: directory), watching || Self.exists(location.path)
                else { continue }
                let store = SuiteStore(
                    location: location,
                    backend: ManagedFileBackend(location: location, trustedOwner: settings.trustedOwner))
                for problem in store.load() { DefaultsErrorReporting.report(problem) }
                if watching { store.startWatching() }
                managed.append(store)
            }
        }
        var system: [SuiteStore] = []
        // No `stat` of each directory first: a file in a directory that is not there is not there
        // either, and the usual `/etc/xdg` is there (one system call fewer per open).
        let directories = paths.system
        for name in names {
            for directory in directories {
                guard let location = location(of: name, in: directory), watching || Self.exists(location.path)
                else { continue }
                system.append(SuiteStore.open(location, watching: watching))
            }
        }
        self.managed = managed
        self.system = system
    }

    /// Whether there is a file at `path`. An instance that does not follow files opens no store
    /// for a file that is not there: it could never see one appear.
    static func exists(_ path: String) -> Bool {
        SystemFileOperations().access(path, F_OK) == 0
    }

    /// Whether `path` is a directory.
    static func isDirectory(_ path: String) -> Bool {
        SystemFileOperations().isDirectory(path)
    }

    /// Every candidate.
    var stores: [SuiteStore] { managed + system + [host?.store].compactMap { $0 } }

    /// Whether `store` is one of the candidates.
    func contains(_ store: SuiteStore) -> Bool {
        managed.contains { $0 === store } || system.contains { $0 === store } || host?.store === store
    }

    /// Records whether `state`'s search list has a layer that forces keys (``mayForce``).
    func noteForcingLayers(_ state: Defaults.State) {
        mayForce.store(!state.forced.isEmpty || !state.storesBeforeSuite.isEmpty, ordering: .releasing)
    }

    /// Puts the candidates that hold values in the search list, in search order (the suite's file
    /// for any host, searched by a ByHost instance, always). Called under the ``ChangeLock``.
    func updateSearchList(_ state: inout Defaults.State) {
        state.forced = managed.filter { !$0.orderedValues().isEmpty }
        state.system = system.filter { !$0.orderedValues().isEmpty }
        noteForcingLayers(state)
        if let host {
            if host.isAnyHost {
                state.anyHost = [host.store]
            } else {
                state.currentHost = host.store.orderedValues().isEmpty ? [] : [host.store]
            }
        }
    }
}

/// Observers of keys becoming forced or released, and what each key was last told.
struct ForcedObservers {
    struct Entry {
        let key: String
        let handler: @Sendable (Bool) -> Void
        var isForced: Bool
    }

    var entries: [UInt64: Entry] = [:]
    var nextID: UInt64 = 0
}
