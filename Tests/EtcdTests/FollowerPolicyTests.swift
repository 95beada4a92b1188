import Foundation
import Testing

@testable import LiveDefaultsEtcd
@testable import LiveDefaultsEtcdClient

/// The follower's policy, without etcd and on a clock of the test's own: the back-off after failed
/// ranges, the reconnection jitter after watches end, the stall probe's schedule and timeouts, and
/// which member comes next.
struct FollowerPolicyTests {
    static let check = EtcdSuiteFollower.StallCheck(interval: 2, timeout: 1.5)

    @Test func theBackOffDoublesFromFiftyMillisecondsToThirtySecondsWithinItsJitterAndEndsWithAnAnswer() {
        var policy = FollowerPolicy(reconnectJitter: 0.25, stallCheck: Self.check)
        var ceilings: [TimeInterval] = []
        for _ in 0..<12 {
            // The most (random 1) and the least (random 0, on a copy) of each pause.
            var copy = policy
            let least = copy.rangeFailed(random: 0)
            let most = policy.rangeFailed(random: 1)
            #expect(least == most / 2)
            ceilings.append(most)
        }
        #expect(ceilings.prefix(5) == [0.05, 0.1, 0.2, 0.4, 0.8])
        #expect(ceilings.last == 30)
        #expect(ceilings == ceilings.sorted())
        policy.rangeSucceeded()
        #expect(policy.failureDelay == 0)
        #expect(policy.rangeFailed(random: 1) == 0.05)
    }

    @Test func watchesThatKeepEndingAtOnceWaitLongerAndALastingOneStartsAgain() {
        var policy = FollowerPolicy(reconnectJitter: 0.25, stallCheck: Self.check)
        var pauses: [FollowerPolicy.AfterWatch] = []
        for _ in 0..<10 { pauses.append(policy.watchEnded(lasted: .milliseconds(10), stalled: false, random: 1)) }
        #expect(pauses.prefix(4) == [.pause(0.5), .pause(1), .pause(2), .pause(4)])
        #expect(pauses.last == .pause(30))
        // A watch that lasted: back to the plain jitter, at random within it.
        #expect(policy.watchEnded(lasted: .seconds(5), stalled: false, random: 1) == .pause(0.25))
        #expect(policy.watchEnded(lasted: .seconds(5), stalled: false, random: 0.5) == .pause(0.125))
        #expect(policy.quickEnds == 0)
    }

    @Test func aStalledMemberIsLeftAtOnceAndTheNextRangeHasTheChecksTimeoutUntilOneAnswers() {
        var policy = FollowerPolicy(reconnectJitter: 0.25, stallCheck: Self.check)
        _ = policy.watchEnded(lasted: .milliseconds(10), stalled: false, random: 1)
        #expect(policy.rangeTimeout == nil)
        #expect(policy.watchEnded(lasted: .seconds(30), stalled: true, random: 1) == .rangeAtOnce)
        #expect(policy.rangeTimeout == 1.5)
        #expect(policy.quickEnds == 0)
        // Every member fails the short range: it stays short.
        _ = policy.rangeFailed(random: 0)
        #expect(policy.rangeTimeout == 1.5)
        policy.rangeSucceeded()
        #expect(policy.rangeTimeout == nil)
    }

    @Test func theCheckIsDueAnIntervalAfterTheMemberWasLastHeardFrom() {
        let policy = FollowerPolicy(reconnectJitter: 0.25, stallCheck: Self.check)
        // A clock of the test's own: instants it chooses.
        let start = ContinuousClock.now
        #expect(policy.checkDue(lastHeard: start) == start + .seconds(2))
        // A message 1.5 s later moves the check on.
        #expect(policy.checkDue(lastHeard: start + .milliseconds(1500)) == start + .milliseconds(3500))
        let unchecked = FollowerPolicy(reconnectJitter: 0.25, stallCheck: nil)
        #expect(unchecked.checkDue(lastHeard: start) == nil)
        #expect(unchecked.watchEndedStalledIsNotAtOnce())
    }

    @Test func callsTryTheMemberThatLastAnsweredFirstAndAnEndedWatchMovesOn() {
        var rotation = EndpointRotation(count: 3)
        #expect(rotation.order == [0, 1, 2])
        rotation.answered(2)
        #expect(rotation.order == [2, 0, 1])
        // The watch on member 2 ended: the next range and watch try member 0 first.
        rotation.avoid(2)
        #expect(rotation.order == [0, 1, 2])
        // Avoiding one that is not preferred changes nothing.
        rotation.avoid(2)
        #expect(rotation.preferred == 0)
        var single = EndpointRotation(count: 1)
        single.avoid(0)
        #expect(single.order == [0])
    }
}

extension FollowerPolicy {
    /// Without a stall check, a watch is never left as stalled: its end pauses as any other.
    fileprivate func watchEndedStalledIsNotAtOnce() -> Bool {
        var copy = self
        return copy.watchEnded(lasted: .seconds(5), stalled: true, random: 1) == .pause(reconnectJitter)
    }
}
