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

/// What a process last found in a suite's journals directory, so that a flush lists it only when it
/// may have changed (docs/design.md, "The journal"): one `stat` instead of opening and reading
/// the directory, at every flush.
///
/// The directory's identity (``FileIdentity``: device, inode, size, modification and change times)
/// changes when an entry is added, removed or renamed. A listing is trusted only when the
/// directory's change time was already older than ``settledAfter`` when it was listed: a change
/// after the listing then gets a later time, even where the file system keeps its times at a
/// clock tick or a second. (A change time cannot be set by hand, as a modification time can.)
/// The names found are kept, not what was found of them: a journal whose writer was alive may be
/// dead by the next flush, and is tried again.
package struct JournalListing: Sendable {
    /// How old the directory's last change must be for a listing to be trusted: the coarsest time
    /// step of Linux's file systems (FAT keeps times to 2 s) when the change time has no fraction
    /// of a second, else several clock ticks (the kernel stamps times from a clock that may lag by
    /// one tick, 10 ms at HZ=100).
    static func settledAfter(_ changed: timespec) -> Duration {
        changed.tv_nsec == 0 ? .seconds(2) : .milliseconds(50)
    }

    /// The journals directory.
    package let directory: String
    /// The directory as it stood when listed; nil when the listing is not to be trusted.
    private var identity: FileIdentity?
    private var names: [String] = []

    package init(directory: String) {
        self.directory = directory
    }

    /// Whether the next call lists the directory (the last listing was not trusted).
    var isStale: Bool { identity == nil }

    /// The entries of the directory but hidden ones, from the last listing when the directory has
    /// not changed since; nil when there is no directory. `operations` makes the `stat` and the
    /// listing (``FileOperations``).
    mutating func entries(using operations: some FileOperations = SystemFileOperations()) -> [String]? {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var info = stat()
        guard operations.stat(directory, &info) == 0 else {
            self = JournalListing(directory: directory)
            return nil
        }
        let current = FileIdentity(info)
        if let identity, identity == current { return names }
        guard let listed = operations.directoryEntries(directory) else {
            self = JournalListing(directory: directory)
            return nil
        }
        let found = listed.filter { !$0.hasPrefix(".") }
        let age =
            Duration.seconds(now.tv_sec - info.st_ctim.tv_sec) + .nanoseconds(now.tv_nsec - info.st_ctim.tv_nsec)
        identity = age > Self.settledAfter(info.st_ctim) ? current : nil
        names = found
        return found
    }
}
