import Foundation
import LiveDefaults
import LiveDefaultsEtcd
import Synchronization

extension EtcdBenchmark {
    // MARK: A stalled member

    /// How soon a frozen member (SIGSTOP: a hung VM, a partition) is noticed, with FleetSuite's
    /// default stall check (every 2 s, 2 s to answer):
    /// - a suite on one member of its own: the freeze → the state `.stale`;
    /// - a suite on a 3-member cluster, watching a member that is not the leader: the freeze → the
    ///   first value written after it (through the other two, every 10 ms) delivered to an observer.
    /// Rounds are 1 s apart, each member resumed (SIGCONT) before the next.
    func measureStall(into report: inout Report) {
        let rounds = options.quick ? 1 : 5
        measureStallToStale(rounds: rounds, into: &report)
        measureStallToAnotherMember(rounds: rounds, into: &report)
    }

    private func measureStallToStale(rounds: Int, into report: inout Report) {
        let member: EtcdMember
        let fleet: BenchFleet
        do {
            member = try EtcdMember(in: workspace.directory, name: "stall-one")
            try member.start()
            fleet = try BenchFleet(endpoint: member.endpoint, suite: "bench.etcd.stall", cache: workspace.scratch())
        } catch {
            report.notes.append("etcd stall: could not start: \(error)")
            return
        }
        defer { member.stop() }
        // The suite reports the outage and the recovery: counted, not printed.
        DefaultsErrorReporting.setHandler { _ in }
        defer { DefaultsErrorReporting.setHandler(nil) }
        var times: [Double] = []
        for _ in 0..<rounds {
            guard fleet.waitUntilLive(within: 30) else {
                report.notes.append("etcd stall: the remote suite was not live within 30 s")
                return
            }
            usleep(1_000_000)  // a round starts with the watch open a while, not just opened
            let stale = DispatchSemaphore(value: 0)
            let updates = fleet.connection.stateUpdates()
            let watcher = Task {
                for await state in updates {
                    if case .stale = state {
                        stale.signal()
                        return
                    }
                }
            }
            let frozen = monotonicNanoseconds()
            member.send(SIGSTOP)
            let arrived = stale.wait(timeout: .now() + 60) == .success
            let noticed = monotonicNanoseconds()
            member.send(SIGCONT)
            watcher.cancel()
            guard arrived else {
                report.notes.append("etcd stall: the suite did not go stale within 60 s of its member freezing")
                return
            }
            times.append(Double(noticed - frozen))
        }
        report.add(
            "etcd", "stall, the only member frozen → the suite stale (median of \(rounds))", percentile(times, 0.5),
            target: "≤10 s", met: percentile(times, 0.5) <= 10e9)
        if rounds > 1 {
            report.add(
                "etcd", "stall, the only member frozen → stale: slowest", percentile(times, 1),
                target: "≤10 s", met: percentile(times, 1) <= 10e9)
        }
    }

    private func measureStallToAnotherMember(rounds: Int, into report: inout Report) {
        let members: [EtcdMember]
        do {
            members = try (1...3).map { try EtcdMember(in: workspace.directory, name: "stall-m\($0)") }
            let cluster = members.map { "\($0.name)=\($0.peerURL)" }.joined(separator: ",")
            for member in members { try member.launch(initialCluster: cluster) }
            for member in members { try member.waitUntilHealthy() }
        } catch {
            report.notes.append("etcd stall (cluster): could not start: \(error)")
            return
        }
        defer { for member in members { member.stop() } }
        DefaultsErrorReporting.setHandler { _ in }
        defer { DefaultsErrorReporting.setHandler(nil) }
        var times: [Double] = []
        var counter = 0
        for round in 0..<rounds {
            // A member that is not the leader: the other two keep a majority and write on.
            guard let watched = members.firstIndex(where: { !$0.isLeader() }) else {
                report.notes.append("etcd stall (cluster): no member answered its status")
                return
            }
            let order = [members[watched]] + members.indices.filter { $0 != watched }.map { members[$0] }
            let fleet: BenchFleet
            do {
                fleet = try BenchFleet(
                    endpoints: order.map(\.endpoint), suite: "bench.etcd.stall.\(round)", cache: workspace.scratch())
            } catch {
                report.notes.append("etcd stall (cluster): \(error)")
                return
            }
            let latest = SharedMutex<Int>(0)
            let token = fleet.defaults.observe("stamp") { change in
                if case .integer(let value)? = change.newValue { latest.mutex.withLock { $0 = Int(value) } }
            }
            defer { token.cancel() }
            guard fleet.waitUntilLive(within: 30) else {
                report.notes.append("etcd stall (cluster): the remote suite was not live within 30 s")
                return
            }
            usleep(1_000_000)  // the watch open a while, as in the one-member rows
            let key = RawEtcd.base64(BenchFleet.prefix("bench.etcd.stall.\(round)") + "stamp")
            let frozen = monotonicNanoseconds()
            order[0].send(SIGSTOP)
            defer { order[0].send(SIGCONT) }
            let firstAfter = counter + 1
            let deadline = Date().addingTimeInterval(60)
            var delivered: UInt64?
            var writer = 1
            var connection: RawEtcdConnection?
            while Date() < deadline {
                counter += 1
                if connection == nil { connection = try? RawEtcdConnection(port: order[writer].clientPort, timeout: 2) }
                do {
                    _ = try connection?.post(
                        "/v3/kv/put", ["key": key, "value": RawEtcd.base64(Self.encoded(counter))])
                } catch {
                    connection = nil
                    writer = writer == 1 ? 2 : 1
                }
                usleep(10_000)  // the writer's pace; the check below reads what the observer saw
                if latest.mutex.withLock({ $0 }) >= firstAfter {
                    delivered = monotonicNanoseconds()
                    break
                }
            }
            order[0].send(SIGCONT)
            guard let delivered else {
                report.notes.append("etcd stall (cluster): no value written after the freeze arrived within 60 s")
                return
            }
            times.append(Double(delivered - frozen))
        }
        report.add(
            "etcd", "stall, the watched member of 3 frozen → new values via another (median of \(rounds))",
            percentile(times, 0.5),
            target: "≤10 s", met: percentile(times, 0.5) <= 10e9)
        if rounds > 1 {
            report.add(
                "etcd", "stall, the watched member of 3 frozen → new values: slowest", percentile(times, 1),
                target: "≤10 s", met: percentile(times, 1) <= 10e9)
        }
    }
}
