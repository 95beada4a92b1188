extension WatchRegistry {
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
            for identifier in identifiers {
                if let final = registrations[identifier].map({ $0.watched.target ?? $0.watched.link }),
                    entry != final || (change != .written && change != .attributesChanged)
                {
                    registrations[identifier]?.pathEvents &+= 1
                }
                apply(change, to: identifier, now: now)
            }
            return true
        case .overflow:
            // Events were lost, a sight of the file among them perhaps: absences start again.
            for identifier in registrations.keys {
                registrations[identifier]?.pathEvents &+= 1
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
                registrations[identifier]?.pathEvents &+= 1
                registrations[identifier]?.awaySince = nil
                scheduleCall(identifier, at: now, isLook: true)
            }
            return true
        case .directoryLost(let directory):
            guard directoryUsers[directory] != nil else { return false }
            directoryStatus[directory] = .missing
            _ = retryAwaited(in: directory)
            for identifier in users(of: directory) {
                registrations[identifier]?.pathEvents &+= 1
                apply(.removed, to: identifier, now: now)
            }
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
}
