import Foundation

/// The system calls a suite file's write path makes (opening, locking, writing, syncing, renaming):
/// a seam through which tests make them fail on demand — a full disk, a lock that cannot be
/// taken — without root or a small file system (docs/design.md, "Store model and backends").
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
}

/// The `flock` system call (inside a type, `flock` names the method, and Glibc's `flock` struct
/// shadows the function).
@inline(__always)
private func systemFlock(_ descriptor: Int32, _ operation: Int32) -> Int32 {
    flock(descriptor, operation)
}
