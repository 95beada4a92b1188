import Foundation

extension FileBackend {
    /// Appends the change to the journal. Called under the ``ChangeLock`` (``SuiteStore``'s `set`),
    /// which puts the appends in the changes' order: once the journal is made, the append goes to
    /// it straight, without the slot's lock (one lock and unlock fewer per `set`). The journal's own
    /// lock keeps the append apart from a flush's mark and release of it; the slot's other state
    /// (the mark, the origins, the listing) is not touched here.
    package func journal(_ value: PropertyListValue?, forKey key: String) {
        appendingJournal.withLockHeld { appending in
            if let journal = appending {
                let problem = journal._withUnsafeGuaranteedRef {
                    $0.append(JournalRecord.Kind(change: value), key: key, value: value)
                }
                if let problem { journaling.withLock { $0.disable(problem) } }
                return
            }
            // The first change, or the journal could not be made: through the slot, which makes it
            // (or reports, once, that it cannot). The slot keeps the journal it made for good.
            appending = journaling.withLock { slot in
                slot.append(value, forKey: key)
                return slot.journal.map { Unmanaged.passUnretained($0) }
            }
        }
    }

    package func journalReplacement(_ values: [String: PropertyListValue]) {
        journaling.withLock { $0.appendReplacement(values) }
    }

    package func journalOrigin(_ origin: DefaultsHistoryEntry.Origin, forKey key: String, generation: UInt64) {
        journaling.withLock { $0.appendOrigin(origin, forKey: key, generation: generation) }
    }

    package func journalMark() {
        journaling.withLock { $0.takeMark() }
    }

    /// Releases the records written by the write that just made the suite file durable.
    func releaseJournal() {
        journaling.withLock { $0.release() }
    }

    /// The journals of dead processes, opened and locked (``DeadJournal/take(excluding:listing:using:)``).
    /// Call under the suite lock.
    func takeDeadJournals() -> [DeadJournal] {
        var (own, listing) = journaling.withLock { ($0.journal?.path, $0.listing) }
        let dead = DeadJournal.take(excluding: own, listing: &listing, using: operations)
        // (Another thread's write may have listed meanwhile: either listing is a true one.)
        journaling.withLock { $0.listing = listing }
        return dead
    }

    /// Whether the journals directory holds another process's journal (live or dead), looked at
    /// without the suite lock: opening a suite takes the lock only then. (A journal made after this
    /// look is a live process's, or one that died after this open began: the next open or flush
    /// replays it.)
    func mayHaveDeadJournals() -> Bool {
        var (own, listing) = journaling.withLock { ($0.journal?.path, $0.listing) }
        let names = listing.entries(using: operations) ?? []
        journaling.withLock { $0.listing = listing }
        return names.contains { listing.directory + "/" + $0 != own }
    }

    /// The path of this process's journal, if it has one.
    var ownJournalPath: String? { journaling.withLock { $0.path } }
}
