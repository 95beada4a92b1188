import Foundation
import LiveDefaults
import LiveDefaultsTestHelpers
import TestSupport
import Testing

@testable import LiveDefaultsEtcd
@testable import LiveDefaultsEtcdClient

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
    ///
    /// The client's calls block their thread until etcd answers (a frozen member: seconds), so
    /// these run on a thread of their own, not on one of the cooperative pool's two.
    @discardableResult
    func put(_ values: [String: PropertyListValue], delete: [String] = []) async throws -> Int64 {
        let (raw, prefix) = (self.raw, self.prefix)
        return try await onAThreadOfItsOwn {
            try raw.commit(
                puts: try values.map { (EtcdMirror.etcdKey($0.key, prefix: prefix), try EtcdMirror.encode($0.value)) },
                deletes: delete.map { EtcdMirror.etcdKey($0, prefix: prefix) })
        }
    }

    /// What etcd holds for the suite now, decoded.
    func etcdValues() async throws -> [String: PropertyListValue] {
        let (raw, prefix) = (self.raw, self.prefix)
        return try await onAThreadOfItsOwn {
            var mirror = EtcdMirror(prefix: prefix)
            let (header, kvs) = try raw.range(prefix: prefix)
            _ = mirror.resync(header: header, kvs: kvs)
            return mirror.values
        }
    }

    /// etcd's current revision.
    func revision() async throws -> Int64 {
        let (raw, prefix) = (self.raw, self.prefix)
        return try await onAThreadOfItsOwn { try raw.range(prefix: prefix).header.revisionValue }
    }
}

extension FleetConnection {
    /// Waits until the store is in step with etcd at `revision` or later and reads show it (for at
    /// most `seconds`: a bound on a hang, as ``eventually(within:_:)``'s default).
    func caughtUp(to revision: Int64, within seconds: Double = 30) async -> Bool {
        await eventually(within: seconds) {
            if case .live(let now) = state, now >= revision, backend.follower.snapshot.revision >= revision {
                return true
            }
            return false
        }
    }
}
