import Foundation
import LiveDefaults

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One watch stream of etcd's JSON gateway: its messages in order, until it ends.
///
/// The gateway sends one JSON object per line, over a chunked response that stays open. The
/// stream reads it through a `URLSessionDataDelegate` (FoundationNetworking has no `bytes(for:)`).
/// **Every end is a disconnect, never "done"**: a clean end of the response (etcd stopped with
/// SIGTERM), a transport error, the idle timeout, a `canceled` result (a compaction past the start
/// revision, a permission the user lacks) or an in-stream error ("no leader") — after a
/// `canceled` result or an error line the stream ends itself, as etcd leaves the response open.
final class EtcdWatch: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // Safe as Sendable: `buffer` and `finished` are touched only on `delegateQueue`, which is
    // serial; the continuation and the task are safe from any thread.

    /// The stream's messages: results (events, progress, the creation) in order. It finishes
    /// without an error for a clean end and throws ``EtcdError`` for every other end.
    let messages: AsyncThrowingStream<EtcdWatchResult, any Error>
    private let continuation: AsyncThrowingStream<EtcdWatchResult, any Error>.Continuation
    private let delegateQueue: OperationQueue
    private var session: URLSession!
    private var task: URLSessionDataTask?
    private var buffer = Data()
    private var finished = false

    init(request: URLRequest, idleTimeout: TimeInterval) {
        (messages, continuation) = AsyncThrowingStream.makeStream()
        delegateQueue = OperationQueue()
        delegateQueue.maxConcurrentOperationCount = 1
        super.init()
        let configuration = URLSessionConfiguration.ephemeral
        // The time allowed between two pieces of the response: the idle timeout.
        configuration.timeoutIntervalForRequest = idleTimeout
        configuration.timeoutIntervalForResource = .infinity
        session = URLSession(configuration: configuration, delegate: self, delegateQueue: delegateQueue)
        let task = session.dataTask(with: request)
        self.task = task
        continuation.onTermination = { [weak self] _ in self?.cancel() }
        task.resume()
    }

    /// Ends the stream (idempotent).
    func cancel() {
        delegateQueue.addOperation { [self] in finish(nil) }
    }

    private func finish(_ error: (any Error)?) {
        guard !finished else { return }
        finished = true
        if let error { continuation.finish(throwing: error) } else { continuation.finish() }
        task?.cancel()
        session.invalidateAndCancel()
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        if status != 200 {
            finish(EtcdError(kind: .rejected(code: nil), message: "etcd answered the watch with HTTP \(status)"))
            completionHandler(.cancel)
            return
        }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard !finished else { return }
        buffer.append(data)
        while let newline = buffer.firstIndex(of: 0x0A) {
            let line = buffer[buffer.startIndex..<newline]
            buffer.removeSubrange(buffer.startIndex...newline)
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x0D }) { continue }
            handle(Data(line))
            if finished { return }
        }
    }

    private func handle(_ line: Data) {
        let decoded: EtcdWatchLine
        do {
            decoded = try JSONDecoder().decode(EtcdWatchLine.self, from: line)
        } catch {
            finish(EtcdError(kind: .malformed, message: "a watch message did not decode: \(error)"))
            return
        }
        if let error = decoded.error {
            finish(
                EtcdError(
                    kind: .rejected(code: error.grpc_code),
                    message: "etcd ended the watch: \(error.message ?? "an error") (HTTP \(error.http_code ?? 0))"))
            return
        }
        guard let result = decoded.result else { return }
        continuation.yield(result)
        if result.canceled == true {
            let reason =
                result.compact_revision.map { "history before revision \($0.value) was compacted" }
                ?? result.cancel_reason ?? "canceled"
            finish(EtcdError(kind: .rejected(code: nil), message: "etcd canceled the watch: \(reason)"))
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        if let error {
            finish(EtcdError(kind: .unavailable, message: "the watch stream broke: \(error.localizedDescription)"))
        } else {
            finish(nil)
        }
    }
}
