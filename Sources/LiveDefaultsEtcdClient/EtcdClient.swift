import Foundation
import LiveDefaultsLocking

/// A client of etcd's v3 JSON gateway (etcd 3.4: `POST /v3/kv/range`, `/v3/kv/txn`, `/v3/watch`, …)
/// through libcurl (``CurlPost``), with nothing outside the toolchain and Debian's libcurl
/// (docs/design.md, "Fleet settings: the etcd gateway").
///
/// Every call is synchronous: it runs on the calling thread until etcd answers or its timeout
/// passes, as libcurl blocks anyway. Unary calls try the endpoints in turn until one answers. A
/// watch is a long-lived stream (``EtcdWatch``), read on a thread of its own.
package final class EtcdClient: Sendable {
    package let endpoints: [URL]
    private let credentials: (user: String, password: String)?
    private let token = Locked<String?>(nil)
    private let requestTimeout: TimeInterval
    /// The PEM file of certificate authorities TLS trusts; nil for the system's trust store.
    package let certificateAuthorities: String?
    /// The PEM files of the certificate and key shown to a member that asks for one; nil for none.
    package let clientCertificate: (certificate: String, key: String)?
    private let rotation: Locked<EndpointRotation>

    /// - Parameters:
    ///   - endpoints: Client URLs, such as `http://127.0.0.1:2379`.
    ///   - credentials: An etcd user, when the cluster has authentication on.
    ///   - requestTimeout: How long a unary call may wait for its answer.
    ///   - certificateAuthorities: A PEM file of the certificate authorities TLS trusts (`https://`
    ///     endpoints); nil for the system's trust store.
    ///   - clientCertificate: PEM files of a client certificate and its key, for members started with
    ///     `--client-cert-auth`; nil for none.
    package init(
        endpoints: [URL], credentials: (user: String, password: String)? = nil, requestTimeout: TimeInterval = 10,
        certificateAuthorities: String? = nil, clientCertificate: (certificate: String, key: String)? = nil
    ) {
        precondition(!endpoints.isEmpty, "an etcd client needs at least one endpoint")
        self.endpoints = endpoints
        self.rotation = Locked(EndpointRotation(count: endpoints.count))
        self.credentials = credentials
        self.requestTimeout = requestTimeout
        self.certificateAuthorities = certificateAuthorities
        self.clientCertificate = clientCertificate
    }

    /// The token in use (for tests of its renewal).
    package var currentToken: String? { token.withLock { $0 } }

    /// The endpoint calls and watches try first: the last one that answered.
    package var preferredEndpoint: URL { endpoints[rotation.withLock { $0.preferred }] }

    /// Moves on from `endpoint` (a member whose watch ended: killed, hung, isolated, wiped), so the
    /// next range and watch try the next member first; nothing changes if another member is
    /// preferred already.
    package func avoid(_ endpoint: URL) {
        rotation.withLock { rotation in
            if endpoints[rotation.preferred] == endpoint { rotation.avoid(rotation.preferred) }
        }
    }

    // MARK: Key-value calls

    /// Every key under `prefix` at one revision.
    ///
    /// - Parameters:
    ///   - prefix: The keys to read: every key that starts with it.
    ///   - timeout: How long each member may take to answer; nil for the client's request timeout.
    /// - Returns: The answer's header (its revision) and the keys with their values.
    /// - Throws: ``EtcdError`` when no member answered, or etcd refused.
    package func range(prefix: Data, timeout: TimeInterval? = nil) throws -> (
        header: EtcdResponseHeader, kvs: [EtcdKeyValue]
    ) {
        let response: EtcdRangeResponse = try call(
            "/v3/kv/range", EtcdRangeRequest(key: EtcdBytes(prefix), range_end: EtcdBytes(Self.prefixEnd(prefix))),
            timeout: timeout)
        return (response.header ?? EtcdResponseHeader(), response.kvs ?? [])
    }

    /// Checks that the member at `endpoint` still answers: a serializable range of at most one
    /// key's name under `prefix` (answered from the member's own store, without a round of its
    /// cluster), sent to that member alone (docs/design.md, "Fleet settings: a stalled member").
    ///
    /// Any answer counts, a refusal too (no leader, an expired token): the member is alive, and
    /// its watch ends by itself when it cannot serve. Only silence is a stall.
    ///
    /// - Throws: ``EtcdError`` (unavailable) when the member did not answer within `timeout`, or
    ///   the connection failed.
    package func checkAnswers(_ endpoint: URL, prefix: Data, timeout: TimeInterval) throws {
        let request = try makeRequest(
            endpoint, "/v3/kv/range",
            EtcdRangeRequest(
                key: EtcdBytes(prefix), range_end: EtcdBytes(Self.prefixEnd(prefix)), serializable: true,
                limit: EtcdInt64(1), keys_only: true))
        _ = try send(request, timeout: timeout)
    }

    /// The most operations etcd takes in one transaction (its `--max-txn-ops` default).
    package static let maximumOperationsPerTransaction = 128

    /// Puts and deletes in one transaction, committed at one revision — or, past
    /// ``maximumOperationsPerTransaction``, in several, each atomic on its own.
    ///
    /// - Returns: The revision the (last) transaction committed at.
    package func commit(puts: [(key: Data, value: Data)], deletes: [Data]) throws -> Int64 {
        let operations =
            puts.map { EtcdRequestOp(request_put: EtcdPutRequest(key: EtcdBytes($0.key), value: EtcdBytes($0.value))) }
            + deletes.map { EtcdRequestOp(request_delete_range: EtcdDeleteRangeRequest(key: EtcdBytes($0))) }
        var revision: Int64 = 0
        var start = 0
        repeat {
            let end = min(start + Self.maximumOperationsPerTransaction, operations.count)
            let response: EtcdTxnResponse = try call(
                "/v3/kv/txn", EtcdTxnRequest(compare: [], success: Array(operations[start..<end]), failure: []))
            revision = response.header?.revisionValue ?? revision
            start = end
        } while start < operations.count
        return revision
    }

    /// Changes one key from the value it has to `transform`'s result, only if no one changed it
    /// in between (a compare of its modification revision, or of its absence); tried again
    /// otherwise. For counters and create-if-absent, where "the last write wins" would lose updates.
    ///
    /// - Parameters:
    ///   - key: The etcd key.
    ///   - attempts: How many times to try before giving up.
    ///   - transform: The new value from the current one (nil: absent); nil removes.
    /// - Returns: The revision the change committed at.
    /// - Throws: ``EtcdError`` when etcd cannot be reached or refuses, or when every attempt lost the
    ///   race; what `transform` throws, as it is.
    package func update(key: Data, attempts: Int = 100, _ transform: (Data?) throws -> Data?) throws -> Int64 {
        for _ in 0..<attempts {
            let current: EtcdRangeResponse = try call("/v3/kv/range", EtcdRangeRequest(key: EtcdBytes(key)))
            let existing = current.kvs?.first
            let compare = EtcdCompare.unchanged(key, since: existing?.mod_revision?.value ?? 0)
            let operation =
                try transform(existing.map { $0.value?.data ?? Data() }).map {
                    EtcdRequestOp(request_put: EtcdPutRequest(key: EtcdBytes(key), value: EtcdBytes($0)))
                } ?? EtcdRequestOp(request_delete_range: EtcdDeleteRangeRequest(key: EtcdBytes(key)))
            // Not retried on another member when the outcome is unknown (etcd "request timed out"):
            // a compare-and-set that did apply would apply its transform twice.
            let response: EtcdTxnResponse = try call(
                "/v3/kv/txn", EtcdTxnRequest(compare: [compare], success: [operation], failure: []), idempotent: false)
            if response.succeeded == true { return response.header?.revisionValue ?? 0 }
        }
        throw EtcdError(
            kind: .rejected(code: nil),
            message: "the key kept changing: \(attempts) attempts to update it all lost the race")
    }

    /// One key's entry (nil when absent), read linearizably, with the header of the answer.
    package func get(key: Data) throws -> (header: EtcdResponseHeader, kv: EtcdKeyValue?) {
        let response: EtcdRangeResponse = try call("/v3/kv/range", EtcdRangeRequest(key: EtcdBytes(key)))
        return (response.header ?? EtcdResponseHeader(), response.kvs?.first)
    }

    /// Puts `value` (nil: deletes the key) only if the key's modification revision is still
    /// `modRevision` (0: only if the key is absent). One transaction, never tried again here, nor
    /// on another member when its outcome is unknown: the caller decides what that means.
    ///
    /// - Returns: Whether the compare held (the change was made), and the answer's revision.
    package func compareAndSet(key: Data, modRevision: Int64, value: Data?) throws -> (succeeded: Bool, revision: Int64)
    {
        let compare = EtcdCompare.unchanged(key, since: modRevision)
        let operation =
            value.map { EtcdRequestOp(request_put: EtcdPutRequest(key: EtcdBytes(key), value: EtcdBytes($0))) }
            ?? EtcdRequestOp(request_delete_range: EtcdDeleteRangeRequest(key: EtcdBytes(key)))
        let response: EtcdTxnResponse = try call(
            "/v3/kv/txn", EtcdTxnRequest(compare: [compare], success: [operation], failure: []),
            idempotent: false)
        return (response.succeeded == true, response.header?.revisionValue ?? 0)
    }

    /// Compacts the history up to `revision` (for tests and operators).
    package func compact(revision: Int64) throws {
        struct Compaction: Codable { var revision: EtcdInt64; var physical: Bool }
        let _: EtcdResponseHeaderOnly = try call(
            "/v3/kv/compaction", Compaction(revision: EtcdInt64(revision), physical: true))
    }

    /// Starts watching every key under `prefix` from `revision` on.
    ///
    /// - Parameters:
    ///   - prefix: The keys to watch: every key that starts with it.
    ///   - revision: The first revision to report.
    ///   - idleTimeout: The stream is ended when nothing, not even a progress notification, arrives
    ///     for this long.
    ///   - onMessage: Called with each message on the thread that reads the stream (returning
    ///     false ends the watch); nil delivers them through the watch's stream.
    /// - Returns: The watch, whose stream delivers etcd's messages (or only the end, with a handler).
    /// - Throws: ``EtcdError`` when the request cannot be made (signing in to etcd failed).
    package func watch(
        prefix: Data, fromRevision revision: Int64, idleTimeout: TimeInterval = 30,
        onMessage: (@Sendable (EtcdWatchResult) -> Bool)? = nil
    ) throws -> EtcdWatch {
        let body = EtcdWatchRequest(
            create_request: EtcdWatchCreateRequest(
                key: EtcdBytes(prefix), range_end: EtcdBytes(Self.prefixEnd(prefix)),
                start_revision: EtcdInt64(revision), progress_notify: true))
        let endpoint = preferredEndpoint
        let request = try makeRequest(endpoint, "/v3/watch", body)
        return EtcdWatch(request: request, endpoint: endpoint, idleTimeout: idleTimeout, onMessage: onMessage)
    }

    /// The first key after every key that starts with `prefix`: the prefix with its last byte
    /// that is not 0xff raised by one (etcd's `range_end` for a prefix).
    package static func prefixEnd(_ prefix: Data) -> Data {
        var end = Array(prefix)
        while let last = end.last {
            if last < 0xff {
                end[end.count - 1] = last + 1
                return Data(end)
            }
            end.removeLast()
        }
        return Data([0])  // every key
    }

    // MARK: Calls

    private struct EtcdResponseHeaderOnly: Codable { var header: EtcdResponseHeader? }

    /// A POST to the gateway: where, what, and its headers.
    package struct Request: Sendable {
        package var url: URL
        package var body: Data
        package var headers: [String: String] = [:]
        /// The PEM file TLS trusts; nil for the system's trust store.
        package var certificateAuthorities: String?
        /// The client certificate and key; nil for none.
        package var clientCertificate: (certificate: String, key: String)?
    }

    private func makeRequest<Body: Encodable>(_ endpoint: URL, _ path: String, _ body: Body) throws -> Request {
        var request = Request(
            url: endpoint.appendingPathComponent(path), body: try JSONEncoder().encode(body),
            certificateAuthorities: certificateAuthorities, clientCertificate: clientCertificate)
        // A member without a leader then says so at once ("etcdserver: no leader", gRPC code 14):
        // a watch ends instead of sending progress at a stale revision forever, and a range or a
        // write moves on to the next member instead of waiting 7 s for "request timed out".
        request.headers["Grpc-Metadata-Hasleader"] = "true"
        if let token = try currentToken(endpoint) { request.headers["Authorization"] = token }
        return request
    }

    private func currentToken(_ endpoint: URL) throws -> String? {
        guard let credentials else { return nil }
        if let token = token.withLock({ $0 }) { return token }
        let request = Request(
            url: endpoint.appendingPathComponent("/v3/auth/authenticate"),
            body: try JSONEncoder().encode(
                EtcdAuthenticateRequest(name: credentials.user, password: credentials.password)),
            headers: ["Grpc-Metadata-Hasleader": "true"], certificateAuthorities: certificateAuthorities,
            clientCertificate: clientCertificate)
        let (data, status) = try send(request)
        let answer: EtcdAuthenticateResponse = try decode(data, status)
        guard let fresh = answer.token else {
            throw EtcdError(kind: .malformed, message: "etcd at \(endpoint) answered authenticate without a token")
        }
        token.withLock { $0 = fresh }
        return fresh
    }

    /// One unary call, on the endpoints in turn from the last one that answered; a token etcd no
    /// longer takes is renewed once.
    ///
    /// A member that does not answer, or answers that it has no leader, is left for the next. So
    /// is one that answers "unavailable" for another reason (a request that timed out during an
    /// election), unless the call is not `idempotent`: then its outcome is unknown and the error
    /// is thrown.
    func call<Body: Encodable, Answer: Decodable>(
        _ path: String, _ body: Body, idempotent: Bool = true, timeout: TimeInterval? = nil
    ) throws -> Answer {
        var lastProblem: (any Error)?
        for index in rotation.withLock({ $0.order }) {
            let endpoint = endpoints[index]
            do {
                var renewed = false
                while true {
                    let request = try makeRequest(endpoint, path, body)
                    let (data, status) = try send(request, timeout: timeout)
                    do {
                        let answer: Answer = try decode(data, status)
                        rotation.withLock { $0.answered(index) }
                        return answer
                    } catch let error as EtcdError
                        where !renewed && credentials != nil
                        && (error.kind == .rejected(code: EtcdError.unauthenticated)
                            || error.message.contains("invalid auth token"))
                    {
                        // Simple tokens expire (300 s by default): authenticate again, once.
                        token.withLock { $0 = nil }
                        renewed = true
                    }
                }
            } catch let error as EtcdError where error.kind == .unavailable {
                lastProblem = error
            } catch let error as EtcdError
                where error.kind == .rejected(code: EtcdError.grpcUnavailable)
                && (idempotent || error.message.contains("no leader"))
            {
                lastProblem = EtcdError(
                    kind: .unavailable, message: "etcd at \(endpoint.absoluteString): \(error.message)")
            }
        }
        throw lastProblem ?? EtcdError(kind: .unavailable, message: "no etcd endpoint answered")
    }

    /// Runs one POST on this thread (libcurl blocks), and gives its body and status.
    ///
    /// - Parameters:
    ///   - request: The POST.
    ///   - timeout: The most it may take; nil for the client's request timeout.
    /// - Returns: The response's body and status.
    /// - Throws: ``EtcdError`` (unavailable) when no answer came.
    private func send(_ request: Request, timeout: TimeInterval? = nil) throws -> (Data, Int) {
        var received = Data()
        let post = CurlPost(
            url: request.url, body: request.body, headers: request.headers, timeout: timeout ?? requestTimeout,
            idleTimeout: nil,
            certificateAuthorities: request.certificateAuthorities, clientCertificate: request.clientCertificate
        ) { data, _ in received.append(data) }
        switch post.perform() {
        case .completed(let status):
            return (received, status)
        case .cancelled:
            // Nothing cancels a unary call; were it done, it would be no answer.
            throw EtcdError(
                kind: .unavailable, message: "the call to etcd at \(request.url.absoluteString) was cancelled")
        case .failed(let problem, _):
            throw EtcdError(
                kind: .unavailable,
                message:
                    "etcd at \(request.url.absoluteString) did not answer: \(problem)\(Self.hint(problem, request))")
        }
    }

    /// What to do about a TLS connection a member ended for want of a client certificate. Under
    /// TLS 1.3 the member's refusal (an alert, then the end of the connection) may reach libcurl
    /// as the alert or, when the request was being sent, as a broken connection: the first names
    /// the cause, the second can only suggest it.
    static func hint(_ problem: String, _ request: Request) -> String {
        let refused = ["certificate required", "alert handshake failure", "alert bad certificate"]
        if refused.contains(where: problem.contains) {
            return request.clientCertificate == nil
                ? "; the member asks for a client certificate (etcd's --client-cert-auth): give one and its key"
                : "; the member refused this client certificate: it must be signed by an authority the member "
                    + "trusts (etcd's --trusted-ca-file)"
        }
        let broken = ["Failed sending data to the peer", "Failure when receiving data from the peer"]
        guard request.url.scheme == "https", request.clientCertificate == nil, broken.contains(where: problem.contains)
        else { return "" }
        return "; if the member asks for a client certificate (etcd's --client-cert-auth), give one and its key"
    }

    private func decode<Answer: Decodable>(_ data: Data, _ status: Int) throws -> Answer {
        if status != 200 {
            let body = try? JSONDecoder().decode(EtcdErrorBody.self, from: data)
            throw EtcdError(
                kind: .rejected(code: body?.code),
                message:
                    "etcd answered HTTP \(status): \(body?.message ?? body?.error ?? String(decoding: data, as: UTF8.self))"
            )
        }
        do {
            return try JSONDecoder().decode(Answer.self, from: data)
        } catch {
            throw EtcdError(kind: .malformed, message: "etcd's answer did not decode: \(error)")
        }
    }
}
