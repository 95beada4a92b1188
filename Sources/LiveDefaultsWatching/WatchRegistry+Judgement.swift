extension WatchRegistry {
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
        let changedDirectories = polledDirectoriesChanged(looks.directoryAttributes)
        for (identifier, stamp) in looks.polls {
            let changed = record(identifier, stamp: stamp, now: looks.after)
            // A file that looks the same, in a directory whose mode or owner changed, is called
            // for as inotify's `IN_ATTRIB` on the directory would have it.
            guard
                changed
                    || (stamp != nil && !changedDirectories.isEmpty
                        && registrations[identifier]?.watched.directories.isDisjoint(with: changedDirectories) == false)
            else { continue }
            noteCall(identifier, seeing: stamp)
            calls.append((identifier, FileChange(seeing: stamp)))
        }
        var wakes = barriersRequested != barriersBefore
        for directory in looks.reappearedDirectories where directoryReappeared(directory) { wakes = true }
        return (calls, wakes)
    }

    /// Records the attributes a full polling round saw of its files' directories.
    ///
    /// - Returns: The directories whose mode, owner or group differ from the last round's (one
    ///   seen for the first time is not among them: its files' own first polls call).
    mutating func polledDirectoriesChanged(
        _ seen: [(path: String, attributes: FileStamp.DirectoryAttributes?)]
    ) -> Set<String> {
        guard !seen.isEmpty else { return [] }
        var changed = Set<String>()
        var next: [String: FileStamp.DirectoryAttributes?] = [:]
        for (path, attributes) in seen {
            if let previous = polledDirectoryAttributes[path], previous != attributes { changed.insert(path) }
            next[path] = attributes
        }
        polledDirectoryAttributes = next
        return changed
    }

    /// Judges a grace that ran out, given a look at the file made between `before` and `after`.
    ///
    /// An absence counts ("gone for good") only when the file has been away for the whole grace:
    /// found away by a look that began at least the grace after an earlier look found it away,
    /// with no sign of it in between. Otherwise the grace runs on from when the file was first
    /// found away (this look, when no look found it away before).
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

    /// Barrier `barrier` has passed: a verdict that waited for it stands if no event read since
    /// showed the file (the absence it judged is still the one running), and is judged again
    /// now, on a fresh look.
    ///
    /// - Returns: Whether a judgement fell due.
    mutating func barrierPassed(_ barrier: UInt64, now: UInt64) -> Bool {
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
