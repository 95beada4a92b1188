import CCurl
import Foundation
import LiveDefaultsLocking
import Synchronization

/// One HTTP POST through libcurl: a unary call on the calling thread (``perform()``, which blocks),
/// or a stream driven by the process's one transfer thread (``CurlTransferLoop``).
///
/// Not FoundationNetworking: etcd's gateway answers a failed call with a chunked body and an HTTP
/// trailer, and FoundationNetworking stops the process on a trailer (docs/design.md, "Fleet
/// settings: the etcd gateway"). libcurl reads it as HTTP/1.1 says, keeps TLS with the system trust
/// store, and streams a watch's response as it arrives.
///
/// Unary calls take their libcurl handle from a small pool (``CurlHandlePool``) and give it back:
/// a handle keeps its connections open, so a process's calls to one member reuse a few
/// connections instead of opening one each (docs/design.md, "Fleet settings: threads and
/// connections").
final class CurlPost: @unchecked Sendable {
    // Safe as Sendable: `headerList`, `currentHandle` and the error buffer are touched only by the
    // thread running the transfer (the caller of `perform()`, or the transfer thread); `cancelled`
    // is atomic.

    /// How a POST ended.
    enum Outcome: Sendable {
        /// The whole response arrived; its status.
        case completed(status: Int)
        /// ``cancel()`` ended it.
        case cancelled
        /// No answer, a broken connection, or nothing received for the idle time.
        case failed(String, timedOut: Bool)
    }

    /// Why a call could not start: libcurl is loaded at the first call (Sources/CCurl/shim.h).
    static var unavailable: String {
        ldcurl_available() != 0
            ? "libcurl could not start a call" : "libcurl (libcurl.so.4, Debian's libcurl4) could not be loaded"
    }

    static let globalSetUp: Void = { ldcurl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()

    private let url: String
    private let body: Data
    private let headers: [String]
    private let timeout: TimeInterval?
    private let idleTimeout: TimeInterval?
    private let certificateAuthorities: String?
    private let clientCertificate: (certificate: String, key: String)?
    private let onData: (Data, Int) -> Void
    private let cancelled = Atomic<Bool>(false)
    /// libcurl's own words for a failure (the TLS alert, the certificate), beside its code's.
    private let detail = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
    private var headerList: UnsafeMutablePointer<curl_slist>?

    /// - Parameters:
    ///   - url: Where to post.
    ///   - body: The request's body.
    ///   - headers: Extra request headers, by name.
    ///   - timeout: The most the whole call may take; nil for none (a watch).
    ///   - idleTimeout: The call fails when nothing arrives for this long; nil for none.
    ///   - certificateAuthorities: A PEM file of the certificate authorities TLS trusts; nil for the
    ///     system's trust store (libcurl's default bundle).
    ///   - clientCertificate: PEM files of the certificate and key this client shows a member
    ///     started with `--client-cert-auth`; nil for none.
    ///   - onData: Each piece of the response body as it arrives, with the response's status.
    init(
        url: URL, body: Data, headers: [String: String], timeout: TimeInterval?, idleTimeout: TimeInterval?,
        certificateAuthorities: String? = nil, clientCertificate: (certificate: String, key: String)? = nil,
        onData: @escaping (Data, Int) -> Void
    ) {
        self.url = url.absoluteString
        if url.scheme?.lowercased() == "https", let host = url.host {
            tlsOrigin = "https://\(host.lowercased()):\(url.port ?? 443)"
        } else {
            tlsOrigin = nil
        }
        self.body = body
        self.headers = headers.map { "\($0.key): \($0.value)" } + ["Content-Type: application/json", "Expect:"]
        self.timeout = timeout
        self.idleTimeout = idleTimeout
        self.certificateAuthorities = certificateAuthorities
        self.clientCertificate = clientCertificate
        self.onData = onData
        detail.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
    }

    deinit {
        ldcurl_slist_free_all(headerList)
        detail.deallocate()
    }

    /// Where the call goes when it is over TLS (`https://host:port`), else nil: the transfers to one
    /// TLS origin share one HTTP/2 connection (``CurlTransferLoop``).
    let tlsOrigin: String?

    /// The response's status once its headers arrived, else 0 (on the thread running the transfer).
    var receivedStatus: Int { status }

    /// Ends the call from another thread, soon.
    func cancel() { cancelled.store(true, ordering: .relaxed) }

    /// Whether ``cancel()`` was called.
    var isCancelled: Bool { cancelled.load(ordering: .relaxed) }

    /// Runs the call on this thread until it ends, on a handle of the pool.
    func perform() -> Outcome {
        Self.globalSetUp
        guard let handle = CurlHandlePool.shared.take() else { return .failed(Self.unavailable, timedOut: false) }
        configure(handle)
        let result = ldcurl_easy_perform(handle)
        let outcome = finish(handle, result: result)
        CurlHandlePool.shared.give(handle)
        return outcome
    }

    /// Sets the call's options on `handle` (fresh, or reset), to be run by `perform()` or the
    /// transfer thread. The handle refers to this object until ``finish(_:result:)``.
    func configure(_ handle: UnsafeMutableRawPointer) {
        var list: UnsafeMutablePointer<curl_slist>?
        for header in headers { list = ldcurl_slist_append(list, header) }
        headerList = list
        let context = Unmanaged.passUnretained(self).toOpaque()
        ldcurl_setopt_string(handle, CURLOPT_URL, url)
        ldcurl_setopt_long(handle, CURLOPT_POST, 1)
        body.withUnsafeBytes { bytes in
            ldcurl_setopt_large(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(bytes.count))
            // Copied by libcurl: the transfer may outlive this call.
            ldcurl_setopt_pointer(
                handle, CURLOPT_COPYPOSTFIELDS,
                UnsafeMutableRawPointer(mutating: bytes.baseAddress ?? UnsafeRawPointer(detail)))
        }
        ldcurl_setopt_pointer(handle, CURLOPT_HTTPHEADER, UnsafeMutableRawPointer(list))
        ldcurl_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
        ldcurl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, 5_000)
        if let certificateAuthorities { ldcurl_setopt_string(handle, CURLOPT_CAINFO, certificateAuthorities) }
        if let clientCertificate {
            ldcurl_setopt_string(handle, CURLOPT_SSLCERT, clientCertificate.certificate)
            ldcurl_setopt_string(handle, CURLOPT_SSLKEY, clientCertificate.key)
        }
        if let timeout { ldcurl_setopt_long(handle, CURLOPT_TIMEOUT_MS, Int(timeout * 1000)) }
        if let idleTimeout {
            // Less than one byte a second for the idle time: the connection is idle.
            ldcurl_setopt_long(handle, CURLOPT_LOW_SPEED_LIMIT, 1)
            ldcurl_setopt_long(handle, CURLOPT_LOW_SPEED_TIME, max(1, Int(idleTimeout.rounded(.up))))
        }
        ldcurl_setopt_write(handle) { data, size, count, context in
            guard let data, let context else { return 0 }
            let post = Unmanaged<CurlPost>.fromOpaque(context).takeUnretainedValue()
            let length = size * count
            post.onData(Data(bytes: data, count: length), post.status)
            return post.cancelled.load(ordering: .relaxed) ? 0 : length
        }
        ldcurl_setopt_pointer(handle, CURLOPT_WRITEDATA, context)
        ldcurl_setopt_long(handle, CURLOPT_NOPROGRESS, 0)
        ldcurl_setopt_progress(handle) { context, _, _, _, _ in
            guard let context else { return 0 }
            return Unmanaged<CurlPost>.fromOpaque(context).takeUnretainedValue().cancelled.load(ordering: .relaxed)
                ? 1 : 0
        }
        ldcurl_setopt_pointer(handle, CURLOPT_XFERINFODATA, context)
        ldcurl_setopt_pointer(handle, CURLOPT_ERRORBUFFER, UnsafeMutableRawPointer(detail))
        currentHandle = handle
    }

    /// How the transfer on `handle` ended, given libcurl's `result`; the handle no longer refers
    /// to this object after.
    func finish(_ handle: UnsafeMutableRawPointer, result: CURLcode) -> Outcome {
        defer {
            ldcurl_setopt_pointer(handle, CURLOPT_ERRORBUFFER, nil)
            currentHandle = nil
            ldcurl_slist_free_all(headerList)
            headerList = nil
        }
        if cancelled.load(ordering: .relaxed) { return .cancelled }
        if result == CURLE_OK { return .completed(status: ldcurl_response_code(handle)) }
        var message = String(cString: ldcurl_easy_strerror(result))
        let said = String(cString: detail)
        if !said.isEmpty && said != message { message += " (\(said))" }
        return .failed(message, timedOut: result == CURLE_OPERATION_TIMEDOUT)
    }

    /// The handle while the transfer runs (read by the write callback on the same thread).
    private var currentHandle: UnsafeMutableRawPointer?
    private var status: Int { currentHandle.map { ldcurl_response_code($0) } ?? 0 }
}

/// The libcurl handles unary calls run on, kept between calls with their open connections (a few:
/// as many as calls ran at once, at most ``capacity`` kept).
final class CurlHandlePool: Sendable {
    static let shared = CurlHandlePool()
    /// The most idle handles kept; a call beyond them gets a fresh handle, closed after it.
    static let capacity = 8

    private struct Handle: @unchecked Sendable {
        // Safe as Sendable: a handle is used by one thread at a time (taken, then given back).
        let pointer: UnsafeMutableRawPointer
    }

    private let idle = Locked<[Handle]>([])

    /// An idle handle, reset (its connections kept), or a new one; nil when libcurl cannot be
    /// loaded.
    func take() -> UnsafeMutableRawPointer? {
        if let handle = idle.withLock({ $0.popLast() }) {
            ldcurl_easy_reset(handle.pointer)
            return handle.pointer
        }
        return ldcurl_easy_init()
    }

    /// Gives `handle` back after its call, or closes it when the pool is full.
    func give(_ handle: UnsafeMutableRawPointer) {
        let kept = idle.withLock { idle -> Bool in
            guard idle.count < Self.capacity else { return false }
            idle.append(Handle(pointer: handle))
            return true
        }
        if !kept { ldcurl_easy_cleanup(handle) }
    }
}
