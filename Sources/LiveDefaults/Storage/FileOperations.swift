import Foundation

/// The system calls a suite file's write path makes (opening, locking, writing, syncing, renaming),
/// and those that make and grow its journal (a directory, reserving blocks, mapping): a seam
/// through which tests make them fail on demand — a full disk, a lock that cannot be taken, a
/// mapping refused — without root or a small file system (docs/design.md, "Store model and
/// backends", "The journal").
///
/// The file backend takes its operations as a generic parameter, so the production calls are
/// specialised to direct system calls: nothing is dispatched dynamically on the write path.
/// Each call keeps its system call's contract: a failure returns -1 and leaves `errno` set.
package protocol FileOperations: Sendable {
    func open(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32
    func flock(_ descriptor: Int32, _ operation: Int32) -> Int32
    func write(_ descriptor: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int
    func fsync(_ descriptor: Int32) -> Int32
    func rename(_ source: String, _ destination: String) -> Int32
    func mkdir(_ path: String, _ mode: mode_t) -> Int32
    /// `fchown`: gives the file open at `descriptor` to `owner` and `group` (root gives the files it
    /// makes for another user to that user: ``FileOwner``).
    func fchown(_ descriptor: Int32, _ owner: uid_t, _ group: gid_t) -> Int32
    /// `posix_fallocate`: returns 0 or the error number (it does not set `errno`).
    func allocate(_ descriptor: Int32, _ length: off_t) -> Int32
    /// `mmap` of `length` bytes from the start of the file, shared, readable and writable: returns
    /// `MAP_FAILED` and leaves `errno` set on failure.
    func map(_ descriptor: Int32, _ length: Int) -> UnsafeMutableRawPointer?
}

/// The real system calls.
package struct SystemFileOperations: FileOperations {
    package init() {}

    @inline(__always)
    package func open(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 { Glibc.open(path, flags, mode) }

    @inline(__always)
    package func flock(_ descriptor: Int32, _ operation: Int32) -> Int32 { systemFlock(descriptor, operation) }

    @inline(__always)
    package func write(_ descriptor: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
        Glibc.write(descriptor, buffer, count)
    }

    @inline(__always)
    package func fsync(_ descriptor: Int32) -> Int32 { Glibc.fsync(descriptor) }

    @inline(__always)
    package func rename(_ source: String, _ destination: String) -> Int32 { Glibc.rename(source, destination) }

    @inline(__always)
    package func mkdir(_ path: String, _ mode: mode_t) -> Int32 { Glibc.mkdir(path, mode) }

    @inline(__always)
    package func fchown(_ descriptor: Int32, _ owner: uid_t, _ group: gid_t) -> Int32 {
        Glibc.fchown(descriptor, owner, group)
    }

    @inline(__always)
    package func allocate(_ descriptor: Int32, _ length: off_t) -> Int32 { posix_fallocate(descriptor, 0, length) }

    @inline(__always)
    package func map(_ descriptor: Int32, _ length: Int) -> UnsafeMutableRawPointer? {
        mmap(nil, length, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, 0)
    }
}

/// The `flock` system call (inside a type, `flock` names the method, and Glibc's `flock` struct
/// shadows the function).
@inline(__always)
private func systemFlock(_ descriptor: Int32, _ operation: Int32) -> Int32 {
    flock(descriptor, operation)
}
