import Foundation

/// The system calls the library makes, by name: what a ``SystemError`` names, and what a test
/// makes fail (``FileOperations/fault(_:)``). docs/design.md, "System calls: one seam".
package enum SystemCall: String, Sendable, CaseIterable {
    case open, close, read, pread, write, pwrite, fsync, ftruncate, flock, rename, link, unlink, readlink, mkdir
    case access, stat, fstat, fchown, fchmod
    case fallocate = "posix_fallocate"
    case mmap, munmap, opendir, kill

    /// Runs `body` until it does not fail with `EINTR`; a result of -1 throws the `errno` it left,
    /// as a ``SystemError`` naming `call`. The one rule for interrupted calls and their errors.
    @discardableResult
    @inline(__always)
    package static func retrying<Result: FixedWidthInteger>(
        _ call: SystemCall, _ body: () -> Result
    ) throws(SystemError) -> Result {
        while true {
            let result = body()
            if result != -1 { return result }
            let code = errno
            if code != EINTR { throw SystemError(errno: code, operation: call.rawValue) }
        }
    }
}

/// The one seam for the library's system calls (docs/design.md, "System calls: one seam"): the
/// store's files, journals, locks and listings are opened, read, written, synced, renamed,
/// mapped and removed through it, and tests make any of those calls fail on demand — a full
/// disk, a lock that cannot be taken, a mapping refused — without root or a small file system.
///
/// A conforming type says only which calls fail (``fault(_:)``); the calls themselves are
/// written once, below, and each keeps its system call's contract: a failure returns -1 (or
/// `MAP_FAILED`) and leaves `errno` set. ``SystemCall/retrying(_:_:)`` retries `EINTR` and turns
/// `errno` into a ``SystemError``; ``readAll(_:sizeHint:)`` and ``writeAll(_:_:)`` loop through it.
///
/// The file backend takes its operations as a generic parameter, so the production calls are
/// specialised to ``SystemFileOperations``, whose ``fault(_:)`` is a constant nil: the check
/// folds away and nothing is dispatched dynamically on the write path.
package protocol FileOperations: Sendable {
    /// The `errno` that `call` fails with instead of being made; nil to make the real call.
    func fault(_ call: SystemCall) -> Int32?

    /// The name the next temporary file beside the suite file at `target` is to take, before the
    /// random ones (``SuiteFile``'s atomic replace); nil for a random name. Tests plant a file or a
    /// symbolic link at the name they give here.
    func plannedTemporaryName(beside target: String) -> String?
}

/// The real system calls, never failed on purpose.
package struct SystemFileOperations: FileOperations {
    package init() {}

    @inline(__always)
    package func fault(_ call: SystemCall) -> Int32? { nil }

    @inline(__always)
    package func plannedTemporaryName(beside target: String) -> String? { nil }
}

extension FileOperations {
    /// Whether `call` is to fail; if so, `errno` is set to what it fails with.
    @inline(__always)
    private func fails(_ call: SystemCall) -> Bool {
        guard let code = fault(call) else { return false }
        errno = code
        return true
    }

    @inline(__always)
    package func open(_ path: String, _ flags: Int32, _ mode: mode_t = 0) -> Int32 {
        fails(.open) ? -1 : Glibc.open(path, flags, mode)
    }

    @inline(__always)
    @discardableResult
    package func close(_ descriptor: Int32) -> Int32 { fails(.close) ? -1 : Glibc.close(descriptor) }

    @inline(__always)
    package func read(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
        fails(.read) ? -1 : Glibc.read(descriptor, buffer, count)
    }

    @inline(__always)
    package func pread(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int, _ offset: off_t) -> Int {
        fails(.pread) ? -1 : Glibc.pread(descriptor, buffer, count, offset)
    }

    @inline(__always)
    package func write(_ descriptor: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
        fails(.write) ? -1 : Glibc.write(descriptor, buffer, count)
    }

    @inline(__always)
    package func pwrite(_ descriptor: Int32, _ buffer: UnsafeRawPointer?, _ count: Int, _ offset: off_t) -> Int {
        fails(.pwrite) ? -1 : Glibc.pwrite(descriptor, buffer, count, offset)
    }

    @inline(__always)
    package func fsync(_ descriptor: Int32) -> Int32 { fails(.fsync) ? -1 : Glibc.fsync(descriptor) }

    @inline(__always)
    package func ftruncate(_ descriptor: Int32, _ length: off_t) -> Int32 {
        fails(.ftruncate) ? -1 : Glibc.ftruncate(descriptor, length)
    }

    @inline(__always)
    package func flock(_ descriptor: Int32, _ operation: Int32) -> Int32 {
        fails(.flock) ? -1 : systemFlock(descriptor, operation)
    }

    @inline(__always)
    package func rename(_ source: String, _ destination: String) -> Int32 {
        fails(.rename) ? -1 : Glibc.rename(source, destination)
    }

    /// `link`: a second name for the file at `source`.
    @inline(__always)
    package func link(_ source: String, _ destination: String) -> Int32 {
        fails(.link) ? -1 : Glibc.link(source, destination)
    }

    @inline(__always)
    @discardableResult
    package func unlink(_ path: String) -> Int32 { fails(.unlink) ? -1 : Glibc.unlink(path) }

    /// `readlink`: the target of the symbolic link at `path`, nil when it is not one (or cannot be
    /// read; `errno` is then set).
    package func readlink(_ path: String) -> String? {
        guard !fails(.readlink) else { return nil }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Int(PATH_MAX) + 1) { buffer in
            guard let start = buffer.baseAddress else {
                preconditionFailure("a temporary allocation of \(buffer.count) bytes has an address")
            }
            let count = Glibc.readlink(path, start, buffer.count - 1)
            return count > 0 ? String(decoding: buffer[..<count], as: UTF8.self) : nil
        }
    }

    /// `kill(pid, 0)`: 0 when a process `pid` exists (and may be signalled), else -1 with `errno`
    /// (`ESRCH`: there is none).
    @inline(__always)
    package func processExists(_ pid: pid_t) -> Int32 { fails(.kill) ? -1 : Glibc.kill(pid, 0) }

    @inline(__always)
    package func mkdir(_ path: String, _ mode: mode_t) -> Int32 { fails(.mkdir) ? -1 : Glibc.mkdir(path, mode) }

    /// `access`: 0 when `path` can be reached as `mode` asks (`F_OK`: it exists).
    @inline(__always)
    package func access(_ path: String, _ mode: Int32) -> Int32 {
        fails(.access) ? -1 : Glibc.access(path, mode)
    }

    /// `stat`: follows symbolic links.
    @inline(__always)
    package func stat(_ path: String, _ info: inout Glibc.stat) -> Int32 {
        fails(.stat) ? -1 : systemStat(path, &info)
    }

    /// Whether `path` is a directory, following symbolic links: one `stat` (`FileManager` took
    /// several microseconds more).
    @inline(__always)
    package func isDirectory(_ path: String) -> Bool {
        var info = Glibc.stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
    }

    @inline(__always)
    package func fstat(_ descriptor: Int32, _ info: inout Glibc.stat) -> Int32 {
        fails(.fstat) ? -1 : Glibc.fstat(descriptor, &info)
    }

    /// `fchown`: gives the file open at `descriptor` to `owner` and `group` (root gives the files it
    /// makes for another user to that user: ``FileOwner``).
    @inline(__always)
    package func fchown(_ descriptor: Int32, _ owner: uid_t, _ group: gid_t) -> Int32 {
        fails(.fchown) ? -1 : Glibc.fchown(descriptor, owner, group)
    }

    @inline(__always)
    package func fchmod(_ descriptor: Int32, _ mode: mode_t) -> Int32 {
        fails(.fchmod) ? -1 : Glibc.fchmod(descriptor, mode)
    }

    /// `posix_fallocate` of `length` bytes from the start: returns 0 or the error number (it does
    /// not set `errno`).
    @inline(__always)
    package func allocate(_ descriptor: Int32, _ length: off_t) -> Int32 {
        if let code = fault(.fallocate) { return code }
        return posix_fallocate(descriptor, 0, length)
    }

    /// `mmap` of `length` bytes from the start of the file, shared, readable and writable: returns
    /// `MAP_FAILED` and leaves `errno` set on failure.
    @inline(__always)
    package func map(_ descriptor: Int32, _ length: Int) -> UnsafeMutableRawPointer? {
        fails(.mmap) ? MAP_FAILED : mmap(nil, length, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, 0)
    }

    /// `munmap`.
    @inline(__always)
    @discardableResult
    package func unmap(_ address: UnsafeMutableRawPointer, _ length: Int) -> Int32 {
        fails(.munmap) ? -1 : munmap(address, length)
    }

    /// The names in the directory at `path` but `.` and `..`, in the directory's order; nil when it
    /// cannot be opened. `readdir` rather than `FileManager`: its first listing costs a one-shot
    /// `defaults write` a tenth of its instructions (docs/design.md, "The `defaults` command's start-up").
    package func directoryEntries(_ path: String) -> [String]? {
        guard !fails(.opendir), let stream = opendir(path) else { return nil }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != ".", name != ".." { names.append(name) }
        }
        return names
    }

    /// Writes all of `data` to `descriptor`.
    package func writeAll(_ descriptor: Int32, _ data: Data) throws(SystemError) {
        var failure: SystemError?
        data.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) in
            guard let start = buffer.baseAddress else { return }  // no bytes (and no address): nothing to write
            var offset = 0
            while offset < buffer.count {
                do throws(SystemError) {
                    offset += try SystemCall.retrying(.write) {
                        write(descriptor, start + offset, buffer.count - offset)
                    }
                } catch {
                    failure = error
                    return
                }
            }
        }
        if let failure { throw failure }
    }

    /// Syncs the directory at `path` (after a rename or removal in it), best effort: a directory
    /// that cannot be opened or synced is left as it is.
    package func syncDirectory(_ path: String) {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        _ = fsync(descriptor)
        close(descriptor)
    }

    /// Reads the whole file at `path` (following symbolic links unless `flags` says `O_NOFOLLOW`);
    /// nil when it cannot be opened, inspected or read.
    package func contents(ofFile path: String, flags: Int32 = 0) -> Data? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | flags)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var info = Glibc.stat()
        guard fstat(descriptor, &info) == 0 else { return nil }
        return try? readAll(descriptor, sizeHint: Int(info.st_size))
    }

    /// Reads the whole file open at `descriptor`, `sizeHint` bytes expected.
    ///
    /// When `sizeHint` is the size `fstat` gave and that many bytes came, the read stops there:
    /// the bytes are the file as that `fstat` saw it (its identity, ``FileIdentity``, is what the
    /// caller keeps), and a second `read` would only find the end of the file (one system call of a
    /// cold open's 19, docs/performance.md). A file that grew in between fills the one spare byte
    /// of the buffer and is read on to its end, as a file whose size says nothing (`/proc`'s 0) is.
    ///
    /// The bytes are read into memory that is not zeroed first and handed to the `Data` as they
    /// are: `Data(count:)` zeroed the buffer byte by byte (about 56,000 instructions of a cold open
    /// of 1,000 keys, as much as a tenth of their decoding).
    package func readAll(_ descriptor: Int32, sizeHint: Int) throws(SystemError) -> Data {
        var capacity = max(sizeHint, 0) + 1
        guard var buffer = malloc(capacity) else { preconditionFailure("out of memory (\(capacity) bytes)") }
        var length = 0
        do throws(SystemError) {
            while true {
                if length == capacity {
                    capacity *= 2
                    guard let grown = realloc(buffer, capacity) else {
                        preconditionFailure("out of memory (\(capacity) bytes)")
                    }
                    buffer = grown
                }
                let (start, room) = (buffer + length, capacity - length)
                let count = try SystemCall.retrying(.read) { read(descriptor, start, room) }
                if count == 0 { break }
                length += count
                if length == sizeHint, sizeHint > 0 { break }
            }
        } catch {
            free(buffer)
            throw error
        }
        guard length > 0 else {
            free(buffer)
            return Data()
        }
        return Data(bytesNoCopy: buffer, count: length, deallocator: .free)
    }
}

/// The `flock` system call (inside a type, `flock` names the method, and Glibc's `flock` struct
/// shadows the function).
@inline(__always)
private func systemFlock(_ descriptor: Int32, _ operation: Int32) -> Int32 {
    flock(descriptor, operation)
}

/// The `stat` system call (inside a type, `stat` names the method, and Glibc's `stat` struct
/// shadows the function).
@inline(__always)
private func systemStat(_ path: String, _ info: inout stat) -> Int32 {
    stat(path, &info)
}
