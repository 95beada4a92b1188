import Foundation

extension FileBackend {
    package func journal(_ value: PropertyListValue?, forKey key: String) {
        journaling.withLock { $0.append(value, forKey: key) }
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
