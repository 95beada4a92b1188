extension WatchRegistry {
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
