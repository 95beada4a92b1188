import Foundation

/// What `stat` says about a file, for the polling fallback: any difference means the content
/// may have changed.
///
/// The inode is compared together with size and both times, never alone: inode numbers are
/// reused after a delete and create.
struct FileStamp: Equatable, Sendable {
    var device: UInt64
    var inode: UInt64
    var size: Int64
    var modificationSeconds: Int
    var modificationNanoseconds: Int
    var changeSeconds: Int
    var changeNanoseconds: Int
    /// The inode and change time of the link itself when the path is a symbolic link
    /// (re-pointing a link to a file that looks the same still counts).
    var linkInode: UInt64
    var linkChangeSeconds: Int
    var linkChangeNanoseconds: Int

    /// The stamp of the file at `path` (symbolic links followed), or `nil` when it is absent.
    static func current(at path: String) -> FileStamp? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        var linkInfo = stat()
        if lstat(path, &linkInfo) != 0 { linkInfo = info }
        return FileStamp(
            device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
            modificationSeconds: Int(info.st_mtim.tv_sec), modificationNanoseconds: Int(info.st_mtim.tv_nsec),
            changeSeconds: Int(info.st_ctim.tv_sec), changeNanoseconds: Int(info.st_ctim.tv_nsec),
            linkInode: UInt64(linkInfo.st_ino), linkChangeSeconds: Int(linkInfo.st_ctim.tv_sec),
            linkChangeNanoseconds: Int(linkInfo.st_ctim.tv_nsec))
    }

    /// What `chmod` and `chown` change of a directory, which the polling fallback compares at each
    /// full round: the trust in a managed file depends on its directory's mode and owner
    /// (inotify reports the same as `IN_ATTRIB` on the directory). Not its times: they move with
    /// every file written in it.
    struct DirectoryAttributes: Equatable, Sendable {
        var mode: UInt32
        var owner: UInt32
        var group: UInt32
    }

    /// The mode, owner and group of the directory at `path` (symbolic links followed), or `nil`
    /// when it cannot be read.
    static func attributes(ofDirectory path: String) -> DirectoryAttributes? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return DirectoryAttributes(mode: UInt32(info.st_mode), owner: info.st_uid, group: info.st_gid)
    }

    /// Whether `path` names an existing directory (symbolic links followed).
    static func isDirectory(_ path: String) -> Bool {
        attributes(ofDirectory: path).map { $0.mode & UInt32(S_IFMT) == UInt32(S_IFDIR) } ?? false
    }
}
