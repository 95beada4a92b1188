import Foundation

/// This process's journal of a suite, made at its first change (docs/design.md, "The journal"):
/// a file suite's, beside its file, and a fleet suite's pending writes, beside its offline cache.
/// Kept under its owner's lock; a journal that cannot be made or grown is reported once, and the
/// suite goes on as before journals.
package struct JournalSlot {
    var journal: SuiteJournal?
    /// Making or growing the journal failed (reported once): the suite goes on without it.
    var disabled = false
    /// Where the journal stood when the store took the changes now being written.
    var mark: Int?
    /// Keys whose next change comes from another origin than the process's own (a rollback, a
    /// migration), with the change's generation; not yet taken by a write.
    var origins: [String: (origin: DefaultsHistoryEntry.Origin, generation: UInt64)] = [:]
    /// The same, for the changes a write has taken (at ``takeMark()``) and not yet released.
    package private(set) var markedOrigins: [String: (origin: DefaultsHistoryEntry.Origin, generation: UInt64)] = [:]
    /// What this process last found in the journals directory (listed again only when it changed).
    var listing: JournalListing
    private let suitePath: String
    private let suite: String
    private let operations: any FileOperations
    /// Makes the suite file's directory before the journal: the directory is made by the first
    /// write (a file suite's flush, a fleet suite's first save of its cache), and the journal of the
    /// first change comes before it.
    private let makesDirectory: Bool

    package init(
        suitePath: String, suite: String, operations: any FileOperations = SystemFileOperations(),
        makesDirectory: Bool = false
    ) {
        self.suitePath = suitePath
        self.suite = suite
        self.operations = operations
        self.makesDirectory = makesDirectory
        listing = JournalListing(directory: SuiteJournal.directory(forSuiteFile: suitePath))
    }

    /// The path of this process's journal, once it has one.
    package var path: String? { journal?.path }

    /// Appends a change (nil: a removal). Called under the owner's lock, in the changes' order.
    ///
    /// Inlined, with the journal called where it is stored: the journal is made out of line (once),
    /// and the call needs no copy of the reference (its retain and release) on every `set`.
    @inline(__always)
    package mutating func append(_ value: PropertyListValue?, forKey key: String) {
        if journal == nil, madeJournal() == nil { return }
        if let problem = journal?.append(JournalRecord.Kind(change: value), key: key, value: value) { disable(problem) }
    }

    /// Records that the change of `key` made at `generation` comes from `origin` (appended before
    /// the change itself, under the same lock).
    package mutating func appendOrigin(_ origin: DefaultsHistoryEntry.Origin, forKey key: String, generation: UInt64) {
        origins[key] = (origin, generation)
        guard let journal = madeJournal() else { return }
        if let problem = journal.appendOrigin(origin, key: key) { disable(problem) }
    }

    /// Appends a replacement of every value.
    package mutating func appendReplacement(_ values: [String: PropertyListValue]) {
        guard let journal = madeJournal() else { return }
        var problem = journal.append(.clear, key: "", value: nil)
        for (key, value) in values where problem == nil {
            problem = journal.append(.set, key: key, value: value)
        }
        if let problem { disable(problem) }
    }

    /// Notes where the journal stands as the store takes its pending changes for a write.
    package mutating func takeMark() {
        mark = journal?.mark()
        if !origins.isEmpty {
            markedOrigins.merge(origins) { _, new in new }
            origins = [:]
        }
    }

    /// The write of the changes taken at the last mark is over for good: their records go.
    package mutating func release() {
        if let mark { journal?.release(upTo: mark) }
        mark = nil
        markedOrigins = [:]
    }

    @inline(never)
    private mutating func madeJournal() -> SuiteJournal? {
        if let journal { return journal }
        guard !disabled else { return nil }
        if makesDirectory { mkdirs(SuiteFile.directory(of: suitePath)) }
        do throws(DefaultsError) {
            journal = try SuiteJournal(suitePath: suitePath, operations: operations)
        } catch {
            var error = error
            error.suite = suite
            disable(error)
        }
        return journal
    }

    /// Makes `directory` and the missing ones above it, `0700`.
    private func mkdirs(_ directory: String) {
        guard !directory.isEmpty, operations.access(directory, F_OK) != 0 else { return }
        let parent = SuiteFile.directory(of: directory)
        mkdirs(parent)
        // Root gives a directory it makes in another user's to that user, as the flush does
        // (docs/design.md, "Owners of the files root writes").
        guard operations.mkdir(directory, 0o700) == 0,
            let owner = FileOwner.forFile(replacing: nil, in: parent, using: operations)
        else { return }
        try? owner.giveDirectory(directory, using: operations)
    }

    /// Reports off the calling thread: changes are journalled under the change lock, where a
    /// handler that reads a suite would wait on itself. (Also for an append made to the journal
    /// without the slot: ``FileBackend/journal(_:forKey:)``.)
    package mutating func disable(_ problem: DefaultsError) {
        disabled = true
        DispatchQueue.global().async { DefaultsErrorReporting.report(problem) }
    }
}
