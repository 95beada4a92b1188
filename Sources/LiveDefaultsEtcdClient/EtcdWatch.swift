import Foundation
import LiveDefaultsLocking

/// One watch stream of etcd's JSON gateway: its messages in order, until it ends.
///
/// The gateway sends one JSON object per line, over a chunked response that stays open; the
/// stream reads it through libcurl (``CurlPost``) on the process's one transfer thread
/// (``CurlTransferLoop``), which drives every watch of the process. **Every end is a
/// disconnect, never "done"**: a clean end of the response (etcd stopped with SIGTERM), a transport
/// error, the idle timeout, a `canceled` result (a compaction past the start revision, a permission
/// the user lacks) or an in-stream error ("no leader") — after a `canceled` result or an error line
/// the stream ends itself, as etcd leaves the response open.
///
/// A watch made with a message handler calls it on the transfer thread, as each message is read,
/// and its stream carries only the end: no hop to another thread between the bytes and the
/// handler (docs/design.md, "Fleet settings: from the bytes to the observer").
package final class EtcdWatch: Sendable {
    /// The stream's messages: results (events, progress, the creation) in order — none when the
    /// watch has a message handler. It finishes without an error for a clean end and throws
    /// ``EtcdError`` for every other end.
    package let messages: AsyncThrowingStream<EtcdWatchResult, any Error>
    /// The member the stream comes from.
    package let endpoint: URL
    private let continuation: AsyncThrowingStream<EtcdWatchResult, any Error>.Continuation
    private let post: CurlPost
    /// How the stream ended: nil while it runs, then nil inside for a clean end or the error
    /// (set once, by the reading thread or `cancel()`).
    private let finished = WatchEnd()

    /// - Parameters:
    ///   - request: The watch request.
    ///   - endpoint: The member it goes to.
    ///   - idleTimeout: The stream ends when nothing arrives for this long.
    ///   - onMessage: Called with each result on the reading thread, one at a time, in order,
    ///     instead of yielding it to ``messages``; returning false ends the watch (cleanly) at once.
    ///     nil yields the results to ``messages``.
    package init(
        request: EtcdClient.Request, endpoint: URL, idleTimeout: TimeInterval,
        onMessage: (@Sendable (EtcdWatchResult) -> Bool)? = nil
    ) {
        let (messages, continuation) = AsyncThrowingStream<EtcdWatchResult, any Error>.makeStream()
        self.messages = messages
        self.endpoint = endpoint
        self.continuation = continuation
        let reader = LineReader(onMessage: onMessage)
        let finished = self.finished
        let post = CurlPost(
            url: request.url, body: request.body, headers: request.headers, timeout: nil, idleTimeout: idleTimeout,
            certificateAuthorities: request.certificateAuthorities, clientCertificate: request.clientCertificate
        ) { data, status in
            reader.feed(data, status: status, finished: finished, continuation: continuation)
        }
        // Before the reading thread starts, which alone uses the reader from then on.
        reader.post = post
        self.post = post
        continuation.onTermination = { [post] _ in
            post.cancel()
            CurlTransferLoop.shared.wake()
        }
        // Driven by the process's one transfer thread, with every other watch (CurlTransferLoop):
        // no thread of its own.
        CurlTransferLoop.shared.start(post) { outcome in
            let error: (any Error)?
            switch outcome {
            case .completed(200), .cancelled: error = nil
            case .completed(let status):
                error = EtcdError(
                    kind: .rejected(code: reader.errorCode),
                    message: "etcd answered the watch with HTTP \(status): \(reader.errorText)")
            case .failed(let problem, let timedOut):
                error = EtcdError(
                    kind: .unavailable,
                    message: timedOut ? "the watch was idle for \(idleTimeout) s" : "the watch stream broke: \(problem)"
                )
            }
            Self.finish(error, finished: finished, continuation: continuation)
        }
    }

    /// Waits on this thread until the stream ends.
    ///
    /// - Returns: nil for a clean end (or ``cancel()``), else the ``EtcdError`` that ended it.
    package func waitForEnd() -> (any Error)? {
        // No deadline: the stream ends by itself (an idle timeout at the latest).
        guard case .some(.some(let error)) = finished.wait(for: { $0 != nil }) else { return nil }
        return error
    }

    /// Waits on this thread until the stream ends or `deadline` passes.
    ///
    /// - Returns: Whether the stream ended.
    package func waitForEnd(until deadline: ContinuousClock.Instant) -> Bool {
        finished.wait(until: deadline) { $0 != nil } != nil
    }

    /// Whether the stream has ended.
    package var hasEnded: Bool { finished.current != nil }

    /// Waits, holding no thread, until the stream ends or the task is cancelled.
    package func ended() async { await finished.ended() }

    /// Ends the stream (idempotent).
    package func cancel() {
        post.cancel()
        CurlTransferLoop.shared.wake()
        Self.finish(nil, finished: finished, continuation: continuation)
    }

    fileprivate static func finish(
        _ error: (any Error)?, finished: WatchEnd,
        continuation: AsyncThrowingStream<EtcdWatchResult, any Error>.Continuation
    ) {
        let first = finished.update { end -> Bool in
            guard end == nil else { return false }
            end = .some(error)
            return true
        }
        guard first else { return }
        if let error { continuation.finish(throwing: error) } else { continuation.finish() }
        finished.wakeEndWaiters()
    }
}

/// Splits a watch response into lines and each line into a message (on the reading thread only).
private final class LineReader: @unchecked Sendable {
    // Safe as Sendable: used by the one thread that runs the watch's POST.
    private var buffer = Data()
    private var errorBody = Data()
    private let onMessage: (@Sendable (EtcdWatchResult) -> Bool)?
    /// The POST being read, ended when the handler is done with the watch.
    weak var post: CurlPost?

    init(onMessage: (@Sendable (EtcdWatchResult) -> Bool)?) {
        self.onMessage = onMessage
    }

    var errorText: String { String(decoding: errorBody.prefix(500), as: UTF8.self) }
    var errorCode: Int? { (try? JSONDecoder().decode(EtcdErrorBody.self, from: errorBody))?.code }

    func feed(
        _ data: Data, status: Int, finished: WatchEnd,
        continuation: AsyncThrowingStream<EtcdWatchResult, any Error>.Continuation
    ) {
        guard status == 200 else {
            errorBody.append(data)
            return
        }
        buffer.append(data)
        while let newline = buffer.firstIndex(of: 0x0A) {
            let line = buffer[buffer.startIndex..<newline]
            buffer.removeSubrange(buffer.startIndex...newline)
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x0D }) { continue }
            if finished.current != nil { return }
            handle(Data(line), finished: finished, continuation: continuation)
        }
    }

    private func handle(
        _ line: Data, finished: WatchEnd,
        continuation: AsyncThrowingStream<EtcdWatchResult, any Error>.Continuation
    ) {
        let decoded: EtcdWatchLine
        do {
            decoded = try EtcdWatchLineReader.read(line)
        } catch {
            EtcdWatch.finish(
                EtcdError(kind: .malformed, message: "a watch message did not decode: \(error)"), finished: finished,
                continuation: continuation)
            return
        }
        if let error = decoded.error {
            EtcdWatch.finish(
                EtcdError(
                    kind: .rejected(code: error.grpc_code),
                    message: "etcd ended the watch: \(error.message ?? "an error") (HTTP \(error.http_code ?? 0))"),
                finished: finished, continuation: continuation)
            return
        }
        guard let result = decoded.result else { return }
        if let onMessage {
            guard onMessage(result) else {
                // The handler is done with this watch: end it here, before another line is read.
                post?.cancel()
                EtcdWatch.finish(nil, finished: finished, continuation: continuation)
                return
            }
        } else {
            continuation.yield(result)
        }
        if result.canceled == true {
            let reason =
                result.compact_revision.map { "history before revision \($0.value) was compacted" }
                ?? result.cancel_reason ?? "canceled"
            EtcdWatch.finish(
                EtcdError(kind: .rejected(code: nil), message: "etcd canceled the watch: \(reason)"),
                finished: finished,
                continuation: continuation)
        }
    }
}

/// How a watch ended (nil while it runs, then nil inside for a clean end, or the error), for
/// threads that block on it and for tasks that await it.
private final class WatchEnd: Sendable {
    private let value = ConditionValue<(any Error)??>(nil)

    var current: (any Error)?? { value.current }

    @discardableResult
    func update<Result>(_ change: (inout (any Error)??) -> Result) -> Result { value.update(change) }

    func wait(until deadline: ContinuousClock.Instant? = nil, for isDone: ((any Error)??) -> Bool) -> (any Error)??? {
        value.wait(until: deadline, for: isDone)
    }

    /// Tasks waiting for the end (``ended()``), by number; the numbers of those cancelled before
    /// they waited.
    private let endWaiters = Locked<EndWaiters>(EndWaiters())

    private struct EndWaiters {
        var next = 0
        var waiting: [Int: CheckedContinuation<Void, Never>] = [:]
        var cancelledEarly: Set<Int> = []
        var ended = false
    }

    /// Waits, holding no thread, until the stream ends or the task is cancelled.
    func ended() async {
        let number = endWaiters.withLock { waiters -> Int in
            waiters.next += 1
            return waiters.next
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = endWaiters.withLock { waiters -> Bool in
                    if waiters.ended || waiters.cancelledEarly.remove(number) != nil { return true }
                    waiters.waiting[number] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let waiting = endWaiters.withLock { waiters -> CheckedContinuation<Void, Never>? in
                guard let waiting = waiters.waiting.removeValue(forKey: number) else {
                    waiters.cancelledEarly.insert(number)
                    return nil
                }
                return waiting
            }
            waiting?.resume()
        }
        // The cancellation handler cannot run any more: forget a number it left.
        endWaiters.withLock { _ = $0.cancelledEarly.remove(number) }
    }

    func wakeEndWaiters() {
        let waiting = endWaiters.withLock { waiters -> [CheckedContinuation<Void, Never>] in
            waiters.ended = true
            defer { waiters.waiting = [:] }
            return Array(waiters.waiting.values)
        }
        for continuation in waiting { continuation.resume() }
    }
}
