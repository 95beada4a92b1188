import Dispatch
import LiveDefaultsWatching

extension Duration {
    /// The duration for Dispatch's deadlines, to the nanosecond (``wholeNanoseconds``).
    package var dispatchInterval: DispatchTimeInterval {
        .nanoseconds(Int(clamping: wholeNanoseconds))
    }

    /// The duration in seconds, for APIs that take a `TimeInterval`.
    package var timeInterval: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
