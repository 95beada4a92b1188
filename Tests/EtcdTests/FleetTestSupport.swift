import Foundation
import LiveDefaults
import TestSupport
import Testing

@testable import LiveDefaultsEtcd

/// One fleet-suite scenario: a real member, a suite under a fresh name, a scratch directory for
/// local suite files and the offline cache, and a raw client writing as "another machine".
final class FleetScenario: @unchecked Sendable {
    // Safe as Sendable: set up once, then read.
    let server: EtcdServer
    let scratch: TemporaryDirectory
    let name: String
    let raw: EtcdClient

    init(server: EtcdServer? = nil) async throws {
        if let server {
            self.server = server
        } else {
            self.server = try EtcdServer()
            try await self.server.start()
        }
        scratch = try TemporaryDirectory()
        name = "com.example.fleet-" + UUID().uuidString.prefix(8).lowercased()
        raw = EtcdClient(endpoints: [self.server.endpoint])
    }

    /// The suite's description; `variant` makes a description of the same suite that the process
    /// keeps as a store of its own (a second machine in the same process), sharing the cache
    /// only when `sharesCache`.
    func suite(
        variant: Int = 0, sharesCache: Bool = true, credentials: FleetCredentials? = nil,
        endpoints: [URL]? = nil
    ) throws -> FleetSuite {
        try FleetSuite(
            name: name, endpoints: endpoints ?? [server.endpoint], credentials: credentials,
            cacheDirectory: scratch.url.appendingPathComponent(sharesCache ? "cache" : "cache-\(variant)"),
            requestTimeout: .seconds(5 + variant))
    }

    var prefix: Data { Data("/livedefaults/v1/\(name)/".utf8) }

    /// A local suite (a file in the scratch directory) of the same name.
    func localDefaults(directory: String = "config") throws -> Defaults {
        try Defaults(suiteName: name, directory: scratch.url.appendingPathComponent(directory))
    }

    /// Puts and deletes in one transaction, as another machine would.
    @discardableResult
    func put(_ values: [String: PropertyListValue], delete: [String] = []) async throws -> Int64 {
        try await raw.commit(
            puts: try values.map { (EtcdMirror.etcdKey($0.key, prefix: prefix), try EtcdMirror.encode($0.value)) },
            deletes: delete.map { EtcdMirror.etcdKey($0, prefix: prefix) })
    }

    /// What etcd holds for the suite now, decoded.
    func etcdValues() async throws -> [String: PropertyListValue] {
        var mirror = EtcdMirror(prefix: prefix)
        let (header, kvs) = try await raw.range(prefix: prefix)
        _ = mirror.resync(header: header, kvs: kvs)
        return mirror.values
    }

    /// etcd's current revision.
    func revision() async throws -> Int64 {
        try await raw.range(prefix: prefix).header.revisionValue
    }
}

/// Every change an observer of all keys received, per key, checked for an unbroken chain.
final class ChangeLog: Sendable {
    private let changes = Locked<[DefaultsChange<PropertyListValue?>]>([])
    private let token = Locked<ObservationToken?>(nil)
    /// The effective values when the log started.
    let initial: [String: PropertyListValue]

    init(_ defaults: Defaults) {
        var initial: [String: PropertyListValue] = [:]
        for (key, value) in defaults.dictionaryRepresentation() {
            initial[key] = try? PropertyListValue(foundationObject: value)
        }
        self.initial = initial
        let changes = self.changes
        token.withLock {
            $0 = defaults.observeAll { change in changes.withLock { $0.append(change) } }
        }
    }

    var all: [DefaultsChange<PropertyListValue?>] { changes.withLock { $0 } }

    func of(_ key: String) -> [DefaultsChange<PropertyListValue?>] { all.filter { $0.key == key } }

    /// Keys whose chain of old → new broke (an old value that was not the previous new), starting
    /// from each key's value when the log started.
    func brokenChains() -> [String] {
        var last: [String: PropertyListValue?] = [:]
        var broken: Set<String> = []
        for change in all {
            let previous = last[change.key] ?? initial[change.key]
            if change.oldValue != previous { broken.insert(change.key) }
            last[change.key] = .some(change.newValue)
        }
        return broken.sorted()
    }

    /// Every effective value as the observer must see it now: the values when the log started,
    /// with every change applied.
    var current: [String: PropertyListValue] {
        var values = initial
        for change in all { values[change.key] = change.newValue }
        return values
    }

    /// The last new value of each key the observer heard of (what it believes now).
    var believed: [String: PropertyListValue] {
        var values: [String: PropertyListValue?] = [:]
        for change in all { values[change.key] = .some(change.newValue) }
        return values.compactMapValues { $0 }
    }
}

extension FleetConnection {
    /// Waits until the store is in step with etcd at `revision` or later and reads show it.
    func caughtUp(to revision: Int64, within seconds: Double = 10) async -> Bool {
        await eventually(within: seconds) {
            if case .live(let now) = state, now >= revision, backend.follower.snapshot.revision >= revision {
                return true
            }
            return false
        }
    }
}
