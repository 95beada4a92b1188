import Foundation

/// One layer of the search list that holds a value of a key (``Defaults/sources(forKey:)``).
public struct ValueSource: Sendable, Equatable {
    /// A kind of layer, in the order the search list has them.
    public enum Layer: String, Sendable, Hashable, CaseIterable {
        /// `-key value` in the process's arguments.
        case argumentDomain
        /// An administrator's managed file (the suite's or the global domain's): a forced key.
        case managed
        /// A managed fleet suite (in etcd): a forced key.
        case managedFleet
        /// A volatile domain set by the program.
        case volatileDomain
        /// The suite's file for this machine (ByHost).
        case currentHost
        /// The suite's own file.
        case suite
        /// A fleet suite's defaults (in etcd).
        case fleetDefaults
        /// A suite added with ``Defaults/addSuite(named:)``.
        case addedSuite
        /// The user's global domain (`NSGlobalDomain.plist`).
        case globalDomain
        /// A system-wide file (`$XDG_CONFIG_DIRS`): the suite's or the global domain's.
        case systemWide
        /// The registration domain.
        case registrationDomain
    }

    /// The kind of layer.
    public var layer: Layer
    /// The domain's name: a suite, a volatile domain, ``Defaults/argumentDomain`` or ``Defaults/registrationDomain``.
    public var domain: String
    /// Where the value is kept: a file's path, or a fleet suite's etcd endpoints and prefix; nil
    /// for a layer kept in memory.
    public var location: String?
    /// The etcd revision of a fleet suite's values; nil for other layers.
    public var revision: Int64?
    /// The layer's value of the key.
    public var value: PropertyListValue
    /// Whether this is the value reads give (the first layer that has the key).
    public var wins: Bool

    /// Creates a source.
    public init(
        layer: Layer, domain: String, location: String?, revision: Int64? = nil, value: PropertyListValue,
        wins: Bool
    ) {
        self.layer = layer
        self.domain = domain
        self.location = location
        self.revision = revision
        self.value = value
        self.wins = wins
    }
}

extension Defaults {
    /// Every layer of the search list that holds a value of `key`, in search order: the first one
    /// wins (``ValueSource/wins``) and is what reads give. For a person, `defaults explain` prints
    /// the same.
    ///
    /// ```swift
    /// for source in defaults.sources(forKey: "homepage") {
    ///     print(source.wins ? "*" : " ", source.layer, source.location ?? "-", source.value)
    /// }
    /// ```
    ///
    /// - Parameter key: The key.
    /// - Returns: The layers that have the key, empty when none does.
    public func sources(forKey key: String) -> [ValueSource] {
        var sources: [ValueSource] = []
        func add(_ layer: ValueSource.Layer, _ domain: String, _ value: PropertyListValue?) {
            guard let value else { return }
            sources.append(
                ValueSource(layer: layer, domain: domain, location: nil, value: value, wins: sources.isEmpty))
        }
        func add(_ layer: ValueSource.Layer, _ store: SuiteStore) {
            guard let value = store.orderedValue(forKey: key) else { return }
            sources.append(
                ValueSource(
                    layer: layer, domain: store.location.name, location: store.backend.sourceDescription,
                    revision: store.backend.sourceRevision, value: value, wins: sources.isEmpty))
        }
        // The change lock, then the state lock: the order every change takes them in.
        ChangeLock.withLock {
            state.withLock { state in
                state.forEachSearchLayer(suite: suite, global: global) { layer in
                    switch layer {
                    case .values(let layer, let domain, let values): add(layer, domain, values[key])
                    case .store(let layer, let store): add(layer, store)
                    case .suite(let store): add(candidateLayers.host?.isAnyHost == true ? .currentHost : .suite, store)
                    }
                    return true
                }
            }
        }
        return sources
    }

    /// The values of this suite's system-wide files, merged (earlier directories win); the global
    /// domain's system-wide files only when this suite is the global domain. For
    /// `defaults read --system`.
    package func systemWideValues() -> [String: PropertyListValue] {
        var values: [String: PropertyListValue] = [:]
        for store in candidateLayers.system where store.location.name == suiteName {
            values.merge(store.values()) { upper, _ in upper }
        }
        return values
    }
}

extension FileBackend {
    /// The suite file's path.
    package var sourceDescription: String? { file.location.path }
}
