import Foundation

/// How much heavier the stress and fault tests run: `LIVEDEFAULTS_STRESS=<factor>` multiplies their
/// counts and durations (kills, keys, threads' running time, stores opened); unset, they run at the
/// size CI can afford.
public enum Stress {
    /// The multiplier, at least 1.
    public static let factor: Int = max(1, Int(ProcessInfo.processInfo.environment["LIVEDEFAULTS_STRESS"] ?? "") ?? 1)

    /// `count` multiplied by ``factor``.
    public static func scaled(_ count: Int) -> Int { count * factor }
}
