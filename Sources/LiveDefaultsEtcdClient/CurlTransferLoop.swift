import CCurl
import Foundation
import LiveDefaultsLocking

/// The one thread that drives every long-lived transfer of the process (the watch streams) through
/// libcurl's multi interface (docs/design.md, "Fleet settings: threads and connections").
///
/// A process that follows N fleet suites had a thread per watch, each blocked in its own
/// `curl_easy_perform`; here every stream is a handle in one `CURLM`, polled by one thread, so the
/// threads do not grow with N. The data callbacks (a watch's messages, handled as they are read)
/// run on this thread, one transfer at a time. Other threads add and cancel transfers; a wake-up
/// makes the loop take them at once.
final class CurlTransferLoop: @unchecked Sendable {
    // Safe as Sendable: `multi` and `running` are used only by the loop's thread; `pending` is
    // locked; libcurl's `curl_multi_wakeup` may be called from any thread.

    /// The process's loop, started at its first transfer.
    static let shared = CurlTransferLoop()

    private struct Pending: @unchecked Sendable {
        // Safe as Sendable: handed from the adding thread to the loop's thread once.
        let post: CurlPost
        let onEnd: @Sendable (CurlPost.Outcome) -> Void
    }

    private struct Running {
        let post: CurlPost
        let onEnd: @Sendable (CurlPost.Outcome) -> Void
    }

    private let multi: UnsafeMutableRawPointer?
    private let pending = Locked<(added: [Pending], started: Bool)>(([], false))
    private var running: [UnsafeMutableRawPointer: Running] = [:]

    private init() {
        CurlPost.globalSetUp
        multi = ldcurl_multi_init()
    }

    /// How many transfers the loop drives now (for tests and the benchmark).
    var activeCount: Int { pending.withLock { $0.added.count } + runningCount.withLock { $0 } }
    private let runningCount = Locked(0)

    /// Starts `post` on the loop's thread; `onEnd` gets its outcome there, once: the response
    /// ended, failed, or ``CurlPost/cancel()`` was called (taken within the poll interval, at
    /// once after ``wake()``).
    func start(_ post: CurlPost, onEnd: @escaping @Sendable (CurlPost.Outcome) -> Void) {
        guard let multi else {
            onEnd(.failed(CurlPost.unavailable, timedOut: false))
            return
        }
        let startThread = pending.withLock { state -> Bool in
            state.added.append(Pending(post: post, onEnd: onEnd))
            defer { state.started = true }
            return !state.started
        }
        if startThread {
            let thread = Thread { [self] in
                // Named for ps, top and the tests (15 bytes at most).
                nameThisThread("ld-etcd-xfer")
                run()
            }
            thread.start()
        } else {
            ldcurl_multi_wakeup(multi)
        }
    }

    /// Makes the loop look at once at new transfers and cancelled ones.
    func wake() {
        guard let multi else { return }
        ldcurl_multi_wakeup(multi)
    }

    /// Per TLS origin, the transfer whose connection is being set up (not yet answered), and the
    /// transfers to that origin held back until it is (loop thread only).
    private var connecting: [String: UnsafeMutableRawPointer] = [:]
    private var held: [String: [Pending]] = [:]

    /// The most streams libcurl puts on one HTTP/2 connection before it opens another (its default
    /// is 100; etcd takes 2³²−1 on a stream by default, `--max-concurrent-streams`).
    static let streamsPerConnection = 1_000

    private func run() {
        guard let multi else { return }
        let handle = multi
        ldcurl_multi_setopt_long(handle, CURLMOPT_MAX_CONCURRENT_STREAMS, Self.streamsPerConnection)
        while true {
            for added in pending.withLock({ state in
                defer { state.added = [] }
                return state.added
            }) {
                admit(added)
            }
            // Cancelled transfers end here, without waiting for their next byte.
            for (easy, transfer) in running where transfer.post.isCancelled {
                end(easy, result: CURLE_ABORTED_BY_CALLBACK)
            }
            for (origin, waiting) in held {
                let (cancelled, kept) = (waiting.filter(\.post.isCancelled), waiting.filter { !$0.post.isCancelled })
                held[origin] = kept.isEmpty ? nil : kept
                for transfer in cancelled { transfer.onEnd(.cancelled) }
            }
            releaseAnswered()
            runningCount.withLock { $0 = running.count + held.values.reduce(0) { $0 + $1.count } }
            var active: Int32 = 0
            ldcurl_multi_perform(handle, &active)
            var easy: UnsafeMutableRawPointer?
            var result = CURLE_OK
            while ldcurl_multi_next_done(handle, &easy, &result) != 0, let done = easy {
                end(done, result: result)
            }
            releaseAnswered()
            // Woken by a new or cancelled transfer, by data, or by libcurl's own timers (the idle
            // timeout); at most a second, so that a cancellation is never left longer.
            ldcurl_multi_poll(handle, 1000)
        }
    }

    /// Starts `added` now, or holds it while a connection to its TLS origin is being set up.
    ///
    /// Over TLS, libcurl learns whether a connection multiplexes (HTTP/2, by ALPN) only at the end
    /// of its handshake; a transfer added before then opens a connection of its own, so a process
    /// whose suites all started watching at once (its start, a member's restart) held a connection
    /// per watch. The first transfer to an origin goes alone; the others wait until it has an
    /// answer (its connection is up and libcurl knows it multiplexes) or has ended, then join its
    /// connection as streams. Not `CURLOPT_PIPEWAIT`: libcurl 7.88 parks such a transfer until
    /// some transfer of the multi handle ends, and takes up one parked transfer at a time — a watch
    /// never ends, so a waiting watch could wait for ever (docs/design.md, "Fleet settings: threads
    /// and connections"). Plain `http://` transfers are never held: etcd's gateway serves only
    /// HTTP/1.1 there, a connection per watch.
    private func admit(_ added: Pending) {
        guard let origin = added.post.tlsOrigin else {
            launch(added)
            return
        }
        if connecting[origin] != nil {
            held[origin, default: []].append(added)
            return
        }
        let answered = running.values.contains { $0.post.tlsOrigin == origin && $0.post.receivedStatus != 0 }
        if let easy = launch(added), !answered { connecting[origin] = easy }
    }

    /// Lets the held transfers of each origin go, onto its connection, once its connecting
    /// transfer has an answer.
    private func releaseAnswered() {
        for (origin, easy) in connecting where (running[easy]?.post.receivedStatus ?? 0) != 0 {
            connecting[origin] = nil
            for next in held.removeValue(forKey: origin) ?? [] { launch(next) }
        }
    }

    /// The connecting transfer to `origin` ended without an answer: the next held one tries alone.
    private func promoteNext(_ origin: String) {
        guard var waiting = held.removeValue(forKey: origin) else { return }
        while !waiting.isEmpty {
            if let started = launch(waiting.removeFirst()) {
                connecting[origin] = started
                if !waiting.isEmpty { held[origin] = waiting }
                return
            }
        }
    }

    /// Adds `added` to the multi handle; its easy handle, or nil when none could be made.
    @discardableResult
    private func launch(_ added: Pending) -> UnsafeMutableRawPointer? {
        guard let multi, let easy = ldcurl_easy_init() else {
            added.onEnd(.failed(CurlPost.unavailable, timedOut: false))
            return nil
        }
        added.post.configure(easy)
        running[easy] = Running(post: added.post, onEnd: added.onEnd)
        ldcurl_multi_add(multi, easy)
        return easy
    }

    private func end(_ easy: UnsafeMutableRawPointer, result: CURLcode) {
        guard let multi, let transfer = running.removeValue(forKey: easy) else { return }
        ldcurl_multi_remove(multi, easy)
        let outcome = transfer.post.finish(easy, result: result)
        ldcurl_easy_cleanup(easy)
        // Forgotten before its handle's address can be reused by another transfer.
        if let origin = transfer.post.tlsOrigin, connecting[origin] == easy {
            connecting[origin] = nil
            promoteNext(origin)
        }
        transfer.onEnd(outcome)
    }
}

/// Names the calling thread as `ps`, `top` and `/proc/self/task/*/comm` show it (15 bytes at most):
/// the threads fleet suites share are told apart by name (docs/design.md, "Fleet settings: threads
/// and connections").
package func nameThisThread(_ name: String) {
    ldcurl_name_this_thread(name)
}
