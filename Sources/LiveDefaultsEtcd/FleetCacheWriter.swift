import Dispatch
import Foundation
import LiveDefaults

/// Writes a fleet suite's offline cache (``FleetCache``) off the delivering thread, at most once
/// per ``interval``; saves asked for meanwhile coalesce into one.
///
/// Every change rewriting the cache durably cost each watching process two `fsync`s per change
/// (and a fleet of them the disk's time); the cache only serves a start while etcd is away, and
/// one a few seconds old is as good: its revision and cluster are checked, and the first range
/// gives the net change (docs/design.md, "Fleet settings: the remote store"). A waiting write is
/// made at exit.
///
/// For the same reason the cache is not synced (no `fsync` of the file or its directory): a
/// temporary file renamed over it, so that a reader finds the old cache or the new one whole. A
/// cache lost to a power cut (or left empty by one) is only a slower start, reported once. A save
/// takes no copy of the values: the writer reads the follower's mirror when it writes (so a change
/// costs the follower's thread no copy of a large suite).
final class FleetCacheWriter: Sendable {
    /// The shortest time between two writes of the cache file. Once a second, a write (encoding,
    /// the temporary file, the rename, which on ext4 starts the write-back of the new file) was
    /// about a tenth of the CPU each watching process spent on changes 100 ms apart
    /// (docs/performance.md, "The etcd rows").
    static let interval = Duration.seconds(5)

    private struct State {
        /// Where the values to write come from, once a save was asked for and not yet written.
        var waiting: (any FleetCacheSource)?
        var writtenAt: ContinuousClock.Instant?
        var writes = 0
        var cleanedTemporaryFiles = false
    }

    let file: SuiteFile
    private let suite: FleetSuite
    private let state = Locked(State())
    /// Every cache writer's queue runs on this one: a serial queue of its own would take a thread
    /// of its own while it writes, and the suites of a process that all save at once (at start,
    /// after an outage) took one each (docs/design.md, "Fleet settings: threads and connections").
    private static let sharedQueue = DispatchQueue(label: "LiveDefaultsEtcd.caches")
    private let queue = DispatchQueue(label: "LiveDefaultsEtcd.cache", target: FleetCacheWriter.sharedQueue)

    /// - Parameters:
    ///   - file: The cache file.
    ///   - suite: The suite whose values it keeps (its prefix and endpoints go in the file).
    init(file: SuiteFile, suite: FleetSuite) {
        self.file = file
        self.suite = suite
    }

    /// Saves what `source` holds when the write is made: soon, at once when the last write is older
    /// than ``interval``, else when it is.
    func save(_ source: any FleetCacheSource) {
        let delay = state.withLock { state -> Duration? in
            defer { state.waiting = source }
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
            let (source, cleans) = state.withLock({ state -> ((any FleetCacheSource), Bool)? in
                guard let source = state.waiting else { return nil }
                state.waiting = nil
                state.writtenAt = .now
                state.writes += 1
                defer { state.cleanedTemporaryFiles = true }
                return (source, !state.cleanedTemporaryFiles)
            })
        else { return }
        if cleans { file.removeOrphanedTemporaryFiles() }
        do throws(DefaultsError) {
            try replace(with: try source.cacheContents.encoded(suite: suite))
        } catch {
            DefaultsErrorReporting.report(error)
        }
    }

    /// Replaces the cache file as the suite file is replaced (a temporary file beside it, renamed
    /// over it), but not synced (see the type's comment).
    private func replace(with data: Data) throws(DefaultsError) {
        do throws(DefaultsError) {
            try file.replace(with: data, using: SystemFileOperations(), synced: false)
        } catch {
            throw DefaultsError(
                .writeFailed,
                "Could not write the cache \(file.location.path) of fleet suite \"\(suite.name)\" (\(error.message)); "
                    + "the suite works on, and a start while etcd is away serves an older cache or none.",
                suite: suite.name, path: file.location.path, underlying: error)
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

/// What the cache writer reads when it writes: the values to keep, at their revision.
protocol FleetCacheSource: Sendable {
    var cacheContents: FleetCache { get }
}
