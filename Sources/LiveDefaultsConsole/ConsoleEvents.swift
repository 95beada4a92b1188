import Foundation
import LiveDefaults

/// One page's stream of server-sent events: what the broadcaster pushes, taken by the connection's thread.
package final class ConsoleSubscription: @unchecked Sendable {
    // Guarded by `condition`.
    private let condition = NSCondition()
    private var pending = Data()
    private var isCancelled = false
    private var lastSent = Date()
    private let onCancel: @Sendable (ConsoleSubscription) -> Void

    /// A comment sent when nothing else has been for this long, so that a closed page is noticed and
    /// a proxy does not close the stream.
    static let keepAlive: TimeInterval = 15

    init(onCancel: @escaping @Sendable (ConsoleSubscription) -> Void) {
        self.onCancel = onCancel
    }

    /// Queues `bytes` for the page.
    func push(_ bytes: Data) {
        condition.lock()
        pending.append(bytes)
        condition.signal()
        condition.unlock()
    }

    /// The next bytes for the page, at most `maximum`, waiting for some (at most ``keepAlive``, then a comment);
    /// nil once the stream is over.
    package func next(maximum: Int) -> Data? {
        condition.lock()
        defer { condition.unlock() }
        while pending.isEmpty && !isCancelled {
            if Date().timeIntervalSince(lastSent) >= Self.keepAlive {
                pending.append(Data(": keep-alive\n\n".utf8))
                break
            }
            _ = condition.wait(until: Date().addingTimeInterval(1))
        }
        guard !isCancelled else { return nil }
        let count = min(maximum, pending.count)
        let bytes = pending.prefix(count)
        pending.removeFirst(count)
        lastSent = Date()
        return Data(bytes)
    }

    /// Ends the stream (the page went away, or the console stops).
    package func cancel() {
        condition.lock()
        let wasCancelled = isCancelled
        isCancelled = true
        condition.broadcast()
        condition.unlock()
        if !wasCancelled { onCancel(self) }
    }
}

/// Sends each event to every open page, numbered: a page that reconnects takes a snapshot, whose version
/// says which events it already holds (docs/console.md, "Live").
package final class ConsoleBroadcaster: Sendable {
    private struct State {
        var version: Int64 = 0
        var subscribers: [ObjectIdentifier: ConsoleSubscription] = [:]
        var isClosed = false
    }

    private let state = Locked(State())

    package init() {}

    /// The number of the last event sent.
    package var version: Int64 { state.withLock { $0.version } }

    /// The number of open streams.
    package var subscriberCount: Int { state.withLock { $0.subscribers.count } }

    /// A new page's stream; its first event, `hello`, carries the current version.
    package func subscribe() -> ConsoleSubscription {
        let subscription = ConsoleSubscription { [weak self] gone in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: ObjectIdentifier(gone)) }
        }
        let closed = state.withLock { state -> Bool in
            guard !state.isClosed else { return true }
            state.subscribers[ObjectIdentifier(subscription)] = subscription
            // The browser reconnects a second after the stream breaks, then takes a snapshot (docs/console.md).
            subscription.push(Data("retry: 1000\n\n".utf8) + Self.encode("hello", ["version": .integer(state.version)]))
            return false
        }
        if closed { subscription.cancel() }
        return subscription
    }

    /// Numbers an event and sends it to every page: `make` gets the event's version and gives its data.
    package func publish(_ event: String, _ make: (Int64) -> ConsoleJSON) {
        state.withLock { state in
            guard !state.isClosed else { return }
            state.version += 1
            var data = make(state.version)
            data["version"] = .integer(state.version)
            data["event"] = .string(event)
            let bytes = Self.encode(event, data)
            for subscriber in state.subscribers.values { subscriber.push(bytes) }
        }
    }

    /// Ends every stream.
    package func close() {
        let subscribers = state.withLock { state in
            state.isClosed = true
            return Array(state.subscribers.values)
        }
        for subscriber in subscribers { subscriber.cancel() }
    }

    /// One event in the stream's format: its name, and its data as one line of JSON.
    static func encode(_ event: String, _ data: ConsoleJSON) -> Data {
        Data("event: \(event)\ndata: \(data.text)\n\n".utf8)
    }
}
