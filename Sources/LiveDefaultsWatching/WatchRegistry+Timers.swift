extension WatchRegistry {
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

    /// The work taken by ``takeDueWork(now:)`` is done: its looks were made and its calls returned.
    mutating func finished(_ work: DueWork) {
        guard !inFlight.isEmpty else { return }
        inFlight.subtract(work.calls)
        inFlight.subtract(work.settleChecks.lazy.map(\.id))
        inFlight.subtract(work.absenceChecks.lazy.map(\.id))
        inFlight.subtract(work.polls.lazy.map(\.id))
    }
}
