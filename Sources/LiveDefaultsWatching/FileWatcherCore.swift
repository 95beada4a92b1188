import Dispatch
import Foundation
import LiveDefaultsLocking

/// The state of one ``FileWatcher`` and its dispatcher thread.
///
/// Two threads serve a watcher that uses inotify: the inotify thread (``InotifyThread``) owns
/// every call into libinotifytools and turns kernel events into ``WatchRegistry/Event``s, and
/// makes the calls an event makes due now; the dispatcher thread owns time — the deletion grace,
/// polling — and makes the timed calls, and the due ones while it is busy. Calls are made one at
/// a time (`performing`), never under the registry's lock (docs/design.md, "Live reload: the
/// watcher's threads"). A polling-only watcher has just the dispatcher.
final class FileWatcherCore: Sendable {
    let registry: Locked<WatchRegistry>
    /// Wakes the dispatcher thread early; `isDispatcherSignalled` keeps the count small.
    private let dispatcherWakeUp = DispatchSemaphore(value: 0)
    /// Held while due work is taken and performed, by whichever thread performs it: calls are
    /// never made two at a time, and a watch's calls are made in the order the work was taken.
    private let performing = NSLock()
    /// How other threads wake the inotify thread; `nil` when there is none (polling).
    let inotifyWakeChannel = Locked<InotifyWakeChannel?>(nil)
    /// Where problems go, on the dispatcher thread (see ``FileWatcher/init(usingInotify:report:)``).
    private let report: @Sendable (WatchProblem) -> Void

    init(mode: FileWatcher.Mode, report: @escaping @Sendable (WatchProblem) -> Void) {
        self.report = report
        registry = Locked(
            WatchRegistry(
                mode: mode, deletionGrace: FileWatcher.deletionGrace, pollInterval: FileWatcher.pollInterval))
    }

    /// Now, on the clock every deadline uses.
    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    // MARK: Talking to the threads

    /// Starts the dispatcher thread; it runs until ``shutDown()``.
    func startDispatcher() {
        let thread = Thread { [self] in runDispatcher() }
        thread.name = "LiveDefaults.FileWatcher.dispatch"
        thread.start()
    }

    /// Stops the dispatcher thread (the inotify thread of the shared watcher never stops).
    func shutDown() {
        registry.withLock { $0.isShutDown = true }
        dispatcherWakeUp.signal()
    }

    /// Makes the dispatcher look at the registry now.
    func signalDispatcher() {
        let shouldSignal = registry.withLock { registry in
            defer { registry.isDispatcherSignalled = true }
            return !registry.isDispatcherSignalled
        }
        if shouldSignal { dispatcherWakeUp.signal() }
    }

    /// Makes the inotify thread look at the wanted directories now.
    func wakeInotifyThread() {
        inotifyWakeChannel.withLock { $0 }?.wake()
    }

    /// Hands events from the inotify thread to the registry.
    func deliver(_ events: [WatchRegistry.Event]) {
        let now = Self.now()
        let needsDispatcher = registry.withLock { registry in
            var needsDispatcher = false
            for event in events {
                if registry.apply(event, now: now) { needsDispatcher = true }
                if let problem = Self.degradation(for: event), !registry.hasReportedDegradation {
                    registry.hasReportedDegradation = true
                    registry.pendingReports.append(problem)
                    needsDispatcher = true
                }
            }
            return needsDispatcher
        }
        guard needsDispatcher else { return }
        // A call due now is made here, on the inotify thread, when the dispatcher is not making
        // calls: waking the dispatcher for it was a thread hop on the path of every outside change
        // (docs/design.md, "Live reload: the watcher's threads"). The callbacks only schedule work
        // of their own elsewhere, so this thread soon goes back to reading events.
        guard performing.try() else {
            signalDispatcher()
            return
        }
        let work = registry.withLock { registry in registry.isShutDown ? nil : registry.takeDueWork(now: Self.now()) }
        if let work { perform(work) }
        performing.unlock()
        // The dispatcher waits for the deadline it last saw: a new one (a deletion grace) wakes it.
        if registry.withLock({ $0.nextDeadline() }) != nil { signalDispatcher() }
    }

    /// The problem that says a watcher degraded to polling, once per watcher.
    static func degradation(for event: WatchRegistry.Event) -> WatchProblem? {
        let interval = "every \(FileWatcher.pollInterval.wholeNanoseconds / 1_000_000) ms"
        switch event {
        case .inotifyStopped(let reason):
            return WatchProblem(
                "File watching fell back to polling \(interval): \(reason). Changes from other processes are "
                    + "seen up to one interval late.")
        case .directoryFailed(let directory, let reason?):
            return WatchProblem(
                "Files in \(directory) are polled \(interval) instead of watched: \(reason).", path: directory)
        default:
            return nil
        }
    }

    // MARK: The dispatcher thread

    private func runDispatcher() {
        while true {
            performing.lock()
            let now = Self.now()
            let taken = registry.withLock { registry -> WatchRegistry.DueWork? in
                guard !registry.isShutDown else { return nil }
                registry.isDispatcherSignalled = false
                return registry.takeDueWork(now: now)
            }
            guard let work = taken else {
                performing.unlock()
                return
            }
            perform(work)
            performing.unlock()
            let deadline = registry.withLock { $0.nextDeadline() }
            if let deadline {
                if deadline > Self.now() {
                    _ = dispatcherWakeUp.wait(timeout: DispatchTime(uptimeNanoseconds: deadline))
                }
            } else {
                dispatcherWakeUp.wait()
            }
        }
    }

    /// Does the due work: reports, `stat`s outside the lock, then the calls.
    private func perform(_ work: WatchRegistry.DueWork) {
        for problem in work.reports { report(problem) }
        var looks = WatchRegistry.Looks(before: Self.now(), after: 0)
        looks.calls = work.calls.map { ($0, work.callPaths[$0].flatMap(FileStamp.current(at:))) }
        looks.settleChecks = work.settleChecks.map { ($0.id, FileStamp.current(at: $0.path)) }
        looks.absenceChecks = work.absenceChecks.map { ($0.id, FileStamp.current(at: $0.path)) }
        looks.polls = work.polls.map { ($0.id, FileStamp.current(at: $0.path)) }
        looks.directoryAttributes = work.polledDirectories.map { ($0, FileStamp.attributes(ofDirectory: $0)) }
        looks.reappearedDirectories = work.missingDirectories.filter(FileStamp.isDirectory)
        looks.after = Self.now()
        let (calls, wakesInotifyThread) = registry.withLock { $0.decide(work, looks) }
        if wakesInotifyThread { wakeInotifyThread() }
        var called = Set<UInt64>()
        for (identifier, change) in calls where called.insert(identifier).inserted {
            call(identifier, change)
        }
        registry.withLock { $0.finished(work) }
    }

    /// Calls the registration, after resolving its path again when it may lead elsewhere now: an
    /// event since the last resolution may have changed a link or a directory on the way
    /// (``WatchRegistry/Registration/pathEvents``), polling sees no events, or the final file is
    /// now a symbolic link itself (a link renamed over it: one `lstat`). Resolving costs a `lstat`
    /// per component and the path's string work, which every flush of this process paid for its
    /// own rename when it was done on every call.
    private func call(_ identifier: UInt64, _ change: FileChange) {
        let found = registry.withLock { registry -> (WatchedPath, UInt64?, (@Sendable (FileChange) -> Void))? in
            guard let registration = registry.registrations[identifier] else { return nil }
            let isStale = registration.pathEvents != registration.resolvedAt || registry.isPolled(registration)
            return (registration.watched, isStale ? registration.pathEvents : nil, registration.onChange)
        }
        guard let (watched, staleAt, callback) = found else { return }
        if staleAt != nil || Self.isSymbolicLink(watched.target.map(Self.path(of:)) ?? watched.path) {
            let resolved = WatchedPath.resolve(watched.path)
            if registry.withLock({ $0.update(identifier, to: resolved, resolvedAt: staleAt) }) { wakeInotifyThread() }
        }
        callback(change)
    }

    /// The path of a directory entry.
    private static func path(of entry: WatchedEntry) -> String {
        entry.directory == "/" ? "/" + entry.name : entry.directory + "/" + entry.name
    }

    /// Whether `path` is a symbolic link (`lstat`).
    private static func isSymbolicLink(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFLNK
    }
}
