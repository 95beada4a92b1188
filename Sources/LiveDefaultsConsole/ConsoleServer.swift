import CMicroHTTPD
import Foundation

/// One HTTP request as the console's rules see it: libmicrohttpd has parsed it (docs/console.md, "Security").
package struct ConsoleRequest: Sendable {
    package var method: String
    /// The path, without the query.
    package var path: String
    /// The query's arguments.
    package var query: [String: String]
    /// The headers, by lower-case name.
    package var headers: [String: String]
    /// The cookies, by name.
    package var cookies: [String: String]
    package var body: Data

    package init(
        method: String, path: String, query: [String: String] = [:], headers: [String: String] = [:],
        cookies: [String: String] = [:], body: Data = Data()
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers.reduce(into: [:]) { $0[$1.key.lowercased()] = $1.value }
        self.cookies = cookies
        self.body = body
    }
}

/// What the console answers.
package enum ConsoleResponse: Sendable {
    /// A whole answer.
    case full(status: Int, headers: [(String, String)], body: Data)
    /// A stream of server-sent events, fed by `subscription` until the page goes away.
    case stream(ConsoleSubscription)

    /// A JSON answer.
    package static func json(_ status: Int, _ document: ConsoleJSON) -> ConsoleResponse {
        .full(
            status: status, headers: [("Content-Type", "application/json; charset=utf-8")],
            body: Data(document.text.utf8))
    }

    /// A plain-text answer (errors).
    package static func text(_ status: Int, _ text: String) -> ConsoleResponse {
        .full(status: status, headers: [("Content-Type", "text/plain; charset=utf-8")], body: Data((text + "\n").utf8))
    }

    /// The status, for tests.
    package var status: Int {
        if case .full(let status, _, _) = self { return status }
        return 200
    }
}

/// The HTTP server: libmicrohttpd on a loopback address, one thread per connection, every request handed to
/// `handler` once its body has arrived.
package final class ConsoleServer: @unchecked Sendable {
    /// What a connection accumulates of a request's body (libmicrohttpd hands it over in pieces).
    private final class PendingRequest {
        var body = Data()
        var isTooLarge = false
    }

    /// The largest request body taken (an edit of a large dictionary fits).
    static let bodyLimit = 4 << 20

    private let handler: @Sendable (ConsoleRequest) -> ConsoleResponse
    // Set once by `start`, read by `stop` (both on the caller's thread).
    private var daemon: OpaquePointer?
    /// The port listened on.
    package private(set) var port: UInt16 = 0

    package init(handler: @escaping @Sendable (ConsoleRequest) -> ConsoleResponse) {
        self.handler = handler
    }

    /// Listens on `address` (a loopback address: ``ConsoleAddress``) and `port` (0: one the system picks).
    ///
    /// - Throws: ``ConsoleError`` when the address cannot be listened on.
    package func start(address: ConsoleAddress, port: UInt16) throws {
        let context = Unmanaged.passUnretained(self).toOpaque()
        let started: OpaquePointer? =
            if address.isIPv6 {
                withUnsafeSocketAddress6(port: port) { pointer in
                    livedefaults_mhd_start(pointer, 1, Self.access, context, Self.completed)
                }
            } else {
                withUnsafeSocketAddress4(port: port) { pointer in
                    livedefaults_mhd_start(pointer, 0, Self.access, context, Self.completed)
                }
            }
        guard let started else {
            throw ConsoleError("cannot listen on \(address.host) port \(port): \(String(cString: strerror(errno)))")
        }
        daemon = started
        self.port = livedefaults_mhd_port(started)
    }

    /// Stops listening and waits for the connections' threads (streams end within a second).
    package func stop() {
        guard let daemon else { return }
        self.daemon = nil
        MHD_stop_daemon(daemon)
    }

    private func withUnsafeSocketAddress4<Answer>(port: UInt16, _ body: (UnsafePointer<sockaddr>) -> Answer) -> Answer {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1, body) }
    }

    private func withUnsafeSocketAddress6<Answer>(port: UInt16, _ body: (UnsafePointer<sockaddr>) -> Answer) -> Answer {
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_port = port.bigEndian
        address.sin6_addr = in6addr_loopback
        return withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1, body) }
    }

    // MARK: libmicrohttpd's callbacks

    private static let access: MHD_AccessHandlerCallback = {
        context, connection, url, method, _, uploadData, uploadSize, connectionContext in
        guard let context, let connection, let connectionContext, let uploadSize else { return .NO }
        let server = Unmanaged<ConsoleServer>.fromOpaque(context).takeUnretainedValue()
        // The first call, with the headers: make the request's body buffer.
        guard let pending = connectionContext.pointee else {
            connectionContext.pointee = Unmanaged.passRetained(PendingRequest()).toOpaque()
            return .YES
        }
        let request = Unmanaged<PendingRequest>.fromOpaque(pending).takeUnretainedValue()
        if uploadSize.pointee > 0 {
            if let uploadData, request.body.count + uploadSize.pointee <= bodyLimit {
                request.body.append(
                    UnsafeRawPointer(uploadData).assumingMemoryBound(to: UInt8.self), count: uploadSize.pointee)
            } else {
                request.isTooLarge = true
            }
            uploadSize.pointee = 0
            return .YES
        }
        let path = url.map { String(cString: $0) } ?? "/"
        let verb = method.map { String(cString: $0) } ?? "GET"
        let answer: ConsoleResponse =
            request.isTooLarge
            ? .text(413, "The request's body is larger than \(bodyLimit) bytes.")
            : server.handler(
                ConsoleRequest(
                    method: verb, path: path, query: values(connection, .GET_ARGUMENT_KIND),
                    headers: values(connection, .HEADER_KIND), cookies: values(connection, .COOKIE_KIND),
                    body: request.body))
        return send(answer, on: connection)
    }

    private static let completed: MHD_RequestCompletedCallback = { _, _, connectionContext, _ in
        guard let connectionContext, let pending = connectionContext.pointee else { return }
        Unmanaged<PendingRequest>.fromOpaque(pending).release()
        connectionContext.pointee = nil
    }

    /// The request's values of one kind (headers, cookies, query arguments).
    private static func values(_ connection: OpaquePointer, _ kind: MHD_ValueKind) -> [String: String] {
        final class Collected { var values: [String: String] = [:] }
        let collected = Collected()
        let iterator: MHD_KeyValueIterator = { context, _, key, value in
            guard let context, let key else { return .YES }
            let collected = Unmanaged<Collected>.fromOpaque(context).takeUnretainedValue()
            collected.values[String(cString: key)] = value.map { String(cString: $0) } ?? ""
            return .YES
        }
        withExtendedLifetime(collected) {
            _ = MHD_get_connection_values(connection, kind, iterator, Unmanaged.passUnretained(collected).toOpaque())
        }
        return collected.values
    }

    /// Headers every answer carries: nothing is framed, sniffed or fetched from elsewhere (docs/console.md).
    private static let commonHeaders: [(String, String)] = [
        (
            "Content-Security-Policy",
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
                + "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
        ),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
        ("Cache-Control", "no-store"),
    ]

    private static func send(_ answer: ConsoleResponse, on connection: OpaquePointer) -> MHD_Result {
        let response: OpaquePointer?
        let status: Int
        var headers = commonHeaders
        switch answer {
        case .full(let code, let extra, let body):
            status = code
            headers += extra
            response = body.withUnsafeBytes { buffer in
                MHD_create_response_from_buffer(
                    buffer.count, UnsafeMutableRawPointer(mutating: buffer.baseAddress), .RESPMEM_MUST_COPY)
            }
        case .stream(let subscription):
            status = 200
            headers += [("Content-Type", "text/event-stream; charset=utf-8"), ("X-Accel-Buffering", "no")]
            let context = Unmanaged.passRetained(subscription).toOpaque()
            response = MHD_create_response_from_callback(UInt64.max, 16 * 1024, streamReader, context) {
                context in
                guard let context else { return }
                let subscription = Unmanaged<ConsoleSubscription>.fromOpaque(context)
                subscription.takeUnretainedValue().cancel()
                subscription.release()
            }
        }
        guard let response else { return .NO }
        defer { MHD_destroy_response(response) }
        for (name, value) in headers { MHD_add_response_header(response, name, value) }
        return MHD_queue_response(connection, UInt32(status), response)
    }

    private static let streamReader: MHD_ContentReaderCallback = { context, _, buffer, size in
        guard let context, let buffer else { return MHD_CONTENT_READER_END_WITH_ERROR }
        let subscription = Unmanaged<ConsoleSubscription>.fromOpaque(context).takeUnretainedValue()
        guard let bytes = subscription.next(maximum: size) else { return MHD_CONTENT_READER_END_OF_STREAM }
        bytes.withUnsafeBytes { source in
            guard let start = source.baseAddress else { return }
            UnsafeMutableRawPointer(buffer).copyMemory(from: start, byteCount: source.count)
        }
        return bytes.count
    }
}

/// A loopback address the console may listen on; any other is refused (docs/console.md, "From another machine").
package struct ConsoleAddress: Sendable, Equatable {
    /// As given: `127.0.0.1`, `localhost` or `::1`.
    package var host: String
    package var isIPv6: Bool

    /// The address `host` names, when it is loopback.
    ///
    /// - Throws: ``ConsoleError`` for any other address, saying how to reach the console from another machine.
    package init(_ host: String) throws {
        switch host {
        case "127.0.0.1", "localhost":
            self.host = "127.0.0.1"
            isIPv6 = false
        case "::1", "[::1]":
            self.host = "::1"
            isIPv6 = true
        default:
            throw ConsoleError(
                "'\(host)' is not a loopback address: the console listens on 127.0.0.1 or ::1 only. From another "
                    + "machine, forward a port over SSH: ssh -L 8765:127.0.0.1:8765 <this machine>, then open the "
                    + "printed URL there (docs/console.md)")
        }
    }

    /// 127.0.0.1, the default.
    package static let loopback = ConsoleAddress(host: "127.0.0.1", isIPv6: false)

    private init(host: String, isIPv6: Bool) {
        self.host = host
        self.isIPv6 = isIPv6
    }

    /// The host as it goes in a URL.
    package var urlHost: String { isIPv6 ? "[::1]" : host }
}

/// A problem the console reports in a sentence.
package struct ConsoleError: Error, Sendable, CustomStringConvertible {
    package var description: String
    package init(_ description: String) { self.description = description }
}
