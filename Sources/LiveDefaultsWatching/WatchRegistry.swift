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
        /// Not looked at yet: the next poll records the state and calls once.
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
        /// the file, or of a write, clears it.
        var awaySince: UInt64?
        /// When a create or delete seen earlier is judged.
        var settleDeadline: UInt64?
        /// When to look whether the file is away, after a deletion event (the look, not the event,
        /// starts the absence; it makes no call).
        var absenceCheckDeadline: UInt64?
        /// Whether a complete write was seen since the last create or delete.
        var writtenSinceSettleStarted = false
        var baseline: Baseline = .unknown
        /// Polling saw the file absent once; a second look confirms it (the deletion grace).
        var absentOnce = false
        /// A verdict of "gone for good" that waits for a barrier (``WatchRegistry/barriersRequested``):
        /// the absence it judged (its ``awaySince``) and the barrier's number.
        var verdictAwaitingBarrier: (since: UInt64, barrier: UInt64)?
        /// An absence that a barrier found unbroken: no event read up to the judging look showed
        /// the file (its ``awaySince``).
        var confirmedAbsence: UInt64?
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
        /// Registrations whose grace ran out: call when absent, or when present but not written since.
        var settleChecks: [(id: UInt64, path: String)] = []
        /// Registrations to look at after a deletion event: is the file away? (no call)
        var absenceChecks: [(id: UInt64, path: String)] = []
        var polls: [(id: UInt64, path: String)] = []
        /// Missing directories to look for.
        var missingDirectories: [String] = []
    }

    let deletionGrace: UInt64
    let pollInterval: UInt64

    private(set) var mode: FileWatcher.Mode
    private(set) var registrations: [UInt64: Registration] = [:]
    private var registrationsByEntry: [WatchedEntry: Set<UInt64>] = [:]
    private(set) var directoryUsers: [String: Int] = [:]
    private(set) var directoryStatus: [String: DirectoryStatus] = [:]
    /// Grows whenever the set of wanted directories changes or one should be tried again.
    private(set) var directoriesVersion: UInt64 = 0
    /// Missing directories watched for through an existing ancestor: the ancestor's entry whose
    /// appearance means "try again". The ancestor is a wanted directory while it serves, so a
    /// missing directory costs a watch (often one already there), not a poll every
    /// ``pollInterval`` (docs/design.md, "Live reload: directories that do not exist yet").
    private(set) var awaited: [String: WatchedEntry] = [:]
    /// ``awaited`` by ancestor entry.
    private var awaitedByEntry: [WatchedEntry: Set<String>] = [:]
    private var nextIdentifier: UInt64 = 1
    private var nextPoll: UInt64 = 0
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
    private(set) var barriersRequested: UInt64 = 0
    /// Registrations whose work has been taken (``takeDueWork(now:)``) and is not yet done: their
    /// looks and calls are still to come, so they are not quiet (``isQuiet(_:)``).
    private var inFlight: Set<UInt64> = []

    init(mode: FileWatcher.Mode, deletionGrace: Duration, pollInterval: Duration) {
        self.mode = mode
        self.deletionGrace = deletionGrace.wholeNanoseconds
        self.pollInterval = pollInterval.wholeNanoseconds
    }

    // MARK: Registrations

    /// Adds a registration. Its first call comes as soon as watching it works: at once when its
    /// directories are already watched, after a first `stat` when it is polled, or when its
    /// directories get armed.
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
    mutating func update(_ identifier: UInt64, to watched: WatchedPath) -> Bool {
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
    private mutating func watchForMissing(_ directory: String, at entry: WatchedEntry?) {
        guard awaited[directory] != entry else { return }
        stopAwaiting(directory)
        guard let entry else { return }
        awaited[directory] = entry
        awaitedByEntry[entry, default: []].insert(directory)
        if takeAncestor(entry.directory) { directoriesVersion += 1 }
    }

    /// Stops watching for `directory` through an ancestor.
    private mutating func stopAwaiting(_ directory: String) {
        guard let entry = awaited.removeValue(forKey: directory) else { return }
        awaitedByEntry[entry]?.remove(directory)
        if awaitedByEntry[entry]?.isEmpty == true { awaitedByEntry[entry] = nil }
        if release(entry.directory) { directoriesVersion += 1 }
    }

    /// Has the inotify thread try the missing directories awaited in `ancestor` again (all of them,
    /// or those awaited at `name`).
    private mutating func retryAwaited(in ancestor: String, name: String? = nil) -> Bool {
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

    // MARK: Events

    /// Applies what the inotify thread saw.
    ///
    /// - Returns: Whether a timer may have moved earlier (the dispatcher has to look).
    mutating func apply(_ event: Event, now: UInt64) -> Bool {
        switch event {
        case .entry(let entry, let change):
            if !awaitedByEntry.isEmpty, change != .removed, let directories = awaitedByEntry[entry] {
                for directory in directories { _ = directoryReappeared(directory) }
            }
            guard let identifiers = registrationsByEntry[entry] else { return false }
            for identifier in identifiers { apply(change, to: identifier, now: now) }
            return true
        case .overflow:
            // Events were lost, a sight of the file among them perhaps: absences start again.
            for identifier in registrations.keys {
                registrations[identifier]?.awaySince = nil
                scheduleCall(identifier, at: now, isLook: false)
            }
            return true
        case .directoryArmed(let directory):
            guard directoryUsers[directory] != nil else { return false }
            directoryStatus[directory] = .armed
            stopAwaiting(directory)
            // An ancestor now watched: a directory awaited in it may have come before the watch.
            _ = retryAwaited(in: directory)
            // Only a look: when the directory was deleted and made again (or replaced), the file
            // may not be back yet, and reading it now would report every key removed. The file
            // was not watched until now, so it may have been back meanwhile with no event: an
            // absence seen before no longer counts, and the look starts a new one if it finds the
            // file away.
            for identifier in users(of: directory) {
                registrations[identifier]?.awaySince = nil
                scheduleCall(identifier, at: now, isLook: true)
            }
            return true
        case .directoryLost(let directory):
            guard directoryUsers[directory] != nil else { return false }
            directoryStatus[directory] = .missing
            _ = retryAwaited(in: directory)
            for identifier in users(of: directory) { apply(.removed, to: identifier, now: now) }
            return true
        case .directoryMissing(let directory, let entry):
            guard directoryUsers[directory] != nil else { return false }
            directoryStatus[directory] = .missing
            watchForMissing(directory, at: entry)
            return true
        case .directoryAttributesChanged(let directory):
            guard directoryUsers[directory] != nil else { return false }
            for identifier in users(of: directory) { scheduleCall(identifier, at: now, isLook: false) }
            return true
        case .directoryFailed(let directory, _):
            guard directoryUsers[directory] != nil else { return false }
            directoryStatus[directory] = .failed
            // Directories awaited through it are polled for instead.
            for (missing, entry) in awaited where entry.directory == directory { stopAwaiting(missing) }
            for identifier in users(of: directory) { resetBaseline(identifier) }
            return true
        case .inotifyStopped:
            mode = .polling
            for directory in awaited.keys { stopAwaiting(directory) }
            for identifier in registrations.keys {
                resetBaseline(identifier)
                // No barrier will come: polling judges the absence again.
                if registrations[identifier]?.verdictAwaitingBarrier != nil {
                    registrations[identifier]?.verdictAwaitingBarrier = nil
                    registrations[identifier]?.settleDeadline = now
                }
            }
            return true
        case .barrierPassed(let barrier):
            return barrierPassed(barrier, now: now)
        }
    }

    /// Barrier `barrier` has passed: a verdict that waited for it stands if no event read since
    /// showed the file (the absence it judged is still the one running), and is judged again
    /// now, on a fresh look.
    ///
    /// - Returns: Whether a judgement fell due.
    private mutating func barrierPassed(_ barrier: UInt64, now: UInt64) -> Bool {
        var due = false
        for (identifier, var registration) in registrations {
            guard let verdict = registration.verdictAwaitingBarrier, verdict.barrier <= barrier else { continue }
            registration.verdictAwaitingBarrier = nil
            if registration.awaySince == verdict.since {
                registration.confirmedAbsence = verdict.since
                registration.settleDeadline = now
                due = true
            }
            registrations[identifier] = registration
        }
        return due
    }

    private mutating func apply(_ change: EntryChange, to identifier: UInt64, now: UInt64) {
        guard var registration = registrations[identifier] else { return }
        switch change {
        case .written:
            // Called for at once (the event is a close or a move-in, so the content is final);
            // writes seen before the call is made merge into it.
            registration.callDeadline = registration.callDeadline ?? now
            registration.callIsLook = false
            registration.writtenSinceSettleStarted = true
            registration.awaySince = nil
        case .appeared:
            registration.settleDeadline = now + deletionGrace
            registration.writtenSinceSettleStarted = false
            registration.awaySince = nil
        case .attributesChanged:
            registrations[identifier] = registration
            scheduleCall(identifier, at: now, isLook: false)
            return
        case .removed:
            // No call while the file may be absent only for a moment: the grace decides. The
            // event may be old news (the inotify thread can be behind, and the file back by now),
            // so it says nothing of when the file was away: a look, due now, starts the absence
            // if it finds the file away (docs/design.md, "Live reload: coalescing").
            registration.callDeadline = nil
            registration.callIsLook = false
            registration.settleDeadline = now + deletionGrace
            registration.absenceCheckDeadline = now
            registration.writtenSinceSettleStarted = false
        }
        registrations[identifier] = registration
    }

    /// Schedules a registration's call, keeping an earlier deadline already set.
    ///
    /// - Parameters:
    ///   - identifier: The registration.
    ///   - deadline: When the call is due.
    ///   - isLook: Whether the call is only a look; a write's call already due stays a full call.
    private mutating func scheduleCall(_ identifier: UInt64, at deadline: UInt64, isLook: Bool) {
        guard var registration = registrations[identifier] else { return }
        registration.callIsLook = registration.callDeadline == nil ? isLook : registration.callIsLook && isLook
        registration.callDeadline = min(registration.callDeadline ?? deadline, deadline)
        registrations[identifier] = registration
    }

    private mutating func resetBaseline(_ identifier: UInt64) {
        registrations[identifier]?.baseline = .unknown
        registrations[identifier]?.absentOnce = false
    }

    private func users(of directory: String) -> [UInt64] {
        registrations.compactMap { $0.value.watched.directories.contains(directory) ? $0.key : nil }
    }

    // MARK: Timers

    /// Takes the work that is due at `now` and clears its timers.
    mutating func takeDueWork(now: UInt64) -> DueWork {
        var work = DueWork()
        swap(&work.reports, &pendingReports)
        let pollNow = now >= nextPoll
        if pollNow { nextPoll = now + pollInterval }
        for (identifier, var registration) in registrations {
            var changed = false
            if let deadline = registration.callDeadline, deadline <= now {
                registration.callDeadline = nil
                work.calls.append(identifier)
                work.callPaths[identifier] = registration.watched.path
                if registration.callIsLook { work.looks.insert(identifier) }
                registration.callIsLook = false
                changed = true
            }
            if let deadline = registration.settleDeadline, deadline <= now {
                registration.settleDeadline = nil
                work.settleChecks.append((identifier, registration.watched.path))
                changed = true
            }
            if let deadline = registration.absenceCheckDeadline, deadline <= now {
                registration.absenceCheckDeadline = nil
                work.absenceChecks.append((identifier, registration.watched.path))
                changed = true
            }
            if isPolled(registration), pollNow || registration.baseline == .unknown {
                work.polls.append((identifier, registration.watched.path))
            }
            if changed { registrations[identifier] = registration }
        }
        inFlight.formUnion(work.calls)
        inFlight.formUnion(work.settleChecks.lazy.map(\.id))
        inFlight.formUnion(work.absenceChecks.lazy.map(\.id))
        inFlight.formUnion(work.polls.lazy.map(\.id))
        if pollNow, mode == .inotify {
            work.missingDirectories = directoryStatus.compactMap {
                $0.value == .missing && awaited[$0.key] == nil ? $0.key : nil
            }
        }
        return work
    }

    /// When the dispatcher has to look again, or `nil` when only an event can create work.
    func nextDeadline() -> UInt64? {
        if !pendingReports.isEmpty { return 0 }
        var deadline: UInt64?
        func consider(_ candidate: UInt64?) {
            guard let candidate else { return }
            deadline = min(deadline ?? candidate, candidate)
        }
        var needsPolling =
            mode == .inotify && directoryStatus.contains { $0.value == .missing && awaited[$0.key] == nil }
        for registration in registrations.values {
            consider(registration.callDeadline)
            consider(registration.settleDeadline)
            consider(registration.absenceCheckDeadline)
            if !needsPolling, isPolled(registration) { needsPolling = true }
        }
        if needsPolling { consider(nextPoll) }
        return deadline
    }

    /// What the watcher saw when it looked at the files of a ``DueWork``, outside the lock
    /// (`nil`: absent), and when: every look began after `before` and ended before `after`.
    struct Looks: Sendable {
        var calls: [(id: UInt64, stamp: FileStamp?)] = []
        var settleChecks: [(id: UInt64, stamp: FileStamp?)] = []
        var absenceChecks: [(id: UInt64, stamp: FileStamp?)] = []
        var polls: [(id: UInt64, stamp: FileStamp?)] = []
        /// The missing directories found to exist again.
        var reappearedDirectories: [String] = []
        var before: UInt64
        var after: UInt64
    }

    /// Decides the calls of due work from the looks taken for it.
    ///
    /// An absence is judged by the clock read before the looks (the file was away at least
    /// then), and a grace starts from the clock read after them (it was away by then at the
    /// latest): a look delayed between the two never makes an absence seem longer than it was.
    ///
    /// - Returns: The calls to make, in order, and whether the inotify thread has work: a missing
    ///   directory is back (it has to try it), or a barrier was asked for.
    mutating func decide(_ work: DueWork, _ looks: Looks) -> (
        calls: [(UInt64, FileChange)], wakesInotifyThread: Bool
    ) {
        let barriersBefore = barriersRequested
        var calls: [(UInt64, FileChange)] = []
        for (identifier, stamp) in looks.absenceChecks {
            guard var registration = registrations[identifier] else { continue }
            registration.awaySince = stamp == nil ? registration.awaySince ?? looks.after : nil
            registrations[identifier] = registration
        }
        for (identifier, stamp) in looks.calls
        where admitCall(identifier, seeing: stamp, isLook: work.looks.contains(identifier), now: looks.after) {
            calls.append((identifier, FileChange(seeing: stamp)))
        }
        for (identifier, stamp) in looks.settleChecks
        where settle(identifier, isPresent: stamp != nil, before: looks.before, after: looks.after) {
            noteCall(identifier, seeing: stamp)
            calls.append((identifier, FileChange(seeing: stamp)))
        }
        for (identifier, stamp) in looks.polls where record(identifier, stamp: stamp, now: looks.after) {
            noteCall(identifier, seeing: stamp)
            calls.append((identifier, FileChange(seeing: stamp)))
        }
        var wakes = barriersRequested != barriersBefore
        for directory in looks.reappearedDirectories where directoryReappeared(directory) { wakes = true }
        return (calls, wakes)
    }

    /// Judges a grace that ran out, given a look at the file made between `before` and `after`.
    ///
    /// An absence counts ("gone for good") only when the file has been away for the whole grace:
    /// found away by a look that began at least the grace after an earlier look found it away,
    /// with no sign of it in between. Otherwise a grace starts from this look.
    ///
    /// A sign may still be unread: the inotify thread can be behind, and an event that shows the
    /// file back between the two looks still queued in the kernel. So when inotify serves the
    /// registration, the verdict waits for a barrier (``barriersRequested``), and stands only if
    /// the events read by then leave the absence unbroken; the look after the barrier then calls.
    ///
    /// - Returns: Whether to call: the file is still absent and the absence counts, or it is back
    ///   without a complete write having been seen (a hard link, say).
    mutating func settle(_ identifier: UInt64, isPresent: Bool, before: UInt64, after: UInt64) -> Bool {
        guard var registration = registrations[identifier] else { return false }
        defer { registrations[identifier] = registration }
        if isPresent {
            registration.awaySince = nil
            registration.confirmedAbsence = nil
            return !registration.writtenSinceSettleStarted
        }
        if let since = registration.awaySince, before &- since >= deletionGrace {
            if !servesBarriers || isPolled(registration) || registration.confirmedAbsence == since {
                registration.confirmedAbsence = nil
                return true
            }
            barriersRequested += 1
            registration.verdictAwaitingBarrier = (since, barriersRequested)
            return false
        }
        registration.noteAway(now: after, deletionGrace: deletionGrace)
        return false
    }

    /// Decides a due call, given the file as it is now (`nil`: absent).
    ///
    /// - A later look at a file that is as the last call saw it is no change: no call. (Size,
    ///   times, inode and device are compared together, as the polling fallback does.)
    /// - A file that is absent now, after an earlier call (or, before the first call, that was
    ///   there when the watch was made), may be away only for a moment — its directory deleted and
    ///   made again, an editor's save, a write followed by a deletion: no call, for a reader would
    ///   see every key removed. The deletion grace decides instead, started now unless it runs
    ///   already; only its end says "gone for good".
    /// - Otherwise the first call is always made: it says the watch is in place.
    ///
    /// Any sight of the file ends an absence, even when it makes no call.
    ///
    /// - Parameters:
    ///   - identifier: The registration.
    ///   - stamp: The file as the look found it (`nil`: absent).
    ///   - isLook: Whether the call is only a look.
    ///   - now: When the look had ended (a grace it starts runs from then).
    /// - Returns: Whether to call.
    mutating func admitCall(_ identifier: UInt64, seeing stamp: FileStamp?, isLook: Bool, now: UInt64) -> Bool {
        guard var registration = registrations[identifier] else { return false }
        defer { registrations[identifier] = registration }
        let seen = stamp.map(Baseline.present) ?? .absent
        // The file is there: whatever was away before, it is not away now.
        if stamp != nil { registration.awaySince = nil }
        if isLook, registration.hasBeenCalled, seen == registration.calledWith { return false }
        // Only the grace says "gone for good": absent now after an earlier call (the file was
        // there then, or a write since made this call due) starts it, unless it runs already.
        if stamp == nil, registration.hasBeenCalled || registration.calledWith.isPresent {
            registration.noteAway(now: now, deletionGrace: deletionGrace)
            return false
        }
        registration.calledWith = seen
        registration.hasBeenCalled = true
        // The call reads the content as it is now, so a grace running need not call for it.
        registration.writtenSinceSettleStarted = true
        return true
    }

    /// Notes a call made for another reason (a grace that ran out, a poll), given the file as it
    /// was looked at for it.
    mutating func noteCall(_ identifier: UInt64, seeing stamp: FileStamp?) {
        registrations[identifier]?.calledWith = stamp.map(Baseline.present) ?? .absent
        registrations[identifier]?.hasBeenCalled = true
        if stamp != nil { registrations[identifier]?.awaySince = nil }
    }

    /// Records what a poll saw at `now`.
    ///
    /// - Returns: Whether to call.
    mutating func record(_ identifier: UInt64, stamp: FileStamp?, now: UInt64) -> Bool {
        guard var registration = registrations[identifier] else { return false }
        defer { registrations[identifier] = registration }
        switch (registration.baseline, stamp) {
        case (.unknown, nil):
            registration.baseline = .absent
            // Away now after an earlier call: the deletion grace decides, as for a look.
            if registration.hasBeenCalled || registration.calledWith.isPresent {
                registration.noteAway(now: now, deletionGrace: deletionGrace)
                return false
            }
            return true
        case (.unknown, let stamp?):
            registration.baseline = .present(stamp)
            return true
        case (.absent, nil):
            return false
        case (.absent, let stamp?):
            registration.baseline = .present(stamp)
            return true
        case (.present, nil):
            // Absent at one poll may be an editor's save in progress; absent at two is a deletion.
            registration.awaySince = registration.awaySince ?? now
            if registration.absentOnce {
                registration.absentOnce = false
                registration.baseline = .absent
                return true
            }
            registration.absentOnce = true
            return false
        case (.present(let old), let stamp?):
            registration.absentOnce = false
            registration.awaySince = nil
            guard old != stamp else { return false }
            registration.baseline = .present(stamp)
            return true
        }
    }

    /// A missing directory exists again: have the inotify thread try it.
    mutating func directoryReappeared(_ directory: String) -> Bool {
        guard directoryStatus[directory] == .missing else { return false }
        directoryStatus[directory] = .pending
        directoriesVersion += 1
        return true
    }

    /// The work taken by ``takeDueWork(now:)`` is done: its looks were made and its calls returned.
    mutating func finished(_ work: DueWork) {
        guard !inFlight.isEmpty else { return }
        inFlight.subtract(work.calls)
        inFlight.subtract(work.settleChecks.lazy.map(\.id))
        inFlight.subtract(work.absenceChecks.lazy.map(\.id))
        inFlight.subtract(work.polls.lazy.map(\.id))
    }

    /// Nothing is due, pending or under way for one registration (for tests); `true` once it is
    /// gone. Work taken but not yet done counts as under way: a look taken, and so no longer due,
    /// may still find the file changed and call (a test that took the watch for quiet then would
    /// count that call against its own next change).
    func isQuiet(_ identifier: UInt64) -> Bool {
        guard let registration = registrations[identifier] else { return true }
        return !inFlight.contains(identifier) && registration.callDeadline == nil && registration.settleDeadline == nil
            && registration.absenceCheckDeadline == nil && registration.verdictAwaitingBarrier == nil
            && !(isPolled(registration) && registration.baseline == .unknown)
            && (mode == .polling || !registration.watched.directories.contains { directoryStatus[$0] == .pending })
    }
}

extension WatchRegistry.Registration {
    /// The file was found away at `now`: from when it was first known to be away, the deletion
    /// grace runs (unless one runs already), and only its end judges the absence.
    mutating func noteAway(now: UInt64, deletionGrace: UInt64) {
        let since = awaySince ?? now
        awaySince = since
        if settleDeadline == nil {
            settleDeadline = max(since + deletionGrace, now)
            writtenSinceSettleStarted = false
        }
    }
}
