import Foundation

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
