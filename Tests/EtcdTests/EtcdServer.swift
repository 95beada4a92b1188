import Foundation
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

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
    let clientPort: Int
    let peerPort: Int
    private(set) var process: Process?

    let endpoint: URL
    var peerURL: String { "http://127.0.0.1:\(peerPort)" }
    var pid: Int32 { process?.processIdentifier ?? 0 }
    var isRunning: Bool { process?.isRunning ?? false }

    init(name: String = "n1") throws {
        self.name = name
        dataDirectory = try TemporaryDirectory()
        clientPort = try Self.freePort()
        peerPort = try Self.freePort()
        guard let endpoint = URL(string: "http://127.0.0.1:\(clientPort)") else {
            throw EtcdServerError("no URL for port \(clientPort)")
        }
        self.endpoint = endpoint
    }

    /// Starts the member (again, on the same data and ports) and waits until it answers `/health`.
    func start(progressInterval: String = "1s", extraArguments: [String] = [], clusterToken: String = "etcd-cluster")
        async throws
    {
        try launch(progressInterval: progressInterval, extraArguments: extraArguments, clusterToken: clusterToken)
        try await waitUntilHealthy()
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
            ] + extraArguments
        process = try MemberSpawner.shared.spawn(binary, arguments)
    }

    /// Waits until the member answers `/health` (it has a leader), for at most 60 s (a new cluster
    /// elects its leader in about a second, but a loaded CI machine has taken over 20).
    func waitUntilHealthy() async throws {
        let healthy = await eventually(within: 60) { self.isHealthy() }
        if !healthy {
            stop()
            throw EtcdServerError("etcd on port \(clientPort) did not become healthy within 60 s")
        }
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
        let done = DispatchSemaphore(value: 0)
        let answer = LockedData()
        var request = URLRequest(url: endpoint.appendingPathComponent("v3/maintenance/status"))
        request.httpMethod = "POST"
        request.httpBody = Data("{}".utf8)
        request.timeoutInterval = 2
        URLSession.shared.dataTask(with: request) { data, response, _ in
            if let data, (response as? HTTPURLResponse)?.statusCode == 200 { answer.set(data) }
            done.signal()
        }.resume()
        _ = done.wait(timeout: .now() + 3)
        struct Status: Decodable {
            struct Header: Decodable { var member_id: String? }
            var header: Header?
            var leader: String?
        }
        guard let data = answer.value, let status = try? JSONDecoder().decode(Status.self, from: data),
            let member = status.header?.member_id.flatMap({ UInt64($0) }),
            let leader = status.leader.flatMap({ UInt64($0) })
        else { return nil }
        return (member, leader)
    }

    private func isHealthy() -> Bool {
        let done = DispatchSemaphore(value: 0)
        let healthy = LockedFlag()
        var request = URLRequest(url: endpoint.appendingPathComponent("health"))
        request.timeoutInterval = 1
        URLSession.shared.dataTask(with: request) { data, _, _ in
            if let data, String(decoding: data, as: UTF8.self).contains("\"health\":\"true\"") { healthy.set() }
            done.signal()
        }.resume()
        _ = done.wait(timeout: .now() + 2)
        return healthy.value
    }

    /// A loopback port nothing listens on now: bound to port 0, read back, closed.
    static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw EtcdServerError("socket() failed") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else { throw EtcdServerError("bind() failed") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

struct EtcdServerError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Bytes set from a callback.
final class LockedData: @unchecked Sendable {
    // Safe as Sendable: guarded by `lock`.
    private let lock = NSLock()
    private var data: Data?
    func set(_ data: Data) { lock.withLock { self.data = data } }
    var value: Data? { lock.withLock { data } }
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

    /// Starts `binary` with `arguments` (output discarded) from the spawner's thread.
    func spawn(_ binary: String, _ arguments: [String]) throws -> Process {
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

    /// Starts every member and waits until each answers `/health`.
    func start(progressInterval: String = "1s") async throws {
        let initialCluster = members.map { "\($0.name)=\($0.peerURL)" }.joined(separator: ",")
        for member in members { try member.launch(progressInterval: progressInterval, initialCluster: initialCluster) }
        for member in members { try await member.waitUntilHealthy() }
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
        var leader: Int?
        _ = await eventually(within: 20) {
            leader = leaderIndex()
            return leader != nil
        }
        return leader
    }

    func stop() { for member in members { member.stop() } }

    deinit { stop() }
}

/// A flag set from a callback.
final class LockedFlag: @unchecked Sendable {
    // Safe as Sendable: guarded by `lock`.
    private let lock = NSLock()
    private var isSet = false
    func set() { lock.withLock { isSet = true } }
    var value: Bool { lock.withLock { isSet } }
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
