import Foundation
import LiveDefaultsPropertyList
import LiveDefaultsTestHelpers
import TestSupport
import Testing

@testable import LiveDefaults

/// Every layer of the search list, in the order it is searched (docs/design.md, "Administered
/// settings: the search list"), with how a test gives it a value of a key.
enum SearchLayer: String, CaseIterable, Sendable, CustomStringConvertible {
    case argument, managed, managedGlobal, managedFleet, volatile, currentHost, suite, fleetDefaults, added, global
    case system1, system2, systemGlobal1, systemGlobal2, registration

    var description: String { rawValue }

    /// Writes the layer's file, for the layers that are files (before the suite is opened).
    func putFile(_ key: String, in world: AdministeredWorld) throws {
        let value: [String: PropertyListValue] = [key: .string(rawValue)]
        switch self {
        case .managed: try world.put(value, in: world.managed)
        case .currentHost:
            // This machine's ByHost file, which an instance opened by name searches.
            let byHost = world.user.appendingPathComponent("ByHost", isDirectory: true)
            try FileManager.default.createDirectory(at: byHost, withIntermediateDirectories: true)
            try world.put(value, in: byHost, "com.example.admin." + Defaults.Host.current.identifier)
        case .managedGlobal: try world.put(value, in: world.managed, Defaults.globalDomain)
        case .added: try world.put(value, in: world.user, "com.example.added")
        case .global: try world.put(value, in: world.user, Defaults.globalDomain)
        case .system1: try world.put(value, in: world.system[0])
        case .system2: try world.put(value, in: world.system[1])
        case .systemGlobal1: try world.put(value, in: world.system[0], Defaults.globalDomain)
        case .systemGlobal2: try world.put(value, in: world.system[1], Defaults.globalDomain)
        default: break
        }
    }

    /// Sets the layer's value in `defaults`, for the layers that are not files. Returns what to keep
    /// alive as long as `defaults` is used.
    func set(_ key: String, in defaults: Defaults) throws -> Defaults? {
        let value = PropertyListValue.string(rawValue)
        switch self {
        case .argument: defaults.setVolatileDomain([key: value], forName: Defaults.argumentDomain)
        case .volatile: defaults.setVolatileDomain([key: value], forName: "session")
        case .suite: defaults.set(value, forKey: key)
        case .registration: defaults.register(defaults: [key: value])
        case .managedFleet, .fleetDefaults:
            let fleet = try Defaults.inMemory(suiteName: "com.example.\(rawValue)")
            fleet.set(value, forKey: key)
            defaults.addStore(fleet.primaryStore, at: self == .managedFleet ? .beforeSuite : .afterSuite)
            return fleet
        default: break
        }
        return nil
    }
}

@Suite struct SearchListOrderTests {
    static let pairs: [(SearchLayer, SearchLayer)] = SearchLayer.allCases.enumerated().flatMap { index, upper in
        SearchLayer.allCases.dropFirst(index + 1).map { (upper, $0) }
    }

    @Test(arguments: pairs)
    func theUpperLayerWins(_ upper: SearchLayer, _ lower: SearchLayer) throws {
        let world = try AdministeredWorld()
        for layer in [upper, lower] { try layer.putFile("k", in: world) }
        let defaults = try world.defaults(watching: false)
        try defaults.addSuite(named: "com.example.added")
        let kept = try [upper, lower].compactMap { try $0.set("k", in: defaults) }
        #expect(defaults.string(forKey: "k") == upper.rawValue, "\(upper) over \(lower)")
        #expect(defaults.dictionaryRepresentation()["k"] as? String == upper.rawValue)
        // One key through the search list (a change's path), as the whole list (a load's) gave it.
        let resolved = ChangeLock.withLock {
            defaults.state.withLock { Defaults.resolve("k", $0, suite: defaults.suite, global: defaults.global) }
        }
        #expect(resolved == .string(upper.rawValue))
        // Taking the upper layer's value away shows the lower one's.
        try take(upper, "k", from: defaults, in: world)
        #expect(defaults.string(forKey: "k") == lower.rawValue, "\(lower) once \(upper) is gone")
        withExtendedLifetime(kept) {}
    }

    /// Takes `layer`'s value of `key` away (a file layer: through the same store, reloaded).
    private func take(_ layer: SearchLayer, _ key: String, from defaults: Defaults, in world: AdministeredWorld) throws
    {
        switch layer {
        case .argument: defaults.removeVolatileDomain(forName: Defaults.argumentDomain)
        case .volatile: defaults.removeVolatileDomain(forName: "session")
        case .suite: defaults.removeObject(forKey: key)
        case .registration: defaults.removeVolatileDomain(forName: Defaults.registrationDomain)
        case .managedFleet, .fleetDefaults:
            let store = try #require(
                defaults.state.withLock { ($0.storesBeforeSuite + $0.storesAfterSuite).first })
            defaults.removeStore(store)
        case .added: defaults.removeSuite(named: "com.example.added")
        default:
            // A file layer: empty its file and reload its store as the watcher would.
            let store = try #require(
                (defaults.candidateLayers.stores + [defaults.global].compactMap { $0 }).first {
                    $0.value(forKey: key) == .string(layer.rawValue)
                })
            try world.put([:], in: URL(fileURLWithPath: store.location.directory), store.location.name)
            store.reload()
        }
    }
}

@Suite struct ValueSourcesTests {
    @Test func sourcesListEveryLayerThatHoldsTheKeyInSearchOrderWithTheWinnerFirst() throws {
        let world = try AdministeredWorld()
        var kept: [Defaults] = []
        for layer in SearchLayer.allCases { try layer.putFile("k", in: world) }
        let defaults = try world.defaults(watching: false)
        try defaults.addSuite(named: "com.example.added")
        for layer in SearchLayer.allCases { kept += [try layer.set("k", in: defaults)].compactMap { $0 } }

        let sources = defaults.sources(forKey: "k")
        #expect(sources.map(\.value) == SearchLayer.allCases.map { .string($0.rawValue) })
        #expect(
            sources.map(\.layer) == [
                .argumentDomain, .managed, .managed, .managedFleet, .volatileDomain, .currentHost, .suite,
                .fleetDefaults,
                .addedSuite, .globalDomain, .systemWide, .systemWide, .systemWide, .systemWide, .registrationDomain,
            ])
        #expect(sources.map(\.wins) == [true] + Array(repeating: false, count: sources.count - 1))
        #expect(sources[1].location == world.managed.appendingPathComponent("com.example.admin.plist").path)
        #expect(sources[2].location == world.managed.appendingPathComponent("NSGlobalDomain.plist").path)
        #expect(sources[4].domain == "session")
        #expect(sources[4].location == nil)
        #expect(sources[6].location == world.user.appendingPathComponent("com.example.admin.plist").path)
        #expect(sources[12].location == world.system[0].appendingPathComponent("NSGlobalDomain.plist").path)
        #expect(defaults.sources(forKey: "absent").isEmpty)
        withExtendedLifetime(kept) {}
    }
}
