import Foundation

/// How heavy the stress and fault tests run, from `LIVEDEFAULTS_STRESS`:
/// - unset: the quick size each heavy test names, so that a plain `swift test` takes under a minute
///   on 2 cores;
/// - `1`: the full counts and durations, which CI runs once each (`.ci/run` sets it for the thread
///   sanitizer's run and for the end-to-end suites that run has not, of those whose file calls
///   ``scaled(_:quick:)``: call it in the suite's own file, or CI runs the suite at its quick size only);
/// - `<factor>`: the full counts and durations multiplied by the factor (kills, keys, threads'
///   running time, stores opened).
public enum Stress {
    /// The factor asked for; nil when `LIVEDEFAULTS_STRESS` is unset (a quick run).
    public static let requested: Int? = Int(ProcessInfo.processInfo.environment["LIVEDEFAULTS_STRESS"] ?? "").map {
        max(1, $0)
    }

    /// The multiplier of the full counts, at least 1 (1 in a quick run).
    public static let factor: Int = requested ?? 1

    /// `count` multiplied by ``factor``, in every run.
    public static func scaled(_ count: Int) -> Int { count * factor }

    /// `count` multiplied by ``factor`` when `LIVEDEFAULTS_STRESS` is set; `quick` when it is not.
    public static func scaled(_ count: Int, quick: Int) -> Int {
        requested.map { count * $0 } ?? quick
    }
}
