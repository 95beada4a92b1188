import LiveDefaults
import Testing

@testable import LiveDefaultsEtcd

/// Every ordering of a fleet suite's news that the real-etcd tests meet, as a table: what the store
/// must apply for a watch batch, a range, this process's own commit, without etcd (FleetSync is a
/// value).
struct FleetSyncTests {
    typealias Position = FleetSync.Position

    static let cluster: UInt64 = 0xC1
    static let otherCluster: UInt64 = 0xC2

    /// The mirror after range number `range` (the `resyncs`-th to fill it), at `revision`.
    static func at(_ revision: Int64, resyncs: Int = 1, range: Int? = nil, cluster: UInt64 = cluster) -> Position {
        Position(revision: revision, clusterID: cluster, resyncs: resyncs, range: range ?? resyncs)
    }

    static let batch = [EtcdMirror.Change(key: "theme", old: "light", new: "dark")]

    @Test func beforeTheFirstRangeTheCachedValuesStayAndABatchAsksForAReload() {
        var sync = FleetSync()
        #expect(sync.cacheLoaded() == 1)
        #expect(sync.replacement(at: Position(revision: 0, clusterID: 0, resyncs: 0, range: 0)) == nil)
        #expect(sync.watchBatch(Self.batch, revision: 3, at: Self.at(3)) == .reload)
        #expect(sync.installedRevision == nil)
    }

    @Test func aRangeIsOneReplacementAndTheSameMirrorIsNoSecond() {
        var sync = FleetSync()
        #expect(sync.range() == .reload)
        #expect(sync.replacement(at: Self.at(5)) == 1)
        #expect(sync.installedRevision == 5)
        // A second reload request for the same range (two news of it) hands nothing again.
        #expect(sync.replacement(at: Self.at(5)) == nil)
    }

    @Test func batchesOnTopOfTheInstalledRangeGoUpAsTheyAreWithTheirVersion() {
        var sync = FleetSync()
        _ = sync.replacement(at: Self.at(5))
        #expect(
            sync.watchBatch(Self.batch, revision: 6, at: Self.at(6))
                == .changes([.init(key: "theme", value: "dark")], version: 2))
        let removal = [EtcdMirror.Change(key: "gone", old: 1, new: nil)]
        #expect(
            sync.watchBatch(removal, revision: 7, at: Self.at(7))
                == .changes([.init(key: "gone", value: nil)], version: 3))
        // After changes, the store may have dropped one (busy): a reload hands the mirror whole.
        #expect(sync.installedRevision == nil)
        #expect(sync.replacement(at: Self.at(7)) == 4)
    }

    @Test func aBatchAfterANewRangeThatTheStoreHasNotReloadedAsksForAReload() {
        var sync = FleetSync()
        _ = sync.replacement(at: Self.at(5))
        // The watch ended; a second range filled the mirror; its watch's first batch comes before
        // the store reloaded: per-key changes on the old base would miss the range's changes.
        #expect(sync.watchBatch(Self.batch, revision: 9, at: Self.at(9, resyncs: 2)) == .reload)
        #expect(sync.replacement(at: Self.at(9, resyncs: 2)) == 2)
        #expect(
            sync.watchBatch(Self.batch, revision: 10, at: Self.at(10, resyncs: 2))
                == .changes([.init(key: "theme", value: "dark")], version: 3))
    }

    @Test func anotherClustersRangeReplacesEvenAtTheSameRevision() {
        var sync = FleetSync()
        _ = sync.replacement(at: Self.at(5))
        #expect(sync.replacement(at: Self.at(5, resyncs: 2, cluster: Self.otherCluster)) == 2)
        #expect(sync.watchBatch(Self.batch, revision: 6, at: Self.at(6, resyncs: 1)) == .reload)
    }

    @Test func newsBehindThisProcesssOwnCommitIsHeldBackAndTheNextAsksForAReload() {
        var sync = FleetSync()
        _ = sync.replacement(at: Self.at(5))
        // This process committed at 8; the watch has not brought it yet (mirror at 6).
        #expect(sync.committed(revision: 8, at: Self.at(6), rangesSent: 1) == 2)
        // Another writer's change at 7, before the commit: installing it would take back the
        // values reads show (the commit's own), so it is held back.
        #expect(sync.watchBatch(Self.batch, revision: 7, at: Self.at(7)) == .nothing)
        #expect(sync.replacement(at: Self.at(7)) == nil)
        // The commit's events: no base any more, so the whole mirror, once it has them.
        #expect(sync.watchBatch(Self.batch, revision: 8, at: Self.at(8)) == .reload)
        #expect(sync.replacement(at: Self.at(8)) == 3)
        #expect(
            sync.watchBatch(Self.batch, revision: 9, at: Self.at(9))
                == .changes([.init(key: "theme", value: "dark")], version: 4))
    }

    @Test func theCommitsOwnEchoIsNotBehindIt() {
        var sync = FleetSync()
        _ = sync.replacement(at: Self.at(5))
        _ = sync.committed(revision: 8, at: Self.at(5), rangesSent: 1)
        // The store takes the echo (it holds these values already and delivers nothing).
        #expect(
            sync.watchBatch(Self.batch, revision: 8, at: Self.at(8))
                == .changes([.init(key: "theme", value: "dark")], version: 3))
    }

    @Test func aRangeSentBeforeTheAcknowledgementThatAnswersLateIsBehindTheCommit() {
        var sync = FleetSync()
        _ = sync.replacement(at: Self.at(5))
        // Range 2 was sent, then etcd acknowledged the commit at 8; range 2 answers late, at 7.
        _ = sync.committed(revision: 8, at: Self.at(5), rangesSent: 2)
        #expect(sync.replacement(at: Self.at(7, resyncs: 2, range: 2)) == nil)
        #expect(sync.isBehindOwnCommit(revision: 7, at: Self.at(7, resyncs: 2, range: 2)))
    }

    @Test func aRangeSentAfterTheAcknowledgementIsEtcdsWordEvenBelowTheCommit() {
        var sync = FleetSync()
        _ = sync.replacement(at: Self.at(5))
        _ = sync.committed(revision: 8, at: Self.at(5), rangesSent: 1)
        // etcd restored from a snapshot: range 2, sent after the acknowledgement, is at 4.
        #expect(!sync.isBehindOwnCommit(revision: 4, at: Self.at(4, resyncs: 2, range: 2)))
        #expect(sync.replacement(at: Self.at(4, resyncs: 2, range: 2)) == 3)
    }

    @Test func aCommitBeforeTheFirstRangeBelongsWithThatRangesEtcd() {
        var sync = FleetSync()
        // Written from the cache's values before any range: the mirror has no cluster yet.
        _ = sync.committed(revision: 8, at: Position(revision: 0, clusterID: 0, resyncs: 0, range: 0), rangesSent: 1)
        #expect(sync.replacement(at: Self.at(7)) == nil)
        #expect(sync.replacement(at: Self.at(8)) == 2)
    }

    @Test func aCommitOnAnotherClusterHoldsNothingBack() {
        var sync = FleetSync()
        _ = sync.replacement(at: Self.at(5))
        _ = sync.committed(revision: 8, at: Self.at(5), rangesSent: 1)
        // The mirror's range 1 is from another cluster (etcd replaced under the same address).
        #expect(!sync.isBehindOwnCommit(revision: 3, at: Self.at(3, cluster: Self.otherCluster)))
    }
}
