import Foundation

/// The least a client of etcd's JSON gateway can do, for the raw side of the etcd rows: HTTP/1.1
/// over one blocking loopback socket, no library between the bytes and the caller. A put is one
/// request on a kept-alive connection; a watch is one request whose chunked response is read line
/// by line on a thread of its own (docs/design.md, "Fleet settings: the etcd gateway").
final class RawEtcdConnection: @unchecked Sendable {
    // Safe as Sendable: one thread uses a connection at a time (a watch's is handed to its reading
    // thread); `shutDown()` from another thread only shuts the socket down.
    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    let port: Int
    private let socket: Int32
    private var buffer: [UInt8] = []
    private var position = 0

    init(port: Int, timeout: Double = 10) throws {
        self.port = port
        let descriptor = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw Failure("socket() failed: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(descriptor)
            throw Failure("connect to 127.0.0.1:\(port) failed: errno \(errno)")
        }
        var one: Int32 = 1
        setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var limit = timeval(tv_sec: Int(timeout), tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        socket = descriptor
    }

    deinit { close(socket) }

    /// Shuts the socket down, which ends a watch blocked in a read on another thread.
    func shutDown() { shutdown(socket, Int32(SHUT_RDWR)) }

    /// One request; returns the status and the whole body (Content-Length or chunked).
    func request(_ method: String = "POST", _ path: String, json body: Data = Data()) throws -> (Int, Data) {
        try send(method, path, body)
        let (status, headers) = try readHead()
        if headers["transfer-encoding"]?.lowercased() == "chunked" {
            var data = Data()
            while let chunk = try readChunk() { data.append(chunk) }
            return (status, data)
        }
        return (status, try readExactly(Int(headers["content-length"] ?? "0") ?? 0))
    }

    /// A POST whose JSON answer is decoded; a status other than 200 throws with the body.
    func post(_ path: String, _ object: [String: Any]) throws -> [String: Any] {
        let (status, data) = try request("POST", path, json: try JSONSerialization.data(withJSONObject: object))
        guard status == 200, let answer = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw Failure("etcd answered \(path) with \(status): \(String(decoding: data, as: UTF8.self))")
        }
        return answer
    }

    /// Starts a watch and returns once etcd has answered the request's head; then read lines with
    /// ``nextWatchLine()``.
    func startWatch(_ body: [String: Any]) throws {
        try send("POST", "/v3/watch", try JSONSerialization.data(withJSONObject: body))
        let (status, _) = try readHead()
        guard status == 200 else { throw Failure("etcd answered the watch with \(status)") }
    }

    private var lineBuffer = Data()

    /// The next message of a watch (one JSON object), or nil at the end of the response.
    func nextWatchLine() throws -> Data? {
        while true {
            if let newline = lineBuffer.firstIndex(of: 0x0A) {
                let line = lineBuffer[lineBuffer.startIndex..<newline]
                lineBuffer.removeSubrange(lineBuffer.startIndex...newline)
                if line.isEmpty { continue }
                return Data(line)
            }
            guard let chunk = try readChunk() else { return nil }
            lineBuffer.append(chunk)
        }
    }

    private func send(_ method: String, _ path: String, _ body: Data) throws {
        var request = Data(
            "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n"
                .utf8)
        request.append(body)
        try request.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { return }
            var offset = 0
            while offset < raw.count {
                let written = Glibc.send(socket, base + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                guard written > 0 else { throw Failure("send to 127.0.0.1:\(port) failed: errno \(errno)") }
                offset += written
            }
        }
    }

    private func fill() throws {
        if position > 0 && position == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            position = 0
        }
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let count = chunk.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
        guard count > 0 else {
            throw Failure(count == 0 ? "etcd closed the connection" : "recv failed: errno \(errno)")
        }
        buffer.append(contentsOf: chunk[0..<count])
    }

    private func readLine() throws -> String {
        while true {
            if let end = buffer[position...].firstIndex(of: 0x0A) {
                var line = buffer[position..<end]
                if line.last == 0x0D { line = line.dropLast() }
                position = end + 1
                return String(decoding: line, as: UTF8.self)
            }
            try fill()
        }
    }

    private func readExactly(_ count: Int) throws -> Data {
        while buffer.count - position < count { try fill() }
        defer { position += count }
        return Data(buffer[position..<position + count])
    }

    private func readHead() throws -> (Int, [String: String]) {
        let statusLine = try readLine()
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, let status = Int(parts[1]) else { throw Failure("not HTTP: \(statusLine)") }
        var headers: [String: String] = [:]
        while true {
            let line = try readLine()
            if line.isEmpty { break }
            if let colon = line.firstIndex(of: ":") {
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                    in: .whitespaces)
            }
        }
        return (status, headers)
    }

    /// One chunk of a chunked body; nil after the last one (and its trailers).
    private func readChunk() throws -> Data? {
        let sizeLine = try readLine()
        guard let size = Int(sizeLine.split(separator: ";").first ?? "", radix: 16) else {
            throw Failure("bad chunk size: \(sizeLine)")
        }
        if size == 0 {
            while try !readLine().isEmpty {}  // trailers (the gateway sends some after an error)
            return nil
        }
        let data = try readExactly(size)
        _ = try readLine()
        return data
    }
}

/// etcd's JSON encodings: keys and values in base64, a prefix's range end.
enum RawEtcd {
    static func base64(_ text: String) -> String { Data(text.utf8).base64EncodedString() }
    static func base64(_ data: Data) -> String { data.base64EncodedString() }

    /// The prefix with its last byte raised by one (etcd's `range_end` for a prefix; the
    /// benchmark's prefixes end in `/`).
    static func prefixEnd(_ prefix: String) -> String {
        var bytes = Array(prefix.utf8)
        bytes[bytes.count - 1] += 1
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Puts `pairs` in transactions of at most 128 operations (etcd's default limit).
    static func putAll(_ pairs: [(key: String, value: Data)], through connection: RawEtcdConnection) throws {
        var start = 0
        while start < pairs.count {
            let end = min(start + 128, pairs.count)
            let operations = pairs[start..<end].map { pair in
                ["request_put": ["key": base64(pair.key), "value": base64(pair.value)]]
            }
            _ = try connection.post("/v3/kv/txn", ["success": operations])
            start = end
        }
    }

    /// A raw watch of `prefix` on its own connection and thread: `onLine` gets each message with
    /// the monotonic time it was read.
    final class Watch: @unchecked Sendable {
        // Safe as Sendable: the connection is used by the reading thread only; `stop()` only shuts it down.
        private let connection: RawEtcdConnection
        private let done = DispatchSemaphore(value: 0)

        init(port: Int, prefix: String, onEvents: @escaping @Sendable (_ values: [Data], _ at: UInt64) -> Void) throws {
            connection = try RawEtcdConnection(port: port, timeout: 3_600)
            try connection.startWatch([
                "create_request": ["key": base64(prefix), "range_end": base64(prefixEnd(prefix))]
            ])
            // The first message says the watch is created: every later put reaches it.
            guard let created = try connection.nextWatchLine(),
                String(decoding: created, as: UTF8.self).contains("\"created\":true")
            else { throw RawEtcdConnection.Failure("etcd did not create the watch") }
            let connection = self.connection
            let done = self.done
            Thread.detachNewThread {
                defer { done.signal() }
                while let line = try? connection.nextWatchLine() {
                    let now = monotonicNanoseconds()
                    // Decode what a client must to know what changed: the JSON, and each value's base64.
                    guard let object = try? JSONSerialization.jsonObject(with: line) as? [String: Any],
                        let result = object["result"] as? [String: Any],
                        let events = result["events"] as? [[String: Any]]
                    else { continue }
                    let values = events.compactMap { event -> Data? in
                        guard let kv = event["kv"] as? [String: Any], let value = kv["value"] as? String else {
                            return nil
                        }
                        return Data(base64Encoded: value)
                    }
                    onEvents(values, now)
                }
            }
        }

        func stop() {
            connection.shutDown()
            done.wait()
        }
    }
}

/// An etcd member on loopback for the benchmark: a scratch data directory, free ports, started as a
/// plain process and stopped by its PID.
final class EtcdMember {
    /// Where `etcd` is, or nil when etcd-server is not installed.
    static let binary: String? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        let directories = path.split(separator: ":").map(String.init) + ["/usr/bin", "/usr/local/bin", "/usr/sbin"]
        return directories.map { $0 + "/etcd" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    let name: String
    let clientPort: Int
    let peerPort: Int
    let dataDirectory: URL
    private(set) var process: Process?
    /// How long the last start took until `/health` answered true, in nanoseconds.
    private(set) var lastStartTime: UInt64 = 0

    var endpoint: String { "http://127.0.0.1:\(clientPort)" }

    /// The certificate of the member's TLS listener, when it has one.
    let certificates: BenchCertificates?
    /// The port of the TLS listener (0 without one).
    let secureClientPort: Int

    /// The member's `https://` endpoint, when it serves TLS.
    var secureEndpoint: String? { certificates == nil ? nil : "https://127.0.0.1:\(secureClientPort)" }

    /// - Parameters:
    ///   - directory: Where its data directory goes.
    ///   - name: Its member name.
    ///   - certificates: When given, the member also serves TLS with this certificate, on a port of
    ///     its own, beside its plain listener.
    /// - Throws: When no free port can be found.
    init(in directory: URL, name: String, certificates: BenchCertificates? = nil) throws {
        self.name = name
        dataDirectory = directory.appendingPathComponent("etcd-\(name)")
        clientPort = try Self.freePort()
        peerPort = try Self.freePort()
        self.certificates = certificates
        secureClientPort = certificates == nil ? 0 : try Self.freePort()
    }

    var peerURL: String { "http://127.0.0.1:\(peerPort)" }

    /// Starts the member (again, on the same data and ports) and waits until it is healthy.
    func start() throws {
        let start = monotonicNanoseconds()
        try launch()
        try waitUntilHealthy()
        lastStartTime = monotonicNanoseconds() - start
    }

    /// Starts the member without waiting: a member of a new cluster is healthy only once a majority
    /// of its peers run.
    ///
    /// - Parameter initialCluster: `--initial-cluster` (`name=peerURL,…`); nil for this member alone.
    /// - Throws: When etcd is not installed or cannot be started.
    func launch(initialCluster: String? = nil) throws {
        guard let binary = Self.binary else { throw RawEtcdConnection.Failure("etcd is not installed") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        let client = "http://127.0.0.1:\(clientPort)"
        let peer = "http://127.0.0.1:\(peerPort)"
        let listen = secureEndpoint.map { "\(client),\($0)" } ?? client
        process.arguments = [
            "--name", name, "--data-dir", dataDirectory.path,
            "--listen-client-urls", listen, "--advertise-client-urls", client,
            "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
            "--initial-cluster", initialCluster ?? "\(name)=\(peer)", "--log-level", "error",
            "--experimental-watch-progress-notify-interval", "1s",
        ]
        if let certificates {
            process.arguments? += ["--cert-file", certificates.certificate, "--key-file", certificates.key]
        }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
    }

    /// Waits until `/health` answers true, for at most 30 s.
    func waitUntilHealthy() throws {
        let deadline = Date().addingTimeInterval(30)
        while !isHealthy() {
            guard Date() < deadline, process?.isRunning == true else {
                stop()
                throw RawEtcdConnection.Failure("etcd on port \(clientPort) did not become healthy within 30 s")
            }
            usleep(5_000)  // polling /health, as a client would
        }
    }

    /// Sends `signal` to the member (SIGSTOP, SIGCONT).
    func send(_ signal: Int32) {
        if let process, process.isRunning { kill(process.processIdentifier, signal) }
    }

    /// Whether the member is the leader it knows (`/v3/maintenance/status`).
    func isLeader() -> Bool {
        guard let connection = try? RawEtcdConnection(port: clientPort, timeout: 2),
            let status = try? connection.post("/v3/maintenance/status", [:]),
            let header = status["header"] as? [String: Any], let member = header["member_id"] as? String,
            let leader = status["leader"] as? String
        else { return false }
        return member == leader
    }

    /// Whether `/health` answers true.
    func isHealthy() -> Bool {
        guard let connection = try? RawEtcdConnection(port: clientPort, timeout: 1),
            let (status, body) = try? connection.request("GET", "/health")
        else { return false }
        return status == 200 && String(decoding: body, as: UTF8.self).contains("\"health\":\"true\"")
    }

    /// SIGKILL, and waits for the process to be gone.
    func kill9() {
        guard let process else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        self.process = nil
    }

    /// Stops the member by its PID (resumed first, if it was frozen).
    func stop() {
        guard let process else { return }
        if process.isRunning {
            kill(process.processIdentifier, SIGCONT)
            kill(process.processIdentifier, SIGTERM)
            process.waitUntilExit()
        }
        self.process = nil
    }

    deinit { stop() }

    /// A loopback port nothing listens on now: bound to port 0, read back, closed.
    static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw RawEtcdConnection.Failure("socket() failed") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else { throw RawEtcdConnection.Failure("bind() failed") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
