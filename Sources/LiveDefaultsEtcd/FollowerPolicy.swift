import Foundation

/// The follower's policy as a value (docs/design.md, "Fleet settings: failures of a cluster"):
/// how long to pause after a failed range (the back-off) or after a watch ended (the reconnection
/// jitter), when to check the member of a silent watch (the stall probe), and how long the next
/// range may take. ``EtcdSuiteFollower`` keeps one per run and does what it says; the times and
/// the random numbers come in, so tests run it on a clock of their own (FollowerPolicyTests).
/// Which member comes next is the client's ``EndpointRotation``.
struct FollowerPolicy: Sendable, Equatable {
    /// The longest pause, after failures or after watches that keep ending at once.
    static let longestPause: TimeInterval = 30
    /// The first pause after a failed range; it doubles with each failure.
    static let firstFailurePause: TimeInterval = 0.05
    /// A watch that ends sooner than this after it opened counts as ending at once.
    static let quickEnd: Duration = .seconds(1)

    /// What to do after a watch ended.
    enum AfterWatch: Sendable, Equatable {
        /// Range again at once (the member went silent: the values may already be behind).
        case rangeAtOnce
        /// Range again after this pause.
        case pause(TimeInterval)
    }

    /// The most the follower waits, at random, before it ranges again after a watch ended.
    let reconnectJitter: TimeInterval
    /// How often, and how patiently, the member of an open watch is checked; nil for no check.
    let stallCheck: EtcdSuiteFollower.StallCheck?
    /// The back-off after failed ranges: 0 after a range that answered.
    private(set) var failureDelay: TimeInterval = 0
    /// How many watches in a row ended within ``quickEnd`` of opening.
    private(set) var quickEnds = 0
    /// How long the next range may take: the check's timeout after a stall (each member gets that
    /// long, so that a second frozen member does not hold the follower for a whole request
    /// timeout), nil for the request timeout.
    private(set) var rangeTimeout: TimeInterval?

    init(reconnectJitter: TimeInterval, stallCheck: EtcdSuiteFollower.StallCheck?) {
        self.reconnectJitter = max(0, reconnectJitter)
        self.stallCheck = stallCheck
    }

    /// A range answered: the back-off is over, and the next range has the request timeout.
    mutating func rangeSucceeded() {
        failureDelay = 0
        rangeTimeout = nil
    }

    /// A range failed: the pause before the next one, `random` (0...1) of the way from half the
    /// back-off to all of it. The back-off doubles from 50 ms to 30 s, so that a fleet does not range
    /// again all at once after an etcd restart. A member that answered nothing keeps the short range
    /// timeout until a range succeeds.
    mutating func rangeFailed(random: Double) -> TimeInterval {
        failureDelay = min(max(failureDelay * 2, Self.firstFailurePause), Self.longestPause)
        return failureDelay / 2 + min(max(random, 0), 1) * failureDelay / 2
    }

    /// The watch ended after `lasted`; `stalled` when its member failed a check. After a stall,
    /// range again at once, giving each member the check's timeout; otherwise pause `random` (0...1)
    /// of a ceiling that is the reconnection jitter, doubled for each watch in a row that ended at
    /// once (up to 30 s).
    mutating func watchEnded(lasted: Duration, stalled: Bool, random: Double) -> AfterWatch {
        if stalled, let stallCheck {
            rangeTimeout = stallCheck.timeout
            quickEnds = 0
            return .rangeAtOnce
        }
        quickEnds = lasted < Self.quickEnd ? quickEnds + 1 : 0
        let ceiling = min(Self.longestPause, reconnectJitter * Double(1 << min(quickEnds, 16)))
        return .pause(min(max(random, 0), 1) * ceiling)
    }

    /// When the member of an open watch, last heard from at `lastHeard` (a message, or an
    /// answered check), is to be checked; nil when there are no checks. A watch message counts as
    /// an answer, so a busy watch costs no check.
    func checkDue(lastHeard: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        stallCheck.map { lastHeard + .milliseconds(Int64($0.interval * 1000)) }
    }
}
