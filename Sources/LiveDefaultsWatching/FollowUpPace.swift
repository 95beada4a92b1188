/// Where one watch's follow-ups run — the work its callback leaves for after the call, such as a
/// store's reload and the delivery to its observers (``FileWatcher/runAfterCall(_:)``): on the
/// inotify thread while they are fast, on a Dispatch worker once one is measured slow.
///
/// A pure value, one per watch, kept under ``FollowUps``' lock; the threads time the follow-ups
/// and tell it. A follow-up that takes longer than ``slowFollowUp``, or that the dispatcher finds
/// still running after ``stalledFollowUp`` (``stalled()``), moves its watch to a worker. Back on a
/// worker, the watch returns inline once ``probation`` follow-ups in a row have been fast; each
/// demotion doubles the probation, up to ``longestProbation``, so an observer that is slow now and
/// then settles on the worker rather than stalling the inotify thread again and again
/// (docs/design.md, "Live reload: who calls observers").
struct FollowUpPace: Sendable, Equatable {
    /// A follow-up that took longer than this (nanoseconds) moves its watch to a worker.
    static let slowFollowUp: UInt64 = 1_000_000
    /// A follow-up still running after this long (nanoseconds) has the dispatcher hand the reading
    /// of inotify to a new thread, and moves its watch to a worker.
    static let stalledFollowUp: UInt64 = 10_000_000
    /// How many fast follow-ups in a row bring a watch back inline after its first demotion.
    static let firstProbation = 16
    /// The longest probation: a watch demoted many times tries inline again after this many.
    static let longestProbation = 1024

    /// Whether the watch's follow-ups run on the inotify thread.
    private(set) var runsInline = true
    /// How many fast follow-ups in a row on a worker bring the watch back inline.
    private(set) var probation = firstProbation
    /// Fast follow-ups in a row since the watch was last demoted (or last slow on the worker).
    private(set) var fastRuns = 0
    /// How many times the watch was moved to a worker.
    private(set) var demotions = 0

    /// A follow-up of the watch took `nanoseconds`, inline or on a worker.
    mutating func finished(took nanoseconds: UInt64) {
        guard nanoseconds <= Self.slowFollowUp else {
            if runsInline { demote() } else { fastRuns = 0 }
            return
        }
        guard !runsInline else { return }
        fastRuns += 1
        if fastRuns >= probation {
            runsInline = true
            fastRuns = 0
        }
    }

    /// A follow-up of the watch is still running after ``stalledFollowUp``.
    mutating func stalled() {
        if runsInline { demote() }
    }

    private mutating func demote() {
        if demotions > 0 { probation = min(probation * 2, Self.longestProbation) }
        demotions += 1
        runsInline = false
        fastRuns = 0
    }
}
