extension Duration {
    /// The duration in whole nanoseconds, negative durations counting as zero: the one conversion
    /// the watcher's deadlines, the store's timer and Dispatch's deadlines all use.
    package var wholeNanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0, attoseconds >= 0 else { return 0 }
        return UInt64(seconds) &* 1_000_000_000 &+ UInt64(attoseconds / 1_000_000_000)
    }
}
