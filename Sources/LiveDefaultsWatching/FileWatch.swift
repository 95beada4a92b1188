import LiveDefaultsLocking

/// One file being watched by a ``FileWatcher``; calls stop when it is cancelled or deallocated.
///
/// The watch keeps its watcher alive. After ``cancel()`` returns no new call starts; a call
/// already running on the watcher's thread finishes.
package final class FileWatch: Sendable {
    private let watcher: FileWatcher
    private let identifier: UInt64
    private let isCancelled = Locked(false)

    init(watcher: FileWatcher, identifier: UInt64) {
        self.watcher = watcher
        self.identifier = identifier
    }

    deinit {
        cancel()
    }

    /// Whether nothing is due or pending for this watch (for tests waiting for it to settle).
    var isQuiet: Bool {
        watcher.core.registry.withLock { $0.isQuiet(identifier) }
    }

    /// Whether the file, which the caller has just found absent, counts as deleted: it has been
    /// away for ``FileWatcher/deletionGrace``. When it does not, a call follows at the end of the
    /// grace if the file is still away, or when it is written back.
    ///
    /// The watcher calls when the file is there, but the caller reads it a moment later: a
    /// directory deleted and made again, or an editor saving, may have taken it away meanwhile.
    package func absenceCounts() -> Bool {
        let now = FileWatcherCore.now()
        let counts = watcher.core.registry.withLock { $0.absenceCounts(identifier, now: now) }
        if !counts { watcher.core.signalDispatcher() }
        return counts
    }

    /// Says that the work of the last call is done (the file was read again): a write seen since
    /// is called for at once instead of at the end of ``FileWatcher/coalescingWindow``, and the
    /// next write is called for at once. Writes that come while the work runs are still gathered
    /// into one call. Calling it when no call was made does nothing.
    package func callFinished() {
        let now = FileWatcherCore.now()
        let due = watcher.core.registry.withLock { $0.callFinished(identifier, now: now) }
        if due { watcher.core.signalDispatcher() }
    }

    /// Stops the calls. Calling it again does nothing.
    package func cancel() {
        let wasCancelled = isCancelled.withLock { cancelled in
            defer { cancelled = true }
            return cancelled
        }
        if !wasCancelled { watcher.cancel(identifier) }
    }
}
