import Dispatch
import LiveDefaults

/// Writes a fleet suite's offline cache (``FleetCache``) off the delivering thread, at most once
/// per ``interval``; saves asked for meanwhile coalesce into the last.
///
/// Every change rewriting the cache durably cost each watching process two `fsync`s per change
/// (and a fleet of them the disk's time); the cache only serves a start while etcd is away, and
/// one up to a second old is as good: its revision and cluster are checked, and the first range
/// gives the net change (docs/design.md, "Fleet settings: the remote store").
final class FleetCacheWriter: Sendable {
    /// The shortest time between two writes of the cache file.
    static let interval = Duration.seconds(1)

    private struct State {
        var waiting: FleetCache?
        var writtenAt: ContinuousClock.Instant?
        var writes = 0
    }

    let file: SuiteFile
    private let suite: FleetSuite
    private let state = Locked(State())
    private let queue = DispatchQueue(label: "LiveDefaultsEtcd.cache")

    /// - Parameters:
    ///   - file: The cache file.
    ///   - suite: The suite whose values it keeps (its prefix and endpoints go in the file).
    init(file: SuiteFile, suite: FleetSuite) {
        self.file = file
        self.suite = suite
    }

    /// Saves `cache` soon: at once when the last write is older than ``interval``, else when it is.
    func save(_ cache: FleetCache) {
        let delay = state.withLock { state -> Duration? in
            defer { state.waiting = cache }
            guard state.waiting == nil else { return nil }  // a write is already on its way
            guard let last = state.writtenAt else { return .zero }
            return max(.zero, Self.interval - last.duration(to: .now))
        }
        guard let delay else { return }
        queue.asyncAfter(deadline: .now() + delay.dispatchInterval) { [self] in writeWaiting() }
    }

    /// Writes the cache asked for last, if any (on `queue`).
    private func writeWaiting() {
        guard
            let cache = state.withLock({ state -> FleetCache? in
                guard let cache = state.waiting else { return nil }
                state.waiting = nil
                state.writtenAt = .now
                state.writes += 1
                return cache
            })
        else { return }
        do throws(DefaultsError) {
            try file.replace(with: try cache.encoded(suite: suite), using: SystemFileOperations())
        } catch {
            DefaultsErrorReporting.report(error)
        }
    }

    /// Writes a waiting cache now, and returns once it is written (at exit).
    func saveNow() {
        queue.sync { writeWaiting() }
    }

    /// Writes a waiting cache now and waits until it is written, without blocking a thread.
    func saved() async {
        await withCheckedContinuation { continuation in
            queue.async { [self] in
                writeWaiting()
                continuation.resume()
            }
        }
    }

    /// How many times the cache file was written.
    var writes: Int { state.withLock { $0.writes } }

    /// What the cache file holds now; nil when there is none.
    func contents() throws(DefaultsError) -> FleetCache? {
        guard let contents = try file.read() else { return nil }
        return try FleetCache(contents.data, suite: suite, path: file.location.path)
    }
}
