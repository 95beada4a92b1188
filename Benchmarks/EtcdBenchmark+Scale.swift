import Foundation
import LiveDefaultsPropertyList

/// The scale rows (docs/performance.md, "Fleet suites at scale"):
///
/// - N fleet suites in one process (1, 10, 100; 1 and 10 with `--quick`): its threads and sockets
///   (more than before it opened any), its TCP connections, resident memory, and CPU time per
///   change delivered, each N in a fresh process (`--child etcd-scale`); over `http://`, then over
///   `https://` (the shared member serves both);
/// - 1,000 watchers: a 3-member cluster on loopback, 10 processes × 100 fleet suites, every change
///   (one transaction that sets the 100 suites' "stamp") delivered to every watcher; put → the
///   last watcher has it, p50 and p99, and CPU time per change per watcher, against raw
///   `etcdctl watch` processes on the same cluster in the same run, and etcd's own CPU per change.
///   `--quick` runs 2 processes × 5 suites against 5 raw watchers on the shared member.
extension EtcdBenchmark {
    func measureScale(into report: inout Report) {
        let connection: RawEtcdConnection
        do { connection = try RawEtcdConnection(port: member.clientPort) } catch {
            report.notes.append("etcd scale: \(error)")
            return
        }
        // Over plain HTTP (etcd's JSON gateway is HTTP/1.1 there: a connection per watch), then over
        // TLS (HTTP/2 by ALPN: every watch on one connection) — docs/fleet.md, "Limits".
        var schemes: [(endpoint: String, environment: [String: String], label: String)] = [
            (member.endpoint, [:], "")
        ]
        if let secure = member.secureEndpoint, let certificates = member.certificates {
            schemes.append((secure, ["LIVEDEFAULTS_BENCH_CA": certificates.authority], " over https"))
        } else {
            report.notes.append(
                "etcd scale over https: the member serves no TLS (openssl could not make a certificate)")
        }
        for scheme in schemes {
            for suites in options.quick ? [1, 10] : [1, 10, 100] {
                guard
                    measureScale(
                        suites: suites, endpoint: scheme.endpoint, environment: scheme.environment,
                        label: scheme.label, through: connection, into: &report)
                else { return }
            }
        }
    }

    /// One scale row set: `suites` fleet suites in a fresh process on `endpoint`; false when it
    /// could not be measured (a note says why).
    private func measureScale(
        suites: Int, endpoint: String, environment: [String: String], label: String,
        through connection: RawEtcdConnection, into report: inout Report
    ) -> Bool {
        let base = "bench.etcd.scale\(suites)\(label.isEmpty ? "" : "s")"
        let group: WatcherGroup
        do {
            group = try WatcherGroup(
                count: 1, arguments: ["--child", "etcd-scale", endpoint, String(suites), base, "1"],
                workspace: workspace, environment: environment)
        } catch {
            report.notes.append("etcd scale\(label): \(error)")
            return false
        }
        defer { group.stop() }
        guard group.waitUntilReady(within: 120), let stats = group.stats.first, stats.count == 5,
            let pid = group.processIdentifiers.first
        else {
            report.notes.append("etcd scale\(label): \(suites) suites did not all come live within 120 s")
            return false
        }
        let connections = Self.tcpConnections(of: pid)
        // Changes spread over the suites, one at a time: CPU per change delivered.
        let changes = options.quick ? 10 : 200
        for index in 1...changes {
            let key = BenchFleet.prefix("\(base).\(index % suites)") + "stamp"
            do {
                _ = try connection.post(
                    "/v3/kv/put", ["key": RawEtcd.base64(key), "value": RawEtcd.base64(Self.encoded(index))])
            } catch {
                report.notes.append("etcd scale\(label): a put failed: \(error)")
                return false
            }
            if group.lastArrival(of: index, within: 10) == nil {
                report.notes.append("etcd scale\(label): change \(index) did not reach its suite within 10 s")
                return false
            }
        }
        let name = "\(suites) fleet suite\(suites == 1 ? "" : "s") in one process\(label)"
        report.add(
            "etcd scale", "\(name): threads (more than before the first suite)", Double(stats[1]),
            limit: Double(stats[1] - stats[0]), unit: "count")
        report.add(
            "etcd scale", "\(name): sockets (more than before the first suite)", Double(stats[3]),
            limit: Double(stats[3] - stats[2]), unit: "count")
        report.add("etcd scale", "\(name): TCP connections", Double(connections), unit: "count")
        report.add("etcd scale", "\(name): resident memory", Double(stats[4]) / 1024, unit: "MB")
        if let cpu = group.cpuPerValue() {
            report.add("etcd scale", "\(name): CPU time per change delivered", cpu)
        }
        return true
    }

    /// The established TCP connections process `pid` holds: its socket descriptors
    /// (/proc/<pid>/fd) found in the namespace's table (/proc/<pid>/net/tcp, state 01).
    static func tcpConnections(of pid: Int32) -> Int {
        let directory = "/proc/\(pid)/fd"
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        let sockets = Set(
            descriptors.compactMap { descriptor -> Substring? in
                guard
                    let target = try? FileManager.default.destinationOfSymbolicLink(
                        atPath: directory + "/" + descriptor),
                    target.hasPrefix("socket:[")
                else { return nil }
                return Substring(target.dropFirst("socket:[".count).dropLast())
            })
        // Read to the end: a proc file reports no size.
        let table = String(
            decoding: FileHandle(forReadingAtPath: "/proc/\(pid)/net/tcp")?.readDataToEndOfFile() ?? Data(),
            as: UTF8.self)
        return table.split(separator: "\n").dropFirst().filter { line in
            let fields = line.split(separator: " ")
            return fields.count > 9 && fields[3] == "01" && sockets.contains(fields[9])
        }.count
    }

    func measureThousandWatchers(into report: inout Report) {
        let (processes, suitesEach, rawCount, changes) = options.quick ? (2, 5, 5, 5) : (10, 100, 100, 100)
        var members: [EtcdMember] = []
        defer { for started in members where started !== member { started.stop() } }
        if options.quick {
            members = [member]
        } else {
            do {
                members = try (1...3).map { try EtcdMember(in: workspace.directory, name: "scale-m\($0)") }
                let cluster = members.map { "\($0.name)=\($0.peerURL)" }.joined(separator: ",")
                for started in members { try started.launch(initialCluster: cluster) }
                for started in members { try started.waitUntilHealthy() }
            } catch {
                report.notes.append("etcd 1,000 watchers: could not start the cluster: \(error)")
                return
            }
        }
        let endpoints = members.map(\.endpoint).joined(separator: ",")
        let watchers = processes * suitesEach
        let base = "bench.etcd.thousand"
        let connection: RawEtcdConnection
        do { connection = try RawEtcdConnection(port: members[0].clientPort) } catch {
            report.notes.append("etcd 1,000 watchers: \(error)")
            return
        }
        /// One transaction: "stamp" = value in every suite.
        func put(_ value: Int) throws {
            try RawEtcd.putAll(
                (0..<suitesEach).map { (BenchFleet.prefix("\(base).\($0)") + "stamp", Self.encoded(value)) },
                through: connection)
        }
        func etcdCPU() -> UInt64 {
            members.compactMap { $0.process.flatMap { ProcessCensus.cpuNanoseconds(of: $0.processIdentifier) } }
                .reduce(0, +)
        }
        // LiveDefaults: the processes, each with its suites, each process reporting a value once all
        // its suites have it.
        let ours: WatcherGroup
        do {
            ours = try WatcherGroup(
                count: processes,
                arguments: ["--child", "etcd-scale", endpoints, String(suitesEach), base, String(suitesEach)],
                workspace: workspace)
        } catch {
            report.notes.append("etcd 1,000 watchers: \(error)")
            return
        }
        defer { ours.stop() }
        guard ours.waitUntilReady(within: 180) else {
            report.notes.append("etcd 1,000 watchers: the \(watchers) suites did not all come live within 180 s")
            return
        }
        // Raw: etcdctl watch processes, each one watcher of one suite's prefix (spread over them).
        let raw: EtcdctlWatchers
        do {
            raw = try EtcdctlWatchers(
                count: rawCount, endpoints: endpoints,
                prefixes: (0..<rawCount).map { BenchFleet.prefix("\(base).\($0 % suitesEach)") })
        } catch {
            report.notes.append("etcd 1,000 watchers: etcdctl: \(error)")
            return
        }
        defer { raw.stop() }
        // etcdctl says nothing once it watches: changes before the measured ones (negative values),
        // until every watcher saw one.
        // At most 60 s in all: a watcher that never sees a change must not hold the run (a wait of
        // 30 s for each of 120 puts held a CI run for an hour).
        var warmedUp = false
        let warmUpDeadline = DispatchTime.now() + 60
        var warmUp = 0
        while !warmedUp && DispatchTime.now() < warmUpDeadline {
            warmUp += 1
            do { try put(-warmUp) } catch {
                report.notes.append("etcd 1,000 watchers: a put failed: \(error)")
                return
            }
            let now = DispatchTime.now().uptimeNanoseconds
            let left = Double(warmUpDeadline.uptimeNanoseconds - min(now, warmUpDeadline.uptimeNanoseconds)) / 1e9
            warmedUp =
                raw.lastArrival(of: -warmUp, within: min(0.5, left)) != nil
                && ours.lastArrival(of: -warmUp, within: min(30, left)) != nil
        }
        guard warmedUp else {
            report.notes.append("etcd 1,000 watchers: not every watcher saw a change within 60 s")
            return
        }
        var oursLatency: [Double] = []
        var rawLatency: [Double] = []
        let rawCPUStart = raw.cpu()
        let etcdStart = etcdCPU()
        var lost = 0
        for index in 1...changes {
            let start = monotonicNanoseconds()
            do { try put(index) } catch {
                report.notes.append("etcd 1,000 watchers: a put failed: \(error)")
                return
            }
            let oursLast = ours.lastArrival(of: index, within: 30)
            let rawLast = raw.lastArrival(of: index, within: 30)
            if let oursLast { oursLatency.append(Double(oursLast - start)) } else { lost += 1 }
            if let rawLast { rawLatency.append(Double(rawLast - start)) } else { lost += 1 }
            if lost > 0 { break }  // a change lost: the row is wrong already, and each waits 30 s
            usleep(100_000)  // pacing the changes, not synchronisation
        }
        let etcdUsed = Double(etcdCPU() - etcdStart)
        let rawUsed = Double(raw.cpu() - rawCPUStart)
        guard !oursLatency.isEmpty, !rawLatency.isEmpty else {
            report.notes.append("etcd 1,000 watchers: no change reached every watcher")
            return
        }
        if lost > 0 { report.notes.append("etcd 1,000 watchers: \(lost) arrivals missing after 30 s") }
        let cluster = options.quick ? "the shared member" : "a 3-member cluster"
        let name = "\(grouped(watchers)) watchers (\(processes) processes × \(suitesEach) suites, \(cluster))"
        let oursP99 = percentile(oursLatency, 0.99)
        let rawP99 = percentile(rawLatency, 0.99)
        report.add(
            "etcd scale", "\(name): put → every watcher has it, p50 (limit: \(rawCount) etcdctl watch processes)",
            percentile(oursLatency, 0.5), limit: percentile(rawLatency, 0.5))
        report.add(
            "etcd scale", "\(name): p99", oursP99, limit: rawP99, target: "≤2× raw p99", met: oursP99 <= 2 * rawP99)
        if rawUsed == 0 {
            // /proc counts CPU in clock ticks (10 ms): a quick run's few changes may use less.
            report.notes.append("etcd 1,000 watchers: etcdctl's CPU was below one clock tick; no CPU row")
        } else if let perProcess = ours.cpuPerValue() {
            let perWatcher = perProcess / Double(suitesEach)
            let rawPerWatcher = rawUsed / Double(changes) / Double(rawCount)
            report.add(
                "etcd scale", "\(name): CPU time per change per watcher (limit: etcdctl watch)", perWatcher,
                limit: rawPerWatcher, target: "≤1.5× raw", met: perWatcher <= 1.5 * rawPerWatcher)
        }
        report.add(
            "etcd scale", "\(name): etcd's CPU time per change (all members, both sides watching)",
            etcdUsed / Double(changes))
    }
}

/// `etcdctl watch --prefix … -w json` processes; each value they print is stamped when read.
final class EtcdctlWatchers: @unchecked Sendable {
    // Safe as Sendable: `arrivals` is Sendable; the rest is set in init.
    private let processes: [Process]
    private let arrivals = ArrivalBoard()

    init(count: Int, endpoints: String, prefixes: [String]) throws {
        var processes: [Process] = []
        for index in 0..<count {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/etcdctl")
            process.arguments = ["--endpoints=\(endpoints)", "watch", "--prefix", prefixes[index], "-w", "json"]
            let output = Pipe()
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
            processes.append(process)
            let handle = output.fileHandleForReading
            Thread.detachNewThread { [arrivals] in
                var buffer = Data()
                while true {
                    let data = handle.availableData
                    if data.isEmpty { return }
                    let now = monotonicNanoseconds()
                    buffer.append(data)
                    while let newline = buffer.firstIndex(of: 0x0A) {
                        let line = buffer[buffer.startIndex..<newline]
                        buffer.removeSubrange(buffer.startIndex...newline)
                        guard let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
                            let events = object["Events"] as? [[String: Any]]
                        else { continue }
                        for event in events {
                            guard let kv = event["kv"] as? [String: Any], let text = kv["value"] as? String,
                                let value = Data(base64Encoded: text),
                                case .integer(let number)? = try? PropertyListCodec.decode(value).value
                            else { continue }
                            arrivals.record(Int(number), from: index, at: now)
                        }
                    }
                }
            }
        }
        self.processes = processes
    }

    /// The latest arrival of `value` once every process printed it, or nil after `seconds`.
    func lastArrival(of value: Int, within seconds: Double) -> UInt64? {
        arrivals.lastArrival(of: value, from: processes.count, within: seconds)
    }

    /// The CPU time all of them used so far.
    func cpu() -> UInt64 {
        processes.compactMap { ProcessCensus.cpuNanoseconds(of: $0.processIdentifier) }.reduce(0, +)
    }

    /// Stops them by their PIDs.
    func stop() {
        for process in processes where process.isRunning { kill(process.processIdentifier, SIGTERM) }
        for process in processes { process.waitUntilExit() }
    }
}
