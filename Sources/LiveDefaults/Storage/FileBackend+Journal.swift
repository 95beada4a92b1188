import Foundation

/// This process's journal of a file suite, made at the first change (docs/design.md, "The journal").
package struct JournalSlot {
    var journal: SuiteJournal?
    /// Making or growing the journal failed (reported once): the suite is written as before journals.
    var disabled = false
    /// Where the journal stood when the store took the changes now being written.
    var mark: Int?
    /// What this process last found in the journals directory (listed again only when it changed).
    var listing: JournalListing

    init(suitePath: String) {
        listing = JournalListing(directory: SuiteJournal.directory(forSuiteFile: suitePath))
    }
}

extension FileBackend {
    package func journal(_ value: PropertyListValue?, forKey key: String) {
        journaling.withLock { slot in
            guard let journal = journal(in: &slot) else { return }
            if let problem = journal.append(value == nil ? .remove : .set, key: key, value: value) {
                slot.disabled = true
                Self.reportLater(problem)
            }
        }
    }

    package func journalReplacement(_ values: [String: PropertyListValue]) {
        journaling.withLock { slot in
            guard let journal = journal(in: &slot) else { return }
            var problem = journal.append(.clear, key: "", value: nil)
            for (key, value) in values where problem == nil {
                problem = journal.append(.set, key: key, value: value)
            }
            if let problem {
                slot.disabled = true
                Self.reportLater(problem)
            }
        }
    }

    package func journalMark() {
        journaling.withLock { slot in slot.mark = slot.journal?.mark() }
    }

    /// Releases the records written by the write that just made the suite file durable.
    func releaseJournal() {
        journaling.withLock { slot in
            if let mark = slot.mark { slot.journal?.release(upTo: mark) }
            slot.mark = nil
        }
    }

    /// The journals of dead processes, opened and locked (``DeadJournal/take(excluding:listing:)``).
    /// Call under the suite lock.
    func takeDeadJournals() -> [DeadJournal] {
        var (own, listing) = journaling.withLock { ($0.journal?.path, $0.listing) }
        let dead = DeadJournal.take(excluding: own, listing: &listing)
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
        let names = listing.entries() ?? []
        journaling.withLock { $0.listing = listing }
        return names.contains { listing.directory + "/" + $0 != own }
    }

    /// The path of this process's journal, if it has one.
    var ownJournalPath: String? { journaling.withLock { $0.journal?.path } }

    private func journal(in slot: inout JournalSlot) -> SuiteJournal? {
        if let journal = slot.journal { return journal }
        guard !slot.disabled else { return nil }
        do throws(DefaultsError) {
            slot.journal = try SuiteJournal(suitePath: file.location.path, operations: operations)
        } catch {
            slot.disabled = true
            var error = error
            error.suite = file.location.name
            Self.reportLater(error)
        }
        return slot.journal
    }

    /// Reports off the calling thread: changes are journalled under the change lock, where a
    /// handler that reads a suite would wait on itself.
    private static func reportLater(_ error: DefaultsError) {
        DispatchQueue.global().async { DefaultsErrorReporting.report(error) }
    }
}
