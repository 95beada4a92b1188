import Testing

@testable import LiveDefaultsWatching

/// Where a watch's follow-ups run (docs/design.md, "Live reload: who calls observers"): inline
/// while fast, on a worker once slow, back inline after a probation that doubles per demotion.
@Suite struct FollowUpPaceTests {
    private let fast = FollowUpPace.slowFollowUp
    private let slow = FollowUpPace.slowFollowUp + 1

    @Test func fastFollowUpsStayInline() {
        var pace = FollowUpPace()
        for _ in 0..<1000 { pace.finished(took: fast) }
        #expect(pace.runsInline)
        #expect(pace.demotions == 0)
    }

    @Test func oneSlowFollowUpMovesTheWatchToAWorkerUntilItsProbationIsServed() {
        var pace = FollowUpPace()
        pace.finished(took: slow)
        #expect(!pace.runsInline)
        for _ in 1..<FollowUpPace.firstProbation { pace.finished(took: fast) }
        #expect(!pace.runsInline, "back inline before the probation was served")
        // A slow one on the worker starts the count again.
        pace.finished(took: slow)
        for _ in 0..<FollowUpPace.firstProbation - 1 { pace.finished(took: fast) }
        #expect(!pace.runsInline)
        pace.finished(took: fast)
        #expect(pace.runsInline)
    }

    @Test func eachDemotionDoublesTheProbationUpToItsLongest() {
        var pace = FollowUpPace()
        var expected = FollowUpPace.firstProbation
        for round in 0..<12 {
            pace.stalled()
            #expect(!pace.runsInline)
            #expect(pace.probation == expected, "round \(round)")
            for _ in 0..<expected { pace.finished(took: fast) }
            #expect(pace.runsInline)
            expected = min(expected * 2, FollowUpPace.longestProbation)
        }
        #expect(pace.probation == FollowUpPace.longestProbation)
    }

    @Test func aStallOnAWorkerChangesNothing() {
        var pace = FollowUpPace()
        pace.finished(took: slow)
        let before = pace
        pace.stalled()
        #expect(pace == before)
    }
}
