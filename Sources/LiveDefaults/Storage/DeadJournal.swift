import Foundation

/// A dead process's journal, opened and locked by the process replaying it (docs/design.md, "The
/// journal"): its lock could be taken, so its writer is gone (whatever process now has its PID).
package struct DeadJournal {
    package let path: String
    fileprivate let descriptor: Int32
    /// The system calls that release, remove or move it aside (``FileOperations``).
    fileprivate let operations: any FileOperations
    /// Its records not yet written to the suite file, in the order written.
    package let contents: JournalFormat.Contents
    fileprivate let modified: timespec
    /// Who wrote it (its writer file), nil when that is not known.
    package var writer: DefaultsHistoryEntry.Writer? = nil

    /// Applies the records to `values`, in the order written. Returns the keys changed.
    package func apply(
        to values: inout [String: PropertyListValue], changed: inout [(key: String, value: PropertyListValue?)]
    ) {
        contents.apply(to: &values, changed: &changed)
    }

    /// The suite file now holds the records: the journal goes (or, when it could not be read to its
    /// end, is kept aside beside the suite file and reported). Releases its lock.
    ///
    /// `applied` says where the records went, when not into the suite file (a fleet suite's
    /// journal: "were made pending writes of …").
    package func finish(suitePath: String, suite: String, applied: String? = nil) {
        defer { operations.close(descriptor) }
        guard let problem = contents.problem else {
            operations.unlink(path)
            return
        }
        let kept = suitePath + ".journal-corrupt-\(Int(Date().timeIntervalSince1970))-\(getpid())"
        let moved = operations.rename(path, kept) == 0
        DefaultsErrorReporting.report(
            DefaultsError(
                .corruptFile,
                "The journal \(path) of a process that ended, for suite \"\(suite)\", \(problem). The "
                    + "\(contents.records.count) change(s) before that point \(applied ?? "were written to \(suitePath)"); "
                    + (moved
                        ? "the journal was kept as \(kept)." : "the journal could not be moved aside and was left."),
                suite: suite, path: moved ? kept : path))
    }

    /// Releases the journal's lock without removing it (the suite file was not written).
    package func abandon() { operations.close(descriptor) }

    /// The journals of dead processes for the suite file at `suitePath`, as
    /// ``take(excluding:listing:using:)`` finds them, listing the directory afresh (for a one-off look,
    /// as a fleet suite's at open).
    package static func take(suitePath: String, excluding ownPath: String?) -> [DeadJournal] {
        var listing = JournalListing(directory: SuiteJournal.directory(forSuiteFile: suitePath))
        return take(excluding: ownPath, listing: &listing, using: SystemFileOperations())
    }

    /// The journals of dead processes in a suite's journals directory, oldest modification first,
    /// each opened and locked. `ownPath` (this process's journal) is skipped. Call under the suite lock.
    ///
    /// - Parameters:
    ///   - ownPath: This process's journal, skipped.
    ///   - listing: The journals directory (``SuiteJournal/directory(forSuiteFile:)``, made once per
    ///     suite), and what this process found the last time it looked (a flush's call keeps it): the
    ///     directory is listed again only when it may have changed (``JournalListing``); otherwise
    ///     the journals found then are tried again, as a dead process's lock goes without a change
    ///     to the directory.
    ///   - operations: The system calls that list, open, lock and read them (``FileOperations``).
    /// - Returns: The dead journals, opened and locked, oldest modification first.
    package static func take(
        excluding ownPath: String?, listing: inout JournalListing, using operations: any FileOperations
    ) -> [DeadJournal] {
        let directory = listing.directory
        guard let names = listing.entries(using: operations) else { return [] }
        var found: [DeadJournal] = []
        for name in names {
            let path = directory + "/" + name
            guard path != ownPath else { continue }
            let descriptor = operations.open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
            guard descriptor >= 0 else { continue }
            // Held by a live process (its lock is held for its lifetime): not ours to replay.
            guard operations.flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
                operations.close(descriptor)
                continue
            }
            var info = stat()
            guard operations.fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
                operations.close(descriptor)
                continue
            }
            let contents: JournalFormat.Contents
            if let data = try? operations.readAll(descriptor, sizeHint: Int(info.st_size)) {
                contents = data.withUnsafeBytes { JournalFormat.read($0) }
            } else {
                contents = JournalFormat.Contents(records: [], problem: "could not be read")
            }
            found.append(
                DeadJournal(
                    path: path, descriptor: descriptor, operations: operations, contents: contents,
                    modified: info.st_mtim,
                    writer: HistoryWriterFile.read(journal: descriptor)))
        }
        return found.sorted { ($0.modified.tv_sec, $0.modified.tv_nsec) < ($1.modified.tv_sec, $1.modified.tv_nsec) }
    }
}
