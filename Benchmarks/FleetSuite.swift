import Foundation
import LiveDefaults

/// LiveDefaults' side of the etcd rows: a remote suite opened as an app opens one.
enum FleetSuite {
    /// The root the remote suites live under (the store's default).
    static let root = "/livedefaults/v1/"

    /// The etcd prefix of `suite`'s keys.
    static func prefix(_ suite: String) -> String { root + suite + "/" }

    struct Unavailable: Error, CustomStringConvertible {
        var description: String { "the remote-suite API is not there yet" }
    }

    /// A `Defaults` whose search list holds the remote suite `suite` on `endpoint`.
    static func open(endpoint: String, suite: String, cache: URL? = nil) throws -> Defaults {
        throw Unavailable()
    }

    /// Waits until the remote suite is in step with etcd; false after `seconds`.
    static func waitUntilLive(_ defaults: Defaults, within seconds: Double = 10) -> Bool {
        false
    }
}
