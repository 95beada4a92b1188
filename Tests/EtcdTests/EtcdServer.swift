import Foundation
import LiveDefaultsLocking
import TestSupport
import Testing

/// A real etcd member on loopback for one test: a fresh data directory, free ports, stopped by its
/// PID when the test ends — alone (``start(progressInterval:extraArguments:)``) or as one member of
/// an ``EtcdCluster``.
///
/// Members are started through `setpriv --pdeathsig KILL` from one thread that lives as long as the
/// test process (``MemberSpawner``), so a test process that crashes or is killed takes its members
/// with it instead of leaving them running.
final class EtcdServer: @unchecked Sendable {
    // Safe as Sendable: `process` is replaced only by `start()`/`stop()`, which tests call in turn.

    /// Where `etcd` is; nil when it is not installed (the tests then skip, except in CI).
    static let binary: String? = {
        for directory in ["/usr/bin", "/usr/local/bin", "/usr/sbin"] {
            let path = directory + "/etcd"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }()

    /// Whether a missing etcd fails the tests instead of skipping them (CI sets it).
    static let required = ProcessInfo.processInfo.environment["LIVEDEFAULTS_REQUIRE_ETCD"] == "1"

    let name: String
    let dataDirectory: TemporaryDirectory
    /// The ports, chosen again only when etcd found one taken at its start (``start(progressInterval:extraArguments:clusterToken:)``).
    private(set) var clientPort: Int
    private(set) var peerPort: Int
    private(set) var process: Process?

    private(set) var endpoint: URL
    var peerURL: String { "http://127.0.0.1:\(peerPort)" }
    /// etcd's own output (errors only), kept for a start that fails.
    var logPath: String { dataDirectory.path + "/etcd.log" }
    var pid: Int32 { process?.processIdentifier ?? 0 }
    var isRunning: Bool { process?.isRunning ?? false }

    init(name: String = "n1") throws {
        self.name = name
        dataDirectory = try TemporaryDirectory()
        clientPort = try Self.freePort()
        peerPort = try Self.freePort()
        endpoint = try Self.endpoint(clientPort)
    }

    private static func endpoint(_ port: Int) throws -> URL {
        guard let endpoint = URL(string: "http://127.0.0.1:\(port)") else {
            throw EtcdServerError("no URL for port \(port)")
        }
        return endpoint
    }

    /// Starts the member (again, on the same data) and waits until it answers `/health`. A first
    /// start that finds a port taken since it was chosen (by another test process of the machine)
    /// is made again on new ports, up to three times.
    func start(progressInterval: String = "1s", extraArguments: [String] = [], clusterToken: String = "etcd-cluster")
        async throws
    {
        var attempt = 1
        while true {
            try launch(progressInterval: progressInterval, extraArguments: extraArguments, clusterToken: clusterToken)
            do {
                try await waitUntilHealthy()
                return
            } catch let error as EtcdServerError where error.portTaken && attempt < 3 && !hasStarted {
                attempt += 1
                try choosePortsAgain()
            }
        }
    }

    /// Whether the member was ever healthy (a restart must keep its ports: its peers know them).
    private var hasStarted = false

    /// New ports, and no data, for a first start that found a port taken.
    func choosePortsAgain() throws {
        precondition(!isRunning, "choose ports only while the member is stopped")
        try? FileManager.default.removeItem(atPath: dataDirectory.path + "/data")
        clientPort = try Self.freePort()
        peerPort = try Self.freePort()
        endpoint = try Self.endpoint(clientPort)
    }

    /// Starts the member without waiting for it: a member of a new cluster is healthy only once a
    /// majority of its peers run.
    ///
    /// - Parameters:
    ///   - progressInterval: How often etcd sends a quiet watch a progress notification.
    ///   - extraArguments: More of etcd's options.
    ///   - initialCluster: `--initial-cluster` (`name=peerURL,…`); nil for a cluster of this member alone.
    ///   - clusterToken: `--initial-cluster-token`: a new one makes a new cluster ID on the same ports.
    /// - Throws: ``EtcdServerError`` when etcd is not installed, or the process cannot start.
    func launch(
        progressInterval: String = "1s", extraArguments: [String] = [], initialCluster: String? = nil,
        clusterToken: String = "etcd-cluster"
    ) throws {
        guard let binary = Self.binary else {
            throw EtcdServerError("etcd is not installed (apt-get install etcd-server)")
        }
        let client = "http://127.0.0.1:\(clientPort)"
        let arguments =
            [
                "--name", name, "--data-dir", dataDirectory.path + "/data",
                "--listen-client-urls", client, "--advertise-client-urls", client,
                "--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
                "--initial-cluster", initialCluster ?? "\(name)=\(peerURL)",
                "--initial-cluster-token", clusterToken,
                "--experimental-watch-progress-notify-interval", progressInterval,
                "--log-level", "error",
                // A test member's data is thrown away with it, and a killed member's writes are
                // still in the page cache: fsync would only spend the machine's time (most of the
                // etcd tests' system time was etcd's fsyncs).
                "--unsafe-no-fsync",
            ] + extraArguments
        process = try MemberSpawner.shared.spawn(binary, arguments, log: logPath)
    }

    /// Waits until the member answers `/health` (it has a leader), for at most 60 s (a new cluster
    /// elects its leader in about a second, but a loaded CI machine has taken over 20).
    ///
    /// A member that exits meanwhile fails at once, with the end of its log: before, a member that
    /// could not bind its port (taken between ``freePort()`` and etcd's start, by another test
    /// process of the machine) was waited for the whole 60 s and reported as "not healthy".
    func waitUntilHealthy() async throws {
        // Each probe on a thread of its own: a member that has no leader yet can hold a request
        // for a second, and two such probes held both threads of a 2-core machine's cooperative
        // pool, and every other test's tasks with them (seen in a debugger during the etcd tests).
        let done = await eventuallyOffThePool(within: 60) { self.isHealthy() || !self.isRunning }
        if done && isRunning {
            hasStarted = true
            return
        }
        let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        // etcd 3.4 always warns that its default logger is deprecated: not the news.
        let tail = log.split(separator: "\n").filter { !$0.contains("Deprecated '--logger") }.suffix(3)
            .joined(separator: "; ")
        let exited = done && !isRunning
        stop()
        throw EtcdServerError(
            exited
                ? "etcd on ports \(clientPort)/\(peerPort) exited at its start: \(tail)"
                : "etcd on port \(clientPort) did not become healthy within 60 s; its log ends: \(tail)",
            portTaken: exited && log.contains("address already in use"))
    }

    /// Removes the member's data (while it is stopped): started again, it is a new cluster.
    func wipe() throws {
        precondition(!isRunning, "wipe a member only while it is stopped")
        try? FileManager.default.removeItem(atPath: dataDirectory.path + "/data")
    }

    /// Sends `signal` to the member (SIGKILL, SIGTERM, SIGSTOP, SIGCONT).
    func send(_ signal: Int32) {
        if let process, process.isRunning { kill(process.processIdentifier, signal) }
    }

    /// Freezes the member (SIGSTOP, by its PID) and waits until the kernel shows every one of its
    /// threads stopped; resume it with `send(SIGCONT)` (``stop()`` does too).
    ///
    /// `kill` returns before the stop takes effect: one thread of the member takes the signal
    /// when it next runs, and only then stops the others. Until then, on a loaded machine, the
    /// member's other threads go on answering requests (a compare-and-set meant to get no answer
    /// got one so, in a CI run).
    ///
    /// - Returns: Whether it is stopped within 30 s (a thread in an uninterruptible wait, such as
    ///   an `fsync` on a loaded disk, stops only when the wait ends).
    func freeze() async -> Bool {
        guard let pid = signalled(SIGSTOP) else { return false }
        return await eventually { Self.isStopped(pid) }
    }

    /// ``freeze()`` for a caller that cannot wait asynchronously (a transform run by the library):
    /// it blocks the calling thread, polling the threads' states, for 30 s at most.
    func freezeBlocking() -> Bool {
        guard let pid = signalled(SIGSTOP) else { return false }
        let deadline = ContinuousClock.now + .seconds(30)
        while !Self.isStopped(pid) {
            if ContinuousClock.now > deadline { return false }
            sched_yield()
        }
        return true
    }

    private func signalled(_ signal: Int32) -> Int32? {
        guard let process, process.isRunning else { return nil }
        let pid = process.processIdentifier
        return kill(pid, signal) == 0 ? pid : nil
    }

    /// Whether every thread of `pid` is stopped (`T` in `/proc/<pid>/task/<tid>/stat`).
    static func isStopped(_ pid: Int32) -> Bool {
        guard let threads = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task"),
            !threads.isEmpty
        else { return false }
        return threads.allSatisfy { thread in
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/task/\(thread)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return false }
            // "tid (comm) S …": the state follows the command's closing parenthesis.
            return stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).hasPrefix("T")
        }
    }

    /// Stops the member by its PID and waits for it to exit.
    func stop() {
        guard let process else { return }
        if process.isRunning {
            kill(process.processIdentifier, SIGCONT)
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        self.process = nil
    }

    /// Waits for the member to exit after a signal.
    func waitForExit() {
        process?.waitUntilExit()
        process = nil
    }

    deinit { stop() }

    /// Runs `etcdctl` against this member (`ETCDCTL_API=3`); throws with its output when it fails.
    func control(_ arguments: [String]) throws {
        let (status, text) = try runToEnd(
            "/usr/bin/etcdctl", ["--endpoints", endpoint.absoluteString] + arguments,
            environment: ["ETCDCTL_API": "3", "PATH": "/usr/bin:/bin"])
        guard status == 0 else {
            throw EtcdServerError("etcdctl \(arguments.joined(separator: " ")): \(text)")
        }
    }

    /// etcd's ID of this member and of the leader it knows (`/v3/maintenance/status`); nil when it
    /// does not answer.
    func memberAndLeader() -> (member: UInt64, leader: UInt64)? {
        struct Status: Decodable {
            struct Header: Decodable { var member_id: String? }
            var header: Header?
            var leader: String?
        }
        guard
            let data = LoopbackHTTP.answer(
                port: clientPort, method: "POST", path: "/v3/maintenance/status", body: "{}"),
            let status = try? JSONDecoder().decode(Status.self, from: data),
            let member = status.header?.member_id.flatMap({ UInt64($0) }),
            let leader = status.leader.flatMap({ UInt64($0) })
        else { return nil }
        return (member, leader)
    }

    private func isHealthy() -> Bool {
        guard let data = LoopbackHTTP.answer(port: clientPort, method: "GET", path: "/health") else { return false }
        return String(decoding: data, as: UTF8.self).contains("\"health\":\"true\"")
    }

    /// The ports handed out so far (never twice in a process).
    private static let handedOut = HandedOutPorts()

    /// The first port of the kernel's ephemeral range (`ip_local_port_range`, 32768 by default).
    static let ephemeralStart: Int = {
        let range = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)) ?? ""
        return range.split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) } ?? 32768
    }()

    /// A loopback port nothing listens on now, at random below the kernel's ephemeral range.
    ///
    /// Not port 0 read back: that is an ephemeral port, and so is the local port of every outgoing
    /// connection of the machine (thousands a minute while several test runs share it): one of
    /// them could take the port between its choice and etcd's start, and etcd exited with
    /// "address already in use". Below the range only another explicit bind can take it, and a
    /// random choice among over 10,000 ports makes two test processes' choices meet rarely; the
    /// start is made again when they do.
    ///
    /// No port is handed out twice in one process: a member stopped for a while (an outage test)
    /// keeps its ports and must find them free when it starts again, and a member of another test
    /// was once given one of them meanwhile (a fresh-clone CI run failed so).
    static func freePort() throws -> Int {
        let low = 20_000
        let high = max(low + 1_000, ephemeralStart)
        for _ in 0..<100 {
            let port = Int.random(in: low..<high)
            if canBind(port), handedOut.claim(port) { return port }
        }
        throw EtcdServerError("no free loopback port in \(low)..<\(high)")
    }

    /// Whether a socket can bind `port` on 127.0.0.1 now (as etcd does, with SO_REUSEADDR).
    private static func canBind(_ port: Int) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var reuse: Int32 = 1
        _ = setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        return bindLoopback(descriptor, port: port)
    }

    /// Binds `descriptor` to 127.0.0.1:`port`; whether it worked.
    static func bindLoopback(_ descriptor: Int32, port: Int) -> Bool {
        withLoopbackAddress(port: port) { bind(descriptor, $0, $1) } == 0
    }

    /// Calls `body` with the address 127.0.0.1:`port` and its length (for `bind` and `connect`).
    static func withLoopbackAddress(port: Int, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
    }
}

struct EtcdServerError: Error, CustomStringConvertible {
    let description: String
    /// Whether etcd could not start because a port was taken.
    let portTaken: Bool
    init(_ description: String, portTaken: Bool = false) {
        self.description = description
        self.portTaken = portTaken
    }
}

/// Starts etcd members from one thread that lives as long as the test process, through
/// `setpriv --pdeathsig KILL` where it exists: Linux sends a child its parent-death signal when the
/// *thread* that started it ends, so a pool thread would not do, but a thread that never ends gives
/// the signal exactly when the test process dies (a crash, a SIGKILL) and no member is orphaned.
/// `setpriv` executes etcd in place, so the PID stopped by the tests is etcd's.
final class MemberSpawner: @unchecked Sendable {
    // Safe as Sendable: `jobs` is guarded by `lock`; the thread takes them one by one.
    static let shared = MemberSpawner()

    private static let setpriv: String? =
        FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") ? "/usr/bin/setpriv" : nil

    private let lock = NSLock()
    private var jobs: [() -> Void] = []
    private let ready = DispatchSemaphore(value: 0)

    private init() {
        let thread = Thread { [unowned self] in
            while true {
                ready.wait()
                let job = lock.withLock { jobs.removeFirst() }
                job()
            }
        }
        thread.name = "etcd member spawner"
        thread.start()
    }

    /// Starts `binary` with `arguments` from the spawner's thread: its standard output discarded,
    /// its standard error appended to `log` (nil: discarded).
    func spawn(_ binary: String, _ arguments: [String], log: String? = nil) throws -> Process {
        let process = Process()
        if let setpriv = Self.setpriv {
            process.executableURL = URL(fileURLWithPath: setpriv)
            process.arguments = ["--pdeathsig", "KILL", "--", binary] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: binary)
            process.arguments = arguments
        }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        var logHandle: FileHandle?
        if let log {
            if !FileManager.default.fileExists(atPath: log) {
                _ = FileManager.default.createFile(atPath: log, contents: nil)
            }
            logHandle = FileHandle(forWritingAtPath: log)
            if let logHandle {
                logHandle.seekToEndOfFile()
                process.standardError = logHandle
            }
        }
        // The child has its own copy once started.
        defer { try? logHandle?.close() }
        let done = DispatchSemaphore(value: 0)
        // Written by the spawner's thread before `done` is signalled, read after: the semaphore orders them.
        final class Outcome: @unchecked Sendable { var error: (any Error)? }
        let outcome = Outcome()
        lock.withLock {
            jobs.append {
                do { try process.run() } catch { outcome.error = error }
                done.signal()
            }
        }
        ready.signal()
        done.wait()
        if let error = outcome.error { throw error }
        return process
    }
}

/// A cluster of etcd members on loopback for one test (three by default): fresh data directories,
/// free ports, every member stopped by its PID when the test ends.
final class EtcdCluster: Sendable {
    let members: [EtcdServer]

    init(size: Int = 3) throws {
        members = try (1...size).map { try EtcdServer(name: "m\($0)") }
    }

    var endpoints: [URL] { members.map(\.endpoint) }

    /// Starts every member and waits until each answers `/health`; when one found a port taken at
    /// its start (see `EtcdServer.freePort()`), the cluster is started again on new ports, up to
    /// three times.
    func start(progressInterval: String = "1s") async throws {
        var attempt = 1
        while true {
            let initialCluster = members.map { "\($0.name)=\($0.peerURL)" }.joined(separator: ",")
            for member in members {
                try member.launch(progressInterval: progressInterval, initialCluster: initialCluster)
            }
            do {
                for member in members { try await member.waitUntilHealthy() }
                return
            } catch let error as EtcdServerError where error.portTaken && attempt < 3 {
                attempt += 1
                stop()
                for member in members { try member.choosePortsAgain() }
            }
        }
    }

    /// The index of the member the running members agree is the leader; nil while there is none.
    func leaderIndex() -> Int? {
        let answers = members.map { $0.isRunning ? $0.memberAndLeader() : nil }
        for (index, answer) in answers.enumerated() where answer != nil && answer?.member == answer?.leader {
            return index
        }
        return nil
    }

    /// Waits until a leader is elected, for at most 20 s.
    func waitForLeader() async -> Int? {
        let leader = Locked<Int?>(nil)
        // Off the pool: a member that does not answer holds each request for up to 2 s.
        _ = await eventuallyOffThePool(within: 20) {
            let index = self.leaderIndex()
            leader.withLock { $0 = index }
            return index != nil
        }
        return leader.withLock { $0 }
    }

    func stop() { for member in members { member.stop() } }

    deinit { stop() }
}

extension Trait where Self == ConditionTrait {
    /// Runs a suite only where `etcd` is installed — or always in CI, which sets
    /// `LIVEDEFAULTS_REQUIRE_ETCD=1`, so that a missing etcd fails there instead of skipping.
    static var requiresEtcd: Self {
        .enabled(
            if: EtcdServer.binary != nil || EtcdServer.required,
            "etcd is not installed (apt-get install etcd-server, or scripts/setup.sh); these tests need a real member")
    }

    /// As ``requiresEtcd``, for suites that also set a member up with `etcdctl`.
    static var requiresEtcdctl: Self {
        .enabled(
            if: FileManager.default.isExecutableFile(atPath: "/usr/bin/etcdctl") || EtcdServer.required,
            "etcdctl is not installed (apt-get install etcd-client, or scripts/setup.sh)")
    }
}

/// The ports ``EtcdServer/freePort()`` has handed out in this process.
final class HandedOutPorts: @unchecked Sendable {
    // @unchecked: `ports` is only touched under `lock` (an NSLock, a pthread mutex the thread
    // sanitizer sees).
    private let lock = NSLock()
    private var ports: Set<Int> = []

    /// Takes `port` for good; false when it was handed out before.
    func claim(_ port: Int) -> Bool {
        lock.withLock { ports.insert(port).inserted }
    }
}

/// One HTTP/1.0 request to a member on loopback, over a socket of its own that is closed after the
/// answer, with a 2-second bound on each read and write.
///
/// Not URLSession: on Linux it keeps an idle connection in libcurl's cache with a dispatch source on
/// its socket, and once the member behind it is stopped that source fired in a loop; over a run of
/// the etcd tests, whose members are stopped by the dozen, the spin was most of the tests' CPU
/// time (`perf record`).
enum LoopbackHTTP {
    /// The body of a 200 answer; nil for any other answer, or none.
    static func answer(port: Int, method: String, path: String, body: String = "") -> Data? {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bound = timeval(tv_sec: 2, tv_usec: 0)
        let size = socklen_t(MemoryLayout<timeval>.size)
        _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &bound, size)
        _ = setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &bound, size)
        guard EtcdServer.withLoopbackAddress(port: port, { connect(descriptor, $0, $1) }) == 0 else { return nil }
        let request = Array(
            ("\(method) \(path) HTTP/1.0\r\nHost: 127.0.0.1:\(port)\r\nContent-Type: application/json\r\n"
                + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)").utf8)
        var sent = 0
        while sent < request.count {
            let count = request[sent...].withUnsafeBytes {
                send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard count > 0 else { return nil }
            sent += count
        }
        var answer = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count == 0 { break }
            guard count > 0, answer.count < 1 << 20 else { return nil }
            answer.append(contentsOf: buffer[..<count])
        }
        guard let end = answer.range(of: Data("\r\n\r\n".utf8)),
            let statusLine = String(data: answer[..<end.lowerBound], encoding: .utf8)?.split(separator: "\r\n").first,
            statusLine.split(separator: " ").dropFirst().first == "200"
        else { return nil }
        return answer[end.upperBound...]
    }
}
