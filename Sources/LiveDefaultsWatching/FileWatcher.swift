import Foundation
import LiveDefaultsLocking

/// Tells the store when a suite file may have changed on disk.
///
/// One watcher serves the whole process (`FileWatcher.shared`, which the library makes): a
/// dedicated thread owns inotify (``InotifyInterface``: libinotifytools, or the kernel's interface
/// in the `KernelInotify` build) and watches the *directories* of the watched files, filtering
/// events by name. A file whose directories do not exist yet is followed too: the nearest existing
/// ancestor is watched for them. When inotify cannot serve (no descriptor below 1024, initialisation
/// fails, the watch limit is reached), the files concerned are polled every ``pollInterval`` and
/// that is reported once, as a ``WatchProblem``, to the watcher's `report` closure.
///
/// `onChange` is called on the watcher's own thread with ``FileChange/mayHaveChanged`` whenever
/// the file's content may have changed, and with ``FileChange/goneForGood`` when its absence
/// counts. A spurious call is harmless — the store compares the file's identity (device, inode,
/// size and times) with the one it last read or wrote, then the bytes — but no change is ever
/// missed:
/// - once right after the watch is in place (its directories are armed, or its first poll),
///   so the store re-checks what happened while watching was being set up;
/// - after the file, or a symbolic link's final target, is closed after writing or moved in;
/// - after any symbolic link on the way to the final target is replaced (the path is resolved
///   again; chains of up to ``WatchedPath/maximumLinkHops`` links, a longer one is reported);
/// - after a directory on the way is armed again (deleted and made again, replaced), when the
///   file is not as the last call saw it;
/// - after a kernel queue overflow (every watched file);
/// - when polling, when `stat` shows a different size, time, inode or device.
///
/// The watcher alone owns the deletion grace: a file that was there and is away is never called
/// for until it has stayed away for ``deletionGrace`` (then once, ``FileChange/goneForGood``),
/// whatever brought the call about: its directory may have been deleted and made again, an editor
/// may be saving (rename to backup, then create: one call, after the new file is closed). A reader
/// would otherwise see every key removed for a moment. A reader told ``FileChange/mayHaveChanged``
/// that finds the file absent all the same (it went after the watcher looked) takes it for no
/// change: the removal's own event starts the grace, and its end calls.
///
/// A write gives a call at once; writes seen before that call is made merge into it. Nothing
/// else is held back here: when to reload is the reader's decision (the store's schedule
/// coalesces reloads). A temporary file or another file in the same directory never gives a call.
///
/// ```swift
/// let watch = FileWatcher.shared.watch(path: url.path) { change in
///     if case .goneForGood = change { forgetValues() } else { scheduleReload() }
/// }
/// // … later
/// watch.cancel()
/// ```
package final class FileWatcher: Sendable {
    /// How a watcher learns about changes.
    package enum Mode: Sendable {
        /// Directory watches through inotify (``InotifyInterface``).
        case inotify
        /// `stat` every ``FileWatcher/pollInterval``.
        case polling
    }

    /// How often the polling fallback looks at a file.
    package static let pollInterval: Duration = .milliseconds(250)
    /// How long a deleted file has to stay absent before the deletion counts.
    package static let deletionGrace: Duration = .milliseconds(100)

    /// Only one watcher per process may use inotify: libinotifytools' state is process-global (and
    /// the kernel build keeps the rule: one inotify thread per process).
    private static let isInotifyClaimed = Locked(false)

    let core: FileWatcherCore

    /// Creates a private watcher, for tests and diagnostics; `FileWatcher.shared` is the one to use.
    ///
    /// - Parameters:
    ///   - forcePolling: `true` for a polling-only watcher. `false` uses inotify only when no other
    ///     watcher in the process does (libinotifytools is process-global) and polls otherwise — so
    ///     do not pass `false` before `FileWatcher.shared` has been used.
    ///   - report: Called with each problem, on the watcher's thread, never under its lock.
    package convenience init(forcePolling: Bool, report: @escaping @Sendable (WatchProblem) -> Void) {
        self.init(usingInotify: !forcePolling, report: report)
    }

    /// Creates a watcher that uses inotify when `usingInotify` and no other watcher in the process
    /// does, and polls otherwise. `report` is called with each problem, on the watcher's thread.
    package init(usingInotify: Bool, report: @escaping @Sendable (WatchProblem) -> Void) {
        let claimed =
            usingInotify
            && Self.isInotifyClaimed.withLock { claimed in
                defer { claimed = true }
                return !claimed
            }
        core = FileWatcherCore(mode: claimed ? .inotify : .polling, report: report)
        core.startDispatcher()
        if claimed, let failure = InotifyThread.start(core: core) {
            core.deliver([.inotifyStopped(reason: failure)])
        } else if usingInotify, !claimed {
            core.deliver([.inotifyStopped(reason: "another watcher in this process already uses inotify")])
        }
    }

    deinit {
        core.shutDown()
    }

    /// How this watcher learns about changes now (it can fall back to polling at any time).
    package var mode: Mode {
        core.registry.withLock { $0.mode }
    }

    /// Watches the file at `path`.
    ///
    /// - Parameters:
    ///   - path: An absolute path (a relative one is taken from the current directory). The file
    ///     need not exist yet; it may be a symbolic link, possibly into another directory — the
    ///     link is re-resolved on every call.
    ///   - onChange: Called on the watcher's thread when the file's content may have changed or
    ///     its absence counts, and once as soon as the watch is in place. It must be quick and must
    ///     not block.
    /// - Returns: The watch; calls stop when it is cancelled or deallocated.
    package func watch(path: String, onChange: @escaping @Sendable (FileChange) -> Void) -> FileWatch {
        let watched = WatchedPath.resolve(path)
        let initial = FileStamp.current(at: watched.path).map(WatchRegistry.Baseline.present) ?? .absent
        let now = FileWatcherCore.now()
        let (identifier, directoriesChanged) = core.registry.withLock {
            $0.add(watched, onChange: onChange, now: now, initial: initial)
        }
        if directoriesChanged { core.wakeInotifyThread() }
        core.signalDispatcher()
        return FileWatch(watcher: self, identifier: identifier)
    }

    /// Runs `action` on the watcher's inotify thread once the call being made on it returns, when
    /// called from such a call; the thread runs it before it reads the next event, with no
    /// hand-off to another thread. Should `action` take longer than 10 ms, a new thread takes
    /// over reading inotify, so that watching is not held up (docs/design.md, "Live reload: the
    /// watcher's threads").
    ///
    /// - Returns: Whether `action` will run so; false (not called on the inotify thread, or it
    ///   stopped reading) leaves it to the caller to run elsewhere.
    package static func runAfterCall(_ action: @escaping @Sendable () -> Void) -> Bool {
        InotifyReader.shared.runAfterCall(action)
    }

    /// Whether the calling thread is the one reading inotify now (for tests: where a call or the
    /// work after it runs).
    package static var isOnInotifyThread: Bool { InotifyReader.shared.isReading }

    /// How many times a new thread took over reading inotify from one held by work run after a
    /// call (``runAfterCall(_:)``), in this process.
    package static var readerTakeovers: Int { InotifyReader.shared.takeovers }

    /// Times the watchdog of work run after a call (``runAfterCall(_:)``) with `timer`, which runs
    /// its action once after the delay, on a thread of its own, and must not block. Without it,
    /// Dispatch's `asyncAfter` does.
    package static func useWatchdogTimer(
        _ timer: @escaping @Sendable (Duration, @escaping @Sendable () -> Void) -> Void
    ) {
        InotifyReader.shared.install(timer: timer)
    }

    /// Stops the calls of one registration.
    func cancel(_ identifier: UInt64) {
        let directoriesChanged = core.registry.withLock { $0.remove(identifier) }
        if directoriesChanged { core.wakeInotifyThread() }
    }
}
