import Foundation
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A real etcd member on loopback for one test: a fresh data directory, free ports, stopped by its
/// PID when the test ends.
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

    let dataDirectory: TemporaryDirectory
    let clientPort: Int
    let peerPort: Int
    private(set) var process: Process?

    let endpoint: URL
    var pid: Int32 { process?.processIdentifier ?? 0 }

    init() throws {
        dataDirectory = try TemporaryDirectory()
        clientPort = try Self.freePort()
        peerPort = try Self.freePort()
        guard let endpoint = URL(string: "http://127.0.0.1:\(clientPort)") else {
            throw EtcdServerError("no URL for port \(clientPort)")
        }
        self.endpoint = endpoint
    }

    /// Starts the member (again, on the same data and ports) and waits until it answers `/health`.
    func start(progressInterval: String = "1s", extraArguments: [String] = []) async throws {
        guard let binary = Self.binary else {
            throw EtcdServerError("etcd is not installed (apt-get install etcd-server)")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        let client = "http://127.0.0.1:\(clientPort)"
        let peer = "http://127.0.0.1:\(peerPort)"
        process.arguments =
            [
                "--name", "n1", "--data-dir", dataDirectory.path + "/data",
                "--listen-client-urls", client, "--advertise-client-urls", client,
                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                "--initial-cluster", "n1=\(peer)",
                "--experimental-watch-progress-notify-interval", progressInterval,
                "--log-level", "error",
            ] + extraArguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
        let healthy = await eventually(within: 20) { self.isHealthy() }
        if !healthy {
            stop()
            throw EtcdServerError("etcd on port \(clientPort) did not become healthy within 20 s")
        }
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
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/etcdctl")
        process.arguments = ["--endpoints", endpoint.absoluteString] + arguments
        process.environment = ["ETCDCTL_API": "3", "PATH": "/usr/bin:/bin"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw EtcdServerError(
                "etcdctl \(arguments.joined(separator: " ")): \(String(decoding: data, as: UTF8.self))")
        }
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
