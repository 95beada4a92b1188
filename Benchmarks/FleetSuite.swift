import Foundation
import LiveDefaults
import LiveDefaultsEtcd

/// LiveDefaults' side of the etcd rows: a fleet suite in the search list of a `Defaults`, as an
/// app adds one (`addFleetSuite`, fleet-defaults placement), with its cache in a scratch directory.
struct BenchFleet {
    let defaults: Defaults
    let connection: FleetConnection

    /// The etcd prefix of `suite`'s keys, under the default root.
    static func prefix(_ suite: String) -> String { FleetSuite.defaultRoot + "/" + suite + "/" }

    /// Opens the local suite `bench.fleet-app` (no file: nothing local) and adds the fleet suite
    /// `suite` on `endpoint` to its search list, with no cache on disk yet when `cache` is new.
    init(endpoint: String, suite: String, cache: URL) throws {
        try self.init(endpoints: [endpoint], suite: suite, cache: cache)
    }

    /// As ``init(endpoint:suite:cache:)``, on several members, tried in this order.
    init(endpoints: [String], suite: String, cache: URL) throws {
        let urls = try endpoints.map { endpoint in
            guard let url = URL(string: endpoint) else { throw RawEtcdConnection.Failure("not a URL: \(endpoint)") }
            return url
        }
        // LIVEDEFAULTS_BENCH_CA: the authority of an `https://` member's certificate, for trying
        // the scale child against TLS (docs/performance.md, "Fleet suites at scale").
        let authority = ProcessInfo.processInfo.environment["LIVEDEFAULTS_BENCH_CA"].map { URL(fileURLWithPath: $0) }
        let fleet = try FleetSuite(
            name: suite, endpoints: urls, cacheDirectory: cache, certificateAuthorities: authority)
        defaults = try Defaults(suiteName: "bench.fleet-app", directory: cache, watchesFiles: false)
        connection = defaults.addFleetSuite(fleet)
    }

    /// Waits until the fleet suite is in step with etcd; false after `seconds`.
    func waitUntilLive(within seconds: Double = 10) -> Bool {
        if connection.state.isLive { return true }
        let live = DispatchSemaphore(value: 0)
        let updates = connection.stateUpdates()
        let task = Task {
            for await state in updates where state.isLive {
                live.signal()
                return
            }
        }
        defer { task.cancel() }
        return live.wait(timeout: .now() + seconds) == .success
    }
}
