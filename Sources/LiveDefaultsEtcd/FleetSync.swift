import LiveDefaults
import LiveDefaultsPropertyList

/// What a fleet suite's store must apply for each piece of news from etcd, as a value
/// (docs/design.md, "Fleet settings: the remote store"), the way `StoreSchedule` decides when a
/// store's work runs: the follower's events go in — a watch batch, a range, this process's own
/// commit, a refusal — and what the store must apply comes out: per-key changes, a replacement by
/// the mirror's values, a reload, or nothing. It does no I/O and keeps no values, only where the
/// store stands against the mirror, so every ordering is a table test (FleetSyncTests).
///
/// - A watch batch on top of the range the store got whole goes up as per-key changes; otherwise
///   (no range installed yet, or one since) it asks for a reload.
/// - A range is one replacement: the store reloads once, and ``replacement(at:)`` hands it the
///   mirror whole (the store's merge is its one diff).
/// - News behind this process's own last commit (``isBehindOwnCommit(revision:at:)``, the one
///   place that check is made) is held back: the commit's events follow, and the next news asks
///   for a reload.
struct FleetSync: Sendable, Equatable {
    /// Where the mirror is when news comes: its revision, its cluster, how many ranges filled it,
    /// and the number of the range (counted as sent) it was last filled from.
    struct Position: Sendable, Equatable {
        var revision: Int64
        var clusterID: UInt64
        var resyncs: Int
        var range: Int
    }

    /// This process's last commit: its revision, the mirror's cluster and range count then, and
    /// how many ranges had been sent when etcd acknowledged it.
    struct Commit: Sendable, Equatable {
        var clusterID: UInt64
        var resyncs: Int
        var revision: Int64
        var rangesSent: Int
    }

    /// The identity of a mirror handed to the store whole.
    struct Installed: Sendable, Equatable {
        var clusterID: UInt64
        var revision: Int64
        var resyncs: Int
    }

    /// A range: its cluster and its count.
    struct Base: Sendable, Equatable {
        var clusterID: UInt64
        var resyncs: Int
    }

    /// What the store must apply.
    enum Apply: Sendable, Equatable {
        /// These keys' new values, as they are, at backend version `version` (no diff).
        case changes([SuiteKeyChange], version: UInt64)
        /// Reload: the store asks for the whole mirror (``replacement(at:)``).
        case reload
        /// Nothing: the news is held back (behind this process's own commit).
        case nothing
    }

    /// The mirror's identity last handed to the store whole: an unchanged mirror is no replacement.
    /// Cleared when per-key changes go up after it (one may have been dropped by a busy store,
    /// which then reloads).
    private(set) var installed: Installed?
    /// The range (cluster and re-sync count) whose values the store got whole: per-key changes go
    /// up only on top of it. Nil before the first replacement, and after news was held back.
    private(set) var changesBase: Base?
    /// The backend's version of the values the store has: it moves on with every snapshot and
    /// change handed up.
    private(set) var version: UInt64 = 0
    private(set) var lastCommit: Commit?

    /// The etcd revision of the values last handed to the store whole; nil before any, and after
    /// per-key changes.
    var installedRevision: Int64? { installed?.revision }

    /// Whether news at `revision`, from a mirror at `position`, is behind this process's own last
    /// commit: the mirror was filled by a range sent before etcd acknowledged the commit (the same
    /// range, or one in flight that answered late), so it would take back values reads already
    /// show; the commit's events are still on the way. A range sent after the acknowledgement is
    /// etcd's word, even below it (a restored snapshot). A commit made before the first range
    /// belongs with that range (the same etcd).
    func isBehindOwnCommit(revision: Int64, at position: Position) -> Bool {
        guard let commit = lastCommit else { return false }
        return revision < commit.revision && position.range <= commit.rangesSent
            && (commit.clusterID == position.clusterID || commit.resyncs == 0)
    }

    /// The offline cache was loaded: the version of its snapshot.
    mutating func cacheLoaded() -> UInt64 {
        version += 1
        return version
    }

    /// One transaction's per-key changes at `revision` (a watch message may hold several), the mirror
    /// now at `position`.
    mutating func watchBatch(_ changes: [EtcdMirror.Change], revision: Int64, at position: Position) -> Apply {
        if isBehindOwnCommit(revision: revision, at: position) {
            changesBase = nil
            return .nothing
        }
        guard let base = changesBase, base.clusterID == position.clusterID, base.resyncs == position.resyncs else {
            return .reload
        }
        installed = nil
        version += 1
        return .changes(changes.map { SuiteKeyChange(key: $0.key, value: $0.new) }, version: version)
    }

    /// A range filled the mirror: one replacement, which the store asks for with a reload.
    func range() -> Apply { .reload }

    /// The store reloads, the mirror at `position`: the version of the replacement to hand it (the
    /// mirror's values), or nil when it has them already or they are behind this process's own
    /// commit. Nil too before the first range: the cached values stay.
    mutating func replacement(at position: Position) -> UInt64? {
        guard position.resyncs > 0 else { return nil }
        if isBehindOwnCommit(revision: position.revision, at: position) {
            changesBase = nil
            return nil
        }
        changesBase = Base(clusterID: position.clusterID, resyncs: position.resyncs)
        if let installed, installed.clusterID == position.clusterID, installed.revision == position.revision,
            installed.resyncs == position.resyncs
        {
            return nil
        }
        installed = Installed(clusterID: position.clusterID, revision: position.revision, resyncs: position.resyncs)
        version += 1
        return version
    }

    /// etcd took this process's write at `revision`, the mirror then at `position`, after
    /// `rangesSent` ranges had been sent: the version of the snapshot the store takes.
    mutating func committed(revision: Int64, at position: Position, rangesSent: Int) -> UInt64 {
        version += 1
        lastCommit = Commit(
            clusterID: position.clusterID, resyncs: position.resyncs, revision: revision, rangesSent: rangesSent)
        return version
    }
}
