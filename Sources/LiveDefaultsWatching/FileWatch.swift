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

    /// Stops the calls. Calling it again does nothing.
    package func cancel() {
        let wasCancelled = isCancelled.withLock { cancelled in
            defer { cancelled = true }
            return cancelled
        }
        if !wasCancelled { watcher.cancel(identifier) }
    }
}
