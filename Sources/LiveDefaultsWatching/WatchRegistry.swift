import Foundation

/// Everything a ``FileWatcher`` knows: the watched files, which directories they need, the
/// state of those directories, and the timers for the deletion grace and polling.
///
/// The registry owns the deletion grace: it decides when an absence counts, and its calls say only
/// ``FileChange/mayHaveChanged`` or ``FileChange/goneForGood``. It does not decide when a reader
/// reloads: writes that come while a call is due merge into it, and that is all; the store's
/// schedule coalesces reloads (docs/design.md, "Live reload: coalescing").
///
/// Pure bookkeeping — no system calls, and it never calls a registration's callback, which it
/// only holds for ``FileWatcherCore`` to call outside the lock — kept under one lock by
/// ``FileWatcherCore``. Times are `DispatchTime` uptime nanoseconds.
///
/// Its jobs, a file each:
/// - `WatchRegistry.swift`: the types, the registrations, and the directories they need (each
///   directory's count of users, its status, and the ancestors watched for a missing one);
/// - `WatchRegistry+Events.swift`: what the inotify thread saw (``apply(_:now:)``);
/// - `WatchRegistry+Timers.swift`: the work that falls due (``takeDueWork(now:)``,
///   ``nextDeadline()``, ``finished(_:)``);
/// - `WatchRegistry+Judgement.swift`: the calls judged from the looks taken for due work
///   (``decide(_:_:)``): the deletion grace, its barriers, and the polls;
/// - `WatchRegistry+Quiet.swift`: whether a watch is quiet, for tests (``isQuiet(_:)``).
struct WatchRegistry: Sendable {
    /// Where a directory's inotify watch stands.
    enum DirectoryStatus: Sendable, Equatable {
        /// Wanted; the inotify thread has not tried it yet.
        case pending
        /// Watched.
        case armed
        /// Does not exist (or is not a directory); it is armed when it appears, which the watch on its
        /// nearest existing ancestor tells (``WatchRegistry/awaited``), else a poll of its existence finds.
        case missing
        /// Cannot be watched (permissions, watch limit); the files in it are polled.
        case failed
    }

    /// The last state the polling fallback saw.
    enum Baseline: Sendable, Equatable {
        /// Not looked at yet: the next poll records the state and calls, unless it finds the file
        /// away after an earlier call (or after the watch was made with the file there): the
        /// deletion grace judges that absence (``WatchRegistry/record(_:stamp:now:)``).
        case unknown
        case absent
        case present(FileStamp)

        var isPresent: Bool {
            if case .present = self { return true }
            return false
        }
    }

    /// What happened to a name in a watched directory.
    enum EntryChange: Sendable {
        /// Closed after writing, or moved in: new content is complete.
        case written
        /// Created (content may still be on its way) — settles after the grace.
        case appeared
        /// Its attributes changed (`chmod`, `chown`, a new link count): a call, whatever `stat`
        /// says — a `chmod` within the change time's clock tick of the last call would look the
        /// same to a look, and what it changes (the trust in a managed file) is not in the stamp.
        case attributesChanged
        /// Deleted or moved away — counts only when still absent after the grace.
        case removed
    }

    /// What the inotify thread tells the registry.
    enum Event: Sendable {
        case entry(WatchedEntry, EntryChange)
        /// The kernel queue overflowed: any file may have changed.
        case overflow
        case directoryArmed(String)
        /// An armed directory was deleted, moved or replaced.
        case directoryLost(String)
        /// The directory does not exist. `awaitedAt`: the name in its nearest existing ancestor
        /// whose appearance may bring it (the ancestor is then watched for it instead of polling
        /// the directory), nil when there is none to watch.
        case directoryMissing(String, awaitedAt: WatchedEntry? = nil)
        /// The attributes of a watched directory itself changed (`chmod`, `chown`): whatever
        /// depends on them (the trust in a managed file) may have changed for every file in it.
        case directoryAttributesChanged(String)
        /// The directory cannot be watched; `reason` is reported once when it is worth saying.
        case directoryFailed(String, reason: String?)
        /// inotify stopped serving this process; everything is polled from now on.
        case inotifyStopped(reason: String)
        /// Every event queued before barrier `number` was asked for has been read and applied,
        /// and the directories those events made wanted were tried (``barriersRequested``).
        case barrierPassed(UInt64)
    }

    /// One call of ``FileWatcher/watch(path:onChange:)``.
    struct Registration: Sendable {
        var watched: WatchedPath
        let onChange: @Sendable (FileChange) -> Void
        /// When the next call is due (events that come before it is made merge into it).
        var callDeadline: UInt64?
        /// The due call is only a look (a directory of the path was armed again: something may
        /// have happened while it was not watched); no write was seen.
        var callIsLook = false
        /// The file as the last call saw it; before the first call, as it was when the watch was made.
        var calledWith: Baseline
        var hasBeenCalled = false
        /// Since when the file is known to be away: the end of the first look that found it absent
        /// since it was last seen. Only a look sets it (an event may be old news); any sight of
        /// the file, or of a write, clears it, and so do events that may have missed one (a queue
        /// overflow, a directory of the path armed again).
        var awaySince: UInt64?
        /// When a create or delete seen earlier is judged.
        var settleDeadline: UInt64?
        /// When to look whether the file is away, after a deletion event (the look, not the event,
        /// starts the absence; it makes no call).
        var absenceCheckDeadline: UInt64?
        /// Whether a complete write was seen since the last create or delete.
        var writtenSinceSettleStarted = false
        var baseline: Baseline = .unknown
        /// Polling saw the file absent once; the next poll, a ``WatchRegistry/pollInterval`` later,
        /// confirms the absence if it finds the file still away (polling's deletion grace).
        var absentOnce = false
        /// A verdict of "gone for good" that waits for a barrier (``WatchRegistry/barriersRequested``):
        /// the absence it judged (its ``awaySince``) and the barrier's number.
        var verdictAwaitingBarrier: (since: UInt64, barrier: UInt64)?
        /// An absence that a barrier found unbroken: no event read up to the judging look showed
        /// the file (its ``awaySince``).
        var confirmedAbsence: UInt64?
        /// Counts the events that may have changed where the path leads: a link on the way
        /// re-pointed, a name on the way made or removed, a directory lost or armed again, an
        /// overflow. A write or an attribute change of the final file is not one (the call checks
        /// with one `lstat` that the file was not replaced by a link).
        var pathEvents: UInt64 = 1
        /// ``pathEvents`` as it was when the path was last resolved: the next call resolves it
        /// again only when they differ (docs/design.md, "Live reload: the watcher's threads").
        var resolvedAt: UInt64 = 0
    }

    /// The work that fell due, to be done outside the lock.
    struct DueWork: Sendable {
        var reports: [WatchProblem] = []
        /// Due calls, each made only if ``WatchRegistry/admitCall(_:seeing:isLook:now:)`` agrees.
        var calls: [UInt64] = []
        /// The paths of the registrations in `calls`, to look at before calling.
        var callPaths: [UInt64: String] = [:]
        /// The calls in `calls` that are only looks.
        var looks: Set<UInt64> = []
        /// Registrations whose grace ran out, to judge (``WatchRegistry/settle(_:isPresent:before:after:)``):
        /// a call when the file stayed away for the whole grace, or when present but not written since.
        var settleChecks: [(id: UInt64, path: String)] = []
        /// Registrations to look at after a deletion event: is the file away? (no call)
        var absenceChecks: [(id: UInt64, path: String)] = []
        var polls: [(id: UInt64, path: String)] = []
        /// The directories of the polled files, at a full polling round: their mode, owner and
        /// group are compared with the last round's (``polledDirectoriesChanged(_:)``).
        var polledDirectories: [String] = []
        /// Missing directories to look for.
        var missingDirectories: [String] = []
    }

    /// What the watcher saw when it looked at the files of a ``DueWork``, outside the lock
    /// (`nil`: absent), and when: every look began after `before` and ended before `after`.
    struct Looks: Sendable {
        var calls: [(id: UInt64, stamp: FileStamp?)] = []
        var settleChecks: [(id: UInt64, stamp: FileStamp?)] = []
        var absenceChecks: [(id: UInt64, stamp: FileStamp?)] = []
        var polls: [(id: UInt64, stamp: FileStamp?)] = []
        /// The attributes of ``DueWork/polledDirectories`` (`nil`: unreadable).
        var directoryAttributes: [(path: String, attributes: FileStamp.DirectoryAttributes?)] = []
        /// The missing directories found to exist again.
        var reappearedDirectories: [String] = []
        var before: UInt64
        var after: UInt64
    }

    let deletionGrace: UInt64
    let pollInterval: UInt64

    var mode: FileWatcher.Mode
    var registrations: [UInt64: Registration] = [:]
    private(set) var registrationsByEntry: [WatchedEntry: Set<UInt64>] = [:]
    private(set) var directoryUsers: [String: Int] = [:]
    var directoryStatus: [String: DirectoryStatus] = [:]
    /// Grows whenever the set of wanted directories changes or one should be tried again.
    private(set) var directoriesVersion: UInt64 = 0
    /// Missing directories watched for through an existing ancestor: the ancestor's entry whose
    /// appearance means "try again". The ancestor is a wanted directory while it serves, so a
    /// missing directory costs a watch (often one already there), not a poll every
    /// ``pollInterval`` (docs/design.md, "Live reload: directories that do not exist yet").
    private(set) var awaited: [String: WatchedEntry] = [:]
    /// ``awaited`` by ancestor entry.
    private(set) var awaitedByEntry: [WatchedEntry: Set<String>] = [:]
    private var nextIdentifier: UInt64 = 1
    var nextPoll: UInt64 = 0
    /// What the last full polling round saw of its files' directories (``DueWork/polledDirectories``).
    var polledDirectoryAttributes: [String: FileStamp.DirectoryAttributes?] = [:]
    /// A wake-up of the dispatcher thread is on its way.
    var isDispatcherSignalled = false
    var isShutDown = false
    var hasReportedDegradation = false
    /// Reports waiting for the dispatcher thread, which makes them outside any lock and never
    /// on a caller's thread (a handler could otherwise run inside the start of `FileWatcher.shared`).
    var pendingReports: [WatchProblem] = []
    /// Whether the inotify thread serves barriers (``barriersRequested``); without them an
    /// absence is judged by looks alone.
    var servesBarriers = false
    /// Barriers asked for, numbered from 1. A barrier is the answer to "has every event that was
    /// queued when I looked been read?": the inotify thread, once it has seen the request, writes
    /// to an object of its own that it watches, and the kernel queues that event behind every
    /// earlier one (docs/design.md, "Live reload: coalescing").
    var barriersRequested: UInt64 = 0
    /// Registrations whose work has been taken (``takeDueWork(now:)``) and is not yet done: their
    /// looks and calls are still to come, so they are not quiet (``isQuiet(_:)``).
    var inFlight: Set<UInt64> = []

    init(mode: FileWatcher.Mode, deletionGrace: Duration, pollInterval: Duration) {
        self.mode = mode
        self.deletionGrace = deletionGrace.wholeNanoseconds
        self.pollInterval = pollInterval.wholeNanoseconds
    }

    // MARK: Registrations and directories

    /// Adds a registration. Its first call comes as soon as watching it works: at once when its
    /// directories are already watched, after a first `stat` when it is polled, or when its
    /// directories get armed. A file that was there when the watch was made (`initial`) and is
    /// away at that first look makes no call: the deletion grace judges its absence.
    ///
    /// - Parameters:
    ///   - watched: The path to watch, and the directories on its way.
    ///   - onChange: Called when the file may have changed.
    ///   - now: The current time, in the registry's clock.
    ///   - initial: The file as it is when the watch is made (its owner has just read it).
    /// - Returns: The identifier, and whether the set of wanted directories changed.
    mutating func add(
        _ watched: WatchedPath, onChange: @escaping @Sendable (FileChange) -> Void, now: UInt64,
        initial: Baseline = .unknown
    ) -> (identifier: UInt64, directoriesChanged: Bool) {
        let identifier = nextIdentifier
        nextIdentifier += 1
        registrations[identifier] = Registration(watched: watched, onChange: onChange, calledWith: initial)
        if watched.isChainTooLong { reportChainTooLong(watched.path) }
        let changed = attach(identifier, watched)
        if mode == .inotify, watched.directories.allSatisfy({ directoryStatus[$0] == .armed }) {
            registrations[identifier]?.callDeadline = now
        }
        return (identifier, changed)
    }

    /// Removes a registration.
    ///
    /// - Returns: Whether the set of wanted directories changed.
    mutating func remove(_ identifier: UInt64) -> Bool {
        guard let registration = registrations.removeValue(forKey: identifier) else { return false }
        return detach(identifier, registration.watched)
    }

    /// Points a registration at where its path resolves now (a symbolic link was re-pointed).
    ///
    /// Only the directories that differ are released or taken, so a directory that stays
    /// wanted keeps its watch and its status.
    ///
    /// - Returns: Whether the set of wanted directories changed.
    ///   - resolvedAt: The registration's ``Registration/pathEvents`` read before resolving, if
    ///     the path was resolved because of them.
    mutating func update(_ identifier: UInt64, to watched: WatchedPath, resolvedAt: UInt64? = nil) -> Bool {
        if let resolvedAt, let registration = registrations[identifier], registration.resolvedAt < resolvedAt {
            registrations[identifier]?.resolvedAt = resolvedAt
        }
        guard let old = registrations[identifier]?.watched, old != watched else { return false }
        if watched.isChainTooLong, !old.isChainTooLong { reportChainTooLong(watched.path) }
        for entry in old.entries where !watched.entries.contains(entry) {
            registrationsByEntry[entry]?.remove(identifier)
            if registrationsByEntry[entry]?.isEmpty == true { registrationsByEntry[entry] = nil }
        }
        for entry in watched.entries { registrationsByEntry[entry, default: []].insert(identifier) }
        registrations[identifier]?.watched = watched
        var changed = false
        for directory in old.directories.subtracting(watched.directories) where release(directory) {
            changed = true
        }
        for directory in watched.directories.subtracting(old.directories) where take(directory, for: identifier) {
            changed = true
        }
        if changed { directoriesVersion += 1 }
        return changed
    }

    /// Says that the symbolic links at `path` are more than can be followed.
    private mutating func reportChainTooLong(_ path: String) {
        pendingReports.append(
            WatchProblem(
                "The symbolic links at \(path) form a chain of more than \(WatchedPath.maximumLinkHops) links, or a "
                    + "loop: the file cannot be opened, and only the first \(WatchedPath.maximumLinkHops) links are "
                    + "watched. Shorten the chain.", path: path))
    }

    /// Counts one more user of `directory`. Returns whether it is newly wanted.
    private mutating func take(_ directory: String, for identifier: UInt64) -> Bool {
        directoryUsers[directory, default: 0] += 1
        if directoryUsers[directory] == 1 {
            directoryStatus[directory] = .pending
            return true
        }
        if directoryStatus[directory] == .failed { registrations[identifier]?.baseline = .unknown }
        return false
    }

    /// Counts one user of `directory` less. Returns whether it is no longer wanted.
    private mutating func release(_ directory: String) -> Bool {
        directoryUsers[directory, default: 1] -= 1
        guard directoryUsers[directory] == 0 else { return false }
        directoryUsers[directory] = nil
        directoryStatus[directory] = nil
        stopAwaiting(directory)
        return true
    }

    /// Counts one more user of an ancestor directory that serves a missing one. Returns whether it
    /// is newly wanted.
    private mutating func takeAncestor(_ directory: String) -> Bool {
        directoryUsers[directory, default: 0] += 1
        guard directoryUsers[directory] == 1 else { return false }
        directoryStatus[directory] = .pending
        return true
    }

    /// Watches for `directory` through `entry` (nil: polls for it instead).
    mutating func watchForMissing(_ directory: String, at entry: WatchedEntry?) {
        guard awaited[directory] != entry else { return }
        stopAwaiting(directory)
        guard let entry else { return }
        awaited[directory] = entry
        awaitedByEntry[entry, default: []].insert(directory)
        if takeAncestor(entry.directory) { directoriesVersion += 1 }
    }

    /// Stops watching for `directory` through an ancestor.
    mutating func stopAwaiting(_ directory: String) {
        guard let entry = awaited.removeValue(forKey: directory) else { return }
        awaitedByEntry[entry]?.remove(directory)
        if awaitedByEntry[entry]?.isEmpty == true { awaitedByEntry[entry] = nil }
        if release(entry.directory) { directoriesVersion += 1 }
    }

    /// Has the inotify thread try the missing directories awaited in `ancestor` again (all of them,
    /// or those awaited at `name`).
    mutating func retryAwaited(in ancestor: String, name: String? = nil) -> Bool {
        let due = awaited.filter { $0.value.directory == ancestor && (name == nil || $0.value.name == name) }.map(\.key)
        var retried = false
        for directory in due where directoryReappeared(directory) { retried = true }
        return retried
    }

    private mutating func attach(_ identifier: UInt64, _ watched: WatchedPath) -> Bool {
        for entry in watched.entries { registrationsByEntry[entry, default: []].insert(identifier) }
        var changed = false
        for directory in watched.directories where take(directory, for: identifier) { changed = true }
        if mode == .polling { registrations[identifier]?.baseline = .unknown }
        if changed { directoriesVersion += 1 }
        return changed
    }

    private mutating func detach(_ identifier: UInt64, _ watched: WatchedPath) -> Bool {
        for entry in watched.entries {
            registrationsByEntry[entry]?.remove(identifier)
            if registrationsByEntry[entry]?.isEmpty == true { registrationsByEntry[entry] = nil }
        }
        var changed = false
        for directory in watched.directories where release(directory) { changed = true }
        if changed { directoriesVersion += 1 }
        return changed
    }

    /// Whether a registration is served by polling rather than by inotify events.
    func isPolled(_ registration: Registration) -> Bool {
        mode == .polling || registration.watched.directories.contains { directoryStatus[$0] == .failed }
    }

    /// A missing directory exists again: have the inotify thread try it.
    mutating func directoryReappeared(_ directory: String) -> Bool {
        guard directoryStatus[directory] == .missing else { return false }
        directoryStatus[directory] = .pending
        directoriesVersion += 1
        return true
    }
}
