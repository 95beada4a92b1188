import Foundation

/// How a fleet suite in this process stands with etcd.
public enum FleetState: Sendable, Equatable {
    /// The first read of etcd is under way; the values are the cached ones, if any.
    case connecting
    /// In step with etcd at `revision`: changes arrive as they are made.
    case live(revision: Int64)
    /// etcd has not answered since `since`; the values are those last known, at `revision` (seen
    /// by this process or read from the cache). Changes are followed again once it answers.
    case stale(revision: Int64, since: Date, reason: String)
    /// etcd has not answered since `since` and no values are known (no cache): only registered
    /// defaults apply.
    case offline(since: Date, reason: String)

    /// Whether the values are in step with etcd.
    public var isLive: Bool {
        if case .live = self { return true }
        return false
    }
}
