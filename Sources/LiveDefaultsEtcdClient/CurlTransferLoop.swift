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

    private func run() {
        guard let multi else { return }
        let handle = multi
        while true {
            for added in pending.withLock({ state in
                defer { state.added = [] }
                return state.added
            }) {
                guard let easy = ldcurl_easy_init() else {
                    added.onEnd(.failed(CurlPost.unavailable, timedOut: false))
                    continue
                }
                added.post.configure(easy)
                // No CURLOPT_PIPEWAIT: libcurl 7.88 parks such a transfer while a connection to
                // the member has not yet said whether it multiplexes, and takes it up again only
                // when some transfer of this multi handle ends — a watch never does, so the watch
                // started second waited for the first one's end (docs/design.md, "Threads and
                // connections"). Once a member's HTTP/2 connection is up, libcurl adds each new
                // watch to it as a stream without the option.
                running[easy] = Running(post: added.post, onEnd: added.onEnd)
                ldcurl_multi_add(handle, easy)
            }
            // Cancelled transfers end here, without waiting for their next byte.
            for (easy, transfer) in running where transfer.post.isCancelled {
                end(easy, result: CURLE_ABORTED_BY_CALLBACK)
            }
            runningCount.withLock { $0 = running.count }
            var active: Int32 = 0
            ldcurl_multi_perform(handle, &active)
            var easy: UnsafeMutableRawPointer?
            var result = CURLE_OK
            while ldcurl_multi_next_done(handle, &easy, &result) != 0, let done = easy {
                end(done, result: result)
            }
            // Woken by a new or cancelled transfer, by data, or by libcurl's own timers (the idle
            // timeout); at most a second, so that a cancellation is never left longer.
            ldcurl_multi_poll(handle, 1000)
        }
    }

    private func end(_ easy: UnsafeMutableRawPointer, result: CURLcode) {
        guard let multi, let transfer = running.removeValue(forKey: easy) else { return }
        ldcurl_multi_remove(multi, easy)
        let outcome = transfer.post.finish(easy, result: result)
        ldcurl_easy_cleanup(easy)
        transfer.onEnd(outcome)
    }
}

/// Names the calling thread as `ps`, `top` and `/proc/self/task/*/comm` show it (15 bytes at most):
/// the threads fleet suites share are told apart by name (docs/design.md, "Fleet settings: threads
/// and connections").
package func nameThisThread(_ name: String) {
    ldcurl_name_this_thread(name)
}
