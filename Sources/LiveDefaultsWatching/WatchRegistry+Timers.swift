extension WatchRegistry {
    /// Takes the work that is due at `now` and clears its timers.
    mutating func takeDueWork(now: UInt64) -> DueWork {
        var work = DueWork()
        swap(&work.reports, &pendingReports)
        let pollNow = now >= nextPoll
        if pollNow { nextPoll = now + pollInterval }
        // In place, by index: iterating a copy while assigning back made the dictionary copy
        // itself, and each registration be copied out and back, on every event.
        let mayBePolled = mode == .polling || directoryStatus.values.contains(.failed)
        var polledDirectories = Set<String>()
        var index = registrations.startIndex
        while index != registrations.endIndex {
            defer { registrations.formIndex(after: &index) }
            let identifier = registrations.keys[index]
            if let deadline = registrations.values[index].callDeadline, deadline <= now {
                registrations.values[index].callDeadline = nil
                work.calls.append(identifier)
                work.callPaths[identifier] = registrations.values[index].watched.path
                if registrations.values[index].callIsLook { work.looks.insert(identifier) }
                registrations.values[index].callIsLook = false
            }
            if let deadline = registrations.values[index].settleDeadline, deadline <= now {
                registrations.values[index].settleDeadline = nil
                work.settleChecks.append((identifier, registrations.values[index].watched.path))
            }
            if let deadline = registrations.values[index].absenceCheckDeadline, deadline <= now {
                registrations.values[index].absenceCheckDeadline = nil
                work.absenceChecks.append((identifier, registrations.values[index].watched.path))
            }
            if mayBePolled, isPolled(registrations.values[index]),
                pollNow || registrations.values[index].baseline == .unknown
            {
                work.polls.append((identifier, registrations.values[index].watched.path))
                // Not the armed ones: inotify reports their `chmod` and `chown` already.
                if pollNow {
                    for directory in registrations.values[index].watched.directories
                    where mode == .polling || directoryStatus[directory] != .armed {
                        polledDirectories.insert(directory)
                    }
                }
            }
        }
        work.polledDirectories = Array(polledDirectories)
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
        let mayBePolled = mode == .polling || directoryStatus.values.contains(.failed)
        for registration in registrations.values {
            consider(registration.callDeadline)
            consider(registration.settleDeadline)
            consider(registration.absenceCheckDeadline)
            if !needsPolling, mayBePolled, isPolled(registration) { needsPolling = true }
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
