import Foundation
import LiveDefaults

/// The streams of ``FleetConnection/stateUpdates()``: each gets every state sent after it was made,
/// the newest 16 kept for a slow reader, until it is dropped or the suite closes.
final class FleetStateUpdates: Sendable {
    private let listeners = Locked<[UUID: AsyncStream<FleetState>.Continuation]>([:])

    /// A stream that starts with `current`.
    func stream(startingWith current: FleetState) -> AsyncStream<FleetState> {
        let (stream, continuation) = AsyncStream<FleetState>.makeStream(bufferingPolicy: .bufferingNewest(16))
        let id = UUID()
        listeners.withLock { $0[id] = continuation }
        continuation.onTermination = { [weak self] _ in
            _ = self?.listeners.withLock { $0.removeValue(forKey: id) }
        }
        continuation.yield(current)
        return stream
    }

    /// Sends `state` to every stream.
    func send(_ state: FleetState) {
        for listener in listeners.withLock({ Array($0.values) }) { listener.yield(state) }
    }

    /// Ends every stream.
    func finish() {
        for listener in listeners.withLock({ Array($0.values) }) { listener.finish() }
    }
}
