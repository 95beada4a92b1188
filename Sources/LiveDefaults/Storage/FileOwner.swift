import Foundation

/// The owner and group root gives a file it makes for another user (docs/design.md, "Owners of
/// the files root writes").
///
/// A replacement keeps the owner and group of the file it replaces; a new file (a suite file, a
/// lock, a journal, a directory) made in a directory of another user takes that directory's owner
/// and group, as if that user had made it. Sidecars beside a suite file take the suite file's
/// owner (the directory's while there is no file). Only root may give a file away, so a process of
/// any other user never changes an owner; sidecars kept under root's runtime directory
/// (``SidecarPlacement``) stay root's.
package struct FileOwner: Sendable, Equatable {
    package let user: uid_t
    package let group: gid_t

    package init(user: uid_t, group: gid_t) {
        self.user = user
        self.group = group
    }

    /// This process's effective user and group, read once: only a process of root gives files away,
    /// and a suite's directory is safe when it is root's or this user's (``SuiteFile``).
    static let process = FileOwner(user: geteuid(), group: getegid())

    /// The owner a file root makes in place of `existing` (what `stat` said of it, nil when there
    /// is no file) in `directory` should have: the existing file's, or for a new file the
    /// directory's when another user owns it. Nil when this process is not root, or when the file
    /// would be root's anyway. The directory's `stat` goes through `operations`.
    package static func forFile(
        replacing existing: stat?, in directory: String, using operations: some FileOperations = SystemFileOperations()
    ) -> FileOwner? {
        guard process.user == 0 else { return nil }
        if let existing {
            let owner = FileOwner(user: existing.st_uid, group: existing.st_gid)
            return owner == process ? nil : owner
        }
        var info = stat()
        guard operations.stat(directory, &info) == 0, info.st_uid != process.user else { return nil }
        return FileOwner(user: info.st_uid, group: info.st_gid)
    }

    /// The owner of the sidecars (lock, journals) kept beside the suite file at `path`: the suite
    /// file's (its path followed through links), or its directory's while there is none. Nil when
    /// this process is not root, or the sidecars would be root's anyway. The `stat`s go through
    /// `operations`.
    package static func forSidecars(
        ofSuiteFile path: String, using operations: some FileOperations = SystemFileOperations()
    ) -> FileOwner? {
        guard process.user == 0 else { return nil }
        var info = stat()
        let exists = operations.stat(path, &info) == 0
        return forFile(replacing: exists ? info : nil, in: SuiteFile.directory(of: path), using: operations)
    }

    /// Gives the file open at `descriptor` to this owner, unless it has it already. Only a file of
    /// root's is given away, and a regular file only when it has one name: never a file another
    /// user put at the name (a hard link to a file of root's elsewhere would give that file away).
    package func give(_ descriptor: Int32, using operations: some FileOperations) throws(SystemError) {
        var info = stat()
        try SystemCall.retrying(.fstat) { operations.fstat(descriptor, &info) }
        if info.st_uid == user, info.st_gid == group { return }
        guard info.st_uid == 0, info.st_mode & S_IFMT == S_IFDIR || info.st_nlink == 1 else { return }
        try SystemCall.retrying(.fchown) { operations.fchown(descriptor, user, group) }
    }

    /// Gives the directory at `path` (not followed if a symbolic link) to this owner, unless it has
    /// it already.
    package func giveDirectory(_ path: String, using operations: some FileOperations) throws(SystemError) {
        let descriptor = try SystemCall.retrying(.open) {
            operations.open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0)
        }
        defer { operations.close(descriptor) }
        try give(descriptor, using: operations)
    }
}
