import Foundation

/// What `stat` says of a file, enough to tell that it changed since it was last read.
///
/// Used as a shortcut ("unchanged, no need to read it again") by a write (must it re-read before
/// merging?) and by a reload (is this the file this process wrote or read last?). Device, inode,
/// size, and the modification and change times to the nanosecond are compared together: a rename
/// brings a new inode and change time, an editor's write in place a new change time (on Linux 6.13
/// and later a fine-grained one, as the last `stat` of the file asked for it; on older kernels a
/// same-size write within one clock tick could look the same; docs/design.md, "Live
/// reload: this process's own flush"). When the identity differs, the bytes are compared before parsing.
package struct FileIdentity: Equatable, Sendable {
    var device: UInt64
    var inode: UInt64
    var size: Int64
    var modified: timespec
    var changed: timespec

    init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modified = info.st_mtim
        changed = info.st_ctim
    }

    package static func == (lhs: FileIdentity, rhs: FileIdentity) -> Bool {
        lhs.device == rhs.device && lhs.inode == rhs.inode && lhs.size == rhs.size
            && lhs.modified.tv_sec == rhs.modified.tv_sec && lhs.modified.tv_nsec == rhs.modified.tv_nsec
            && lhs.changed.tv_sec == rhs.changed.tv_sec && lhs.changed.tv_nsec == rhs.changed.tv_nsec
    }
}
