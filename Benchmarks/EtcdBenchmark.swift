import Foundation
import LiveDefaults
import LiveDefaultsPropertyList
import Synchronization

/// The etcd rows: a remote suite against a raw watch on the same etcd member, in the same run.
/// The benchmark starts its own member on loopback (a scratch data directory, free ports) and stops
/// it by its PID; without etcd-server the rows are skipped with a note saying so.
struct EtcdBenchmark {
    let options: BenchmarkOptions
    let workspace: Workspace
    let member: EtcdMember

    /// Starts the shared member, or says why the etcd rows cannot run.
    static func start(options: BenchmarkOptions, workspace: Workspace) -> Result<
        EtcdBenchmark, RawEtcdConnection.Failure
    > {
        guard EtcdMember.binary != nil else {
            return .failure(
                .init("etcd-server is not installed (apt-get install etcd-server, or scripts/setup.sh)"))
        }
        do {
            // TLS beside plain HTTP when openssl can make a certificate: the scale rows run over both
            // (docs/performance.md, "Fleet suites at scale"); without it those rows say why.
            let certificates = try? BenchCertificates(in: workspace.directory)
            let member = try EtcdMember(in: workspace.directory, name: "shared", certificates: certificates)
            try member.start()
            return .success(EtcdBenchmark(options: options, workspace: workspace, member: member))
        } catch let failure as RawEtcdConnection.Failure {
            return .failure(failure)
        } catch {
            return .failure(.init("\(error)"))
        }
    }

    func stop() { member.stop() }

    /// A value as the remote suite stores it (an XML property list), so both sides carry the same bytes.
    static func encoded(_ value: Int) -> Data {
        (try? PropertyListCodec.encode(.integer(Int64(value)), format: .xml)) ?? Data()
    }

    // MARK: Put → observer callback

    /// Every put reaches both watchers: the remote suite's observer and a raw watch of the same
    /// prefix on the same member, each on a connection of its own. A put's latency is measured on
    /// both sides from the same start, so a stall of the machine or of etcd hits both alike; the
    /// next put follows once both saw it, then `spacing` milliseconds. 1,000 puts, so that a p99 is
    /// ten samples, not three. With `LIVEDEFAULTS_BENCH_ETCD_SAMPLES=<file>`, each put's two
    /// latencies (nanoseconds, the remote suite's first) are written there, one line each.
    func measureLatency(into report: inout Report) {
        let count = options.quick ? 20 : 1_000
        let spacing: UInt32 = 10
        let fleetName = "bench.etcd.latency"
        let oursArrivals = Arrivals()
        let rawArrivals = Arrivals()
        let fleet: BenchFleet
        let connection: RawEtcdConnection
        let rawWatch: RawEtcd.Watch
        do {
            connection = try RawEtcdConnection(port: member.clientPort)
            fleet = try BenchFleet(endpoint: member.endpoint, suite: fleetName, cache: workspace.scratch())
            rawWatch = try RawEtcd.Watch(port: member.clientPort, prefix: BenchFleet.prefix(fleetName)) { values, now in
                for data in values {
                    if case .integer(let value)? = try? PropertyListCodec.decode(data).value {
                        rawArrivals.record(Int(value), now)
                    }
                }
            }
        } catch {
            report.notes.append("etcd latency: could not start: \(error)")
            return
        }
        let token = fleet.defaults.observe("stamp") { change in
            let now = monotonicNanoseconds()
            if case .integer(let value)? = change.newValue { oursArrivals.record(Int(value), now) }
        }
        defer {
            token.cancel()
            rawWatch.stop()
        }
        guard fleet.waitUntilLive() else {
            report.notes.append("etcd latency: the remote suite did not come live within 10 s")
            return
        }
        var ours: [Double] = []
        var raw: [Double] = []
        var lost = (ours: 0, raw: 0)
        var pairs: [String] = []
        let fleetKey = RawEtcd.base64(BenchFleet.prefix(fleetName) + "stamp")
        for index in 1...count {
            let start = monotonicNanoseconds()
            do {
                _ = try connection.post(
                    "/v3/kv/put", ["key": fleetKey, "value": RawEtcd.base64(Self.encoded(index))])
            } catch {
                report.notes.append("etcd latency: a put failed: \(error)")
                return
            }
            let oursEnd = oursArrivals.wait(for: index, within: 5)
            let rawEnd = rawArrivals.wait(for: index, within: 5)
            if let oursEnd { ours.append(Double(oursEnd - start)) } else { lost.ours += 1 }
            if let rawEnd { raw.append(Double(rawEnd - start)) } else { lost.raw += 1 }
            if let oursEnd, let rawEnd { pairs.append("\(oursEnd - start) \(rawEnd - start)") }
            usleep(spacing * 1000)  // pacing the puts, not synchronisation
        }
        guard !ours.isEmpty, !raw.isEmpty else {
            report.notes.append("etcd latency: no put reached its watcher")
            return
        }
        let oursP99 = percentile(ours, 0.99)
        let rawP99 = percentile(raw, 0.99)
        report.add(
            "etcd",
            "put → observer callback, \(spacing) ms apart: p50 (\(ours.count) puts, each seen by both; limit: raw watch)",
            percentile(ours, 0.5), limit: percentile(raw, 0.5))
        report.add(
            "etcd", "put → observer callback: p99", oursP99, limit: rawP99, target: "≤1.5× the raw watch",
            met: oursP99 / rawP99 <= 1.5)
        report.add("etcd", "put → observer callback: max", percentile(ours, 1), limit: percentile(raw, 1))
        if lost.ours > 0 || lost.raw > 0 {
            report.notes.append(
                "etcd latency: puts not seen within 5 s: \(lost.ours) by the remote suite, \(lost.raw) by the raw watch"
            )
        }
        if let path = ProcessInfo.processInfo.environment["LIVEDEFAULTS_BENCH_ETCD_SAMPLES"] {
            // Per put seen by both: the remote suite's latency and the raw watch's, in nanoseconds.
            try? Data(pairs.map { $0 + "\n" }.joined().utf8).write(to: URL(fileURLWithPath: path))
        }
    }

    // MARK: Cold start

    /// A fresh process opens the remote suite (no cache on disk) and reads one key; against a
    /// fresh process that ranges the prefix over a raw socket and decodes every value.
    func measureColdStart(into report: inout Report) {
        let rounds = options.quick ? 3 : 9
        let connection: RawEtcdConnection
        do { connection = try RawEtcdConnection(port: member.clientPort) } catch {
            report.notes.append("etcd cold start: \(error)")
            return
        }
        for size in options.quick ? [1_000] : [1_000, 10_000] {
            let suite = "bench.etcd.cold.\(size)"
            let prefix = BenchFleet.prefix(suite)
            let values = Workspace.sampleDictionary(keys: size)
            do {
                try RawEtcd.putAll(
                    values.map { (prefix + $0.key, try PropertyListCodec.encode($0.value, format: .xml)) },
                    through: connection)
            } catch {
                report.notes.append("etcd cold start: could not fill \(size) keys: \(error)")
                return
            }
            var ours: [Double] = []
            var raw: [Double] = []
            for _ in 0..<rounds {
                if let time = ChildProcess.run(
                    ["--child", "etcd-cold", "livedefaults", String(member.clientPort), suite],
                    environment: ["XDG_CACHE_HOME": workspace.scratch().path])
                {
                    ours.append(time)
                }
                if let time = ChildProcess.run(
                    ["--child", "etcd-cold", "raw", String(member.clientPort), suite],
                    environment: ["XDG_CACHE_HOME": workspace.scratch().path])
                {
                    raw.append(time)
                }
            }
            guard !ours.isEmpty, !raw.isEmpty else {
                report.notes.append("etcd cold start: the measuring process failed (\(size) keys)")
                continue
            }
            report.add(
                "etcd",
                "cold start of a fresh process: open the remote suite, read a key, \(grouped(size)) keys"
                    + " (limit: raw range + decode)", percentile(ours, 0.5), limit: percentile(raw, 0.5))
        }
    }

    // MARK: Fan-out to processes

    /// `count` processes watch one remote suite (and as many watch one prefix raw); a put → the
    /// last of them has it. Each process stamps the arrival with the monotonic clock, shared by
    /// the processes of this machine.
    func measureFanOut(into report: inout Report) {
        let count = options.quick ? 5 : 100
        let puts = options.quick ? 5 : 30
        let fleetName = "bench.etcd.fanout"
        let rawPrefix = "/bench/raw/fanout/"
        let connection: RawEtcdConnection
        do { connection = try RawEtcdConnection(port: member.clientPort) } catch {
            report.notes.append("etcd fan-out: \(error)")
            return
        }
        var groups: [String: WatcherGroup] = [:]
        defer { groups.values.forEach { $0.stop() } }
        for (side, target) in [("livedefaults", fleetName), ("raw", rawPrefix)] {
            do {
                let group = try WatcherGroup(
                    count: count, arguments: ["--child", "etcd-watch", side, String(member.clientPort), target],
                    workspace: workspace)
                groups[side] = group
                guard group.waitUntilReady(within: 60) else {
                    report.notes.append("etcd fan-out: the \(side) processes did not all watch within 60 s")
                    return
                }
            } catch {
                report.notes.append("etcd fan-out: \(error)")
                return
            }
        }
        var samples: [String: [Double]] = [:]
        for index in 1...(2 * puts) {
            let side = index % 2 == 0 ? "livedefaults" : "raw"
            let key = side == "raw" ? rawPrefix + "stamp" : BenchFleet.prefix(fleetName) + "stamp"
            let start = monotonicNanoseconds()
            do {
                _ = try connection.post(
                    "/v3/kv/put", ["key": RawEtcd.base64(key), "value": RawEtcd.base64(Self.encoded(index))])
            } catch {
                report.notes.append("etcd fan-out: a put failed: \(error)")
                return
            }
            if let last = groups[side]?.lastArrival(of: index, within: 10) {
                samples[side, default: []].append(Double(last - start))
            } else {
                report.notes.append("etcd fan-out: not every \(side) process saw put \(index) within 10 s")
            }
            usleep(50_000)  // pacing the puts, not synchronisation
        }
        guard let ours = samples["livedefaults"], let raw = samples["raw"] else { return }
        report.add(
            "etcd", "fan-out, put → all \(count) processes have it: p50 (\(ours.count) puts; limit: raw watches)",
            percentile(ours, 0.5), limit: percentile(raw, 0.5))
        report.add("etcd", "fan-out to \(count) processes: p99", percentile(ours, 0.99), limit: percentile(raw, 0.99))
        if let oursCPU = groups["livedefaults"]?.cpuPerValue(), let rawCPU = groups["raw"]?.cpuPerValue() {
            report.add("etcd", "fan-out: CPU time per change in each watching process (median)", oursCPU, limit: rawCPU)
        }
    }

    // MARK: Resume after the member is killed

    /// kill -9 of a member of its own, restarted at once on the same data; a writer puts every
    /// 10 ms from the moment it answers; the time from the kill to the first change the remote
    /// suite delivers again (limit: the kill to etcd answering `/health` again). Rounds are 2 s
    /// apart.
    func measureResume(into report: inout Report) {
        let rounds = options.quick ? 1 : 5
        let member: EtcdMember
        let fleet: BenchFleet
        do {
            member = try EtcdMember(in: workspace.directory, name: "resume")
            try member.start()
            fleet = try BenchFleet(endpoint: member.endpoint, suite: "bench.etcd.resume", cache: workspace.scratch())
        } catch {
            report.notes.append("etcd resume: could not start: \(error)")
            return
        }
        defer { member.stop() }
        // The suite reports etcd out of reach once per outage: counted here instead of printed.
        let reports = SharedMutex<[String]>([])
        DefaultsErrorReporting.setHandler { error in reports.mutex.withLock { $0.append("\(error.code)") } }
        defer { DefaultsErrorReporting.setHandler(nil) }
        let latest = SharedMutex<Int>(0)
        let token = fleet.defaults.observe("stamp") { change in
            if case .integer(let value)? = change.newValue { latest.mutex.withLock { $0 = Int(value) } }
        }
        defer { token.cancel() }
        guard fleet.waitUntilLive() else {
            report.notes.append("etcd resume: the remote suite did not come live within 10 s")
            return
        }
        // The suite's states as it reports them, for the slowest round's note.
        let timeline = SharedMutex<[(time: UInt64, state: String)]>([])
        let updates = fleet.connection.stateUpdates()
        let follower = Task {
            for await state in updates {
                let now = monotonicNanoseconds()
                let text: String
                switch state {
                case .connecting: text = "connecting"
                case .live(let revision): text = "live at revision \(revision)"
                case .stale: text = "stale"
                case .offline: text = "offline"
                }
                timeline.mutex.withLock { $0.append((now, text)) }
            }
        }
        defer { follower.cancel() }
        let key = RawEtcd.base64(BenchFleet.prefix("bench.etcd.resume") + "stamp")
        var ours: [Double] = []
        var restart: [Double] = []
        var slowest = ""
        var counter = 0
        for round in 0..<rounds {
            // Each kill comes 2 s after the suite resumed: the follower waits longer after watches
            // that keep ending within a second (a member in a crash loop), which is not this case.
            if round > 0 { usleep(2_000_000) }
            let killed = monotonicNanoseconds()
            member.kill9()
            do { try member.start() } catch {
                report.notes.append("etcd resume: the member did not restart: \(error)")
                return
            }
            restart.append(Double(monotonicNanoseconds() - killed))
            let firstAfter = counter + 1
            let deadline = Date().addingTimeInterval(60)
            var delivered: UInt64? = nil
            var connection = try? RawEtcdConnection(port: member.clientPort)
            while Date() < deadline {
                counter += 1
                if connection == nil { connection = try? RawEtcdConnection(port: member.clientPort) }
                do {
                    _ = try connection?.post(
                        "/v3/kv/put", ["key": key, "value": RawEtcd.base64(Self.encoded(counter))])
                } catch {
                    connection = nil
                }
                usleep(10_000)  // the writer's pace; the check below reads what the observer saw
                if latest.mutex.withLock({ $0 }) >= firstAfter {
                    delivered = monotonicNanoseconds()
                    break
                }
            }
            guard let delivered else {
                report.notes.append("etcd resume: no change was delivered within 60 s of the restart")
                return
            }
            ours.append(Double(delivered - killed))
            if Double(delivered - killed) == ours.max() {
                func seconds(_ time: UInt64) -> String { String(format: "+%.2f s", Double(time - killed) / 1e9) }
                let states = timeline.mutex.withLock { $0 }.filter { $0.time >= killed && $0.time <= delivered }
                slowest =
                    "etcd resume, the slowest round: etcd healthy \(seconds(killed + UInt64(restart.last ?? 0))), "
                    + "the suite \(states.map { "\($0.state) \(seconds($0.time))" }.joined(separator: ", ")), "
                    + "the change delivered \(seconds(delivered)) after the kill"
            }
        }
        if rounds > 1 { report.notes.append(slowest) }
        let reported = reports.mutex.withLock { $0 }
        // etcd binds its client port early in a restart, so a range may wait for it instead of failing:
        // then no outage is seen, and none is reported.
        report.notes.append(
            "etcd resume: \(rounds) kills; the remote suite reported "
                + (reported.isEmpty
                    ? "no problem" : Set(reported).sorted().joined(separator: ", ") + " \(reported.count) times"))
        report.add(
            "etcd", "resume after kill -9 and restart: kill → first change delivered (limit: kill → etcd healthy)",
            percentile(ours, 0.5), limit: percentile(restart, 0.5))
        if rounds > 1 {
            report.add(
                "etcd", "resume after kill -9: slowest of \(rounds)", percentile(ours, 1), limit: percentile(restart, 1)
            )
        }
    }
}

/// The arrival time of each value an observer saw, waited for from the measuring thread.
final class Arrivals: Sendable {
    private let times = Mutex<[Int: UInt64]>([:])
    private let arrived = DispatchSemaphore(value: 0)

    /// The first arrival of `value` counts.
    func record(_ value: Int, _ time: UInt64) {
        let fresh = times.withLock { times in
            guard times[value] == nil else { return false }
            times[value] = time
            return true
        }
        if fresh { arrived.signal() }
    }

    /// When `value` arrived, waiting up to `seconds` for it; nil if it did not.
    func wait(for value: Int, within seconds: Double) -> UInt64? {
        let deadline = DispatchTime.now() + seconds
        while true {
            if let time = times.withLock({ $0[value] }) { return time }
            if arrived.wait(timeout: deadline) == .timedOut { return nil }
        }
    }
}

/// A `Mutex` that closures can share.
final class SharedMutex<Value: Sendable>: Sendable {
    let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
}

/// 10000 as "10,000".
func grouped(_ number: Int) -> String {
    var digits = String(number)
    var index = digits.endIndex
    while digits.distance(from: digits.startIndex, to: index) > 3 {
        index = digits.index(index, offsetBy: -3)
        digits.insert(",", at: index)
    }
    return digits
}

/// Processes that each watch one suite or prefix (`--child etcd-watch …`) and report each value
/// they see with its arrival time on standard output, one line each.
final class WatcherGroup: @unchecked Sendable {
    // Safe as Sendable: `arrivals` and `cpu` are guarded by their Mutexes; the rest is set in init.
    private let processes: [Process]
    private let inputs: [Pipe]
    /// Per value, the arrival time of each process that reported it.
    private let arrivals = ArrivalBoard()
    /// Per process, the CPU time it had used at each value it reported.
    private let cpu = SharedMutex<[Int: [Int: UInt64]]>([:])
    private let ready = DispatchSemaphore(value: 0)
    /// The numbers of each `stats …` line a process wrote (etcd-scale children), by process.
    private let statistics = SharedMutex<[Int: [Int]]>([:])

    /// The processes' IDs.
    var processIdentifiers: [Int32] { processes.map(\.processIdentifier) }

    /// The numbers of the `stats` line of each process that wrote one.
    var stats: [[Int]] { statistics.mutex.withLock { $0 }.sorted { $0.key < $1.key }.map(\.value) }

    /// - Parameters:
    ///   - count: How many processes.
    ///   - arguments: Their arguments (`--child …`).
    ///   - workspace: Where their scratch directories go.
    ///   - environment: More environment for the processes (LIVEDEFAULTS_BENCH_CA).
    /// - Throws: When a process cannot be started.
    init(count: Int, arguments: [String], workspace: Workspace, environment: [String: String] = [:]) throws {
        var processes: [Process] = []
        var inputs: [Pipe] = []
        for index in 0..<count {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
            process.arguments = arguments
            process.environment = ProcessInfo.processInfo.environment.merging(
                [
                    "XDG_CACHE_HOME": workspace.scratch().path
                ].merging(environment) { _, new in new }
            ) { _, new in new }
            let input = Pipe()
            let output = Pipe()
            process.standardInput = input
            process.standardOutput = output
            try process.run()
            processes.append(process)
            inputs.append(input)
            let handle = output.fileHandleForReading
            Thread.detachNewThread { [arrivals, cpu, ready, statistics] in
                var buffer = Data()
                while true {
                    let data = handle.availableData
                    if data.isEmpty { return }
                    buffer.append(data)
                    while let newline = buffer.firstIndex(of: 0x0A) {
                        let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                        buffer.removeSubrange(buffer.startIndex...newline)
                        if line == "ready" {
                            ready.signal()
                            continue
                        }
                        if line.hasPrefix("stats ") {
                            let numbers = line.split(separator: " ").dropFirst().compactMap { Int($0) }
                            statistics.mutex.withLock { $0[index] = numbers }
                            continue
                        }
                        let parts = line.split(separator: " ")
                        guard parts.count == 3, let value = Int(parts[0]), let time = UInt64(parts[1]),
                            let used = UInt64(parts[2])
                        else { continue }
                        cpu.mutex.withLock { $0[index, default: [:]][value] = used }
                        arrivals.record(value, from: index, at: time)
                    }
                }
            }
        }
        self.processes = processes
        self.inputs = inputs
    }

    /// Waits until every process watches; false after `seconds`.
    func waitUntilReady(within seconds: Double) -> Bool {
        let deadline = DispatchTime.now() + seconds
        return processes.allSatisfy { _ in ready.wait(timeout: deadline) == .success }
    }

    /// The latest arrival of `value` once every process reported it, or nil after `seconds`.
    func lastArrival(of value: Int, within seconds: Double) -> UInt64? {
        arrivals.lastArrival(of: value, from: processes.count, within: seconds)
    }

    /// The median over the processes of the CPU time each used per value it reported, from its
    /// first value to its last (what it did between them included: progress notifications, timers).
    func cpuPerValue() -> Double? {
        let perProcess = cpu.mutex.withLock { $0 }.values.compactMap { used -> Double? in
            let ordered = used.sorted { $0.key < $1.key }.map(\.value)
            guard let first = ordered.first, let last = ordered.last, ordered.count > 1 else { return nil }
            return Double(last - first) / Double(ordered.count - 1)
        }
        return perProcess.isEmpty ? nil : percentile(perProcess, 0.5)
    }

    /// Closes each process's standard input (it exits then) and waits for it.
    func stop() {
        for input in inputs { try? input.fileHandleForWriting.close() }
        for process in processes { process.waitUntilExit() }
    }
}

/// When each watcher (by index) first had each value, for ``WatcherGroup`` and ``EtcdctlWatchers``:
/// the readers record, and the measuring thread waits until every watcher has a value.
final class ArrivalBoard: Sendable {
    private let arrivals = SharedMutex<[Int: [Int: UInt64]]>([:])
    private let changed = DispatchSemaphore(value: 0)

    /// Records that watcher `index` had `value` at `time` (monotonic nanoseconds).
    func record(_ value: Int, from index: Int, at time: UInt64) {
        arrivals.mutex.withLock { $0[value, default: [:]][index] = time }
        changed.signal()
    }

    /// The latest arrival of `value` once `watchers` watchers had it, or nil after `seconds`.
    func lastArrival(of value: Int, from watchers: Int, within seconds: Double) -> UInt64? {
        let deadline = DispatchTime.now() + seconds
        while true {
            if let times = arrivals.mutex.withLock({ $0[value] }), times.count == watchers {
                return times.values.max()
            }
            if changed.wait(timeout: deadline) == .timedOut { return nil }
        }
    }
}
