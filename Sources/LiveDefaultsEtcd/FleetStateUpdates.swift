import Foundation
import LiveDefaults

/// The streams of ``FleetConnection/stateUpdates()``: each gets every state sent after it was made,
/// the newest 16 kept for a slow reader, until it is dropped or the suite closes.
final class FleetStateUpdates: Sendable {
    private let listeners = Locked<[UUID: AsyncStream<FleetState>.Continuation]>([:])

    /// A stream that starts with the state `current` gives once the stream is registered: a state
    /// sent meanwhile is then not missed (a stream that started with the state before it, and
    /// was registered after it was sent, waited for a change that had already come).
    func stream(startingWith current: () -> FleetState) -> AsyncStream<FleetState> {
        let (stream, continuation) = AsyncStream<FleetState>.makeStream(bufferingPolicy: .bufferingNewest(16))
        let id = UUID()
        continuation.onTermination = { [weak self] _ in
            _ = self?.listeners.withLock { $0.removeValue(forKey: id) }
        }
        listeners.withLock { listeners in
            listeners[id] = continuation
            // Under the lock that `send` yields under: nothing sent comes before it.
            continuation.yield(current())
        }
        return stream
    }

    /// Sends `state` to every stream.
    func send(_ state: FleetState) {
        listeners.withLock { listeners in
            for listener in listeners.values { listener.yield(state) }
        }
    }

    /// Ends every stream.
    func finish() {
        for listener in listeners.withLock({ Array($0.values) }) { listener.finish() }
    }
}
