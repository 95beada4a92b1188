import Foundation
import Synchronization

/// The suite file on disk: reading it, locking it against other processes, and replacing it
/// atomically (contract 3), and keeping a bad file aside (contract 4).
package struct SuiteFile: Sendable {
    package let location: SuiteLocation

    package init(location: SuiteLocation) { self.location = location }

    /// What was read: the bytes and the identity of the file they came from.
    package struct Contents: Sendable {
        package var data: Data
        package var identity: FileIdentity
    }

    /// The path writes go to: the suite file, or, when it is a symlink, the file the link finally
    /// names (so a dotfile manager's link survives the replace). Its `readlink`s go through
    /// `operations` (docs/design.md, "System calls: one seam").
    package func resolvedPath(using operations: some FileOperations = SystemFileOperations()) -> String {
        var path = location.path
        for _ in 0..<32 {
            guard let target = operations.readlink(path) else { return path }
            path = target.hasPrefix("/") ? target : Self.directory(of: path) + "/" + target
        }
        return path
    }

    /// Reads the file; nil when it does not exist.
    ///
    /// - Throws: ``DefaultsError/Code/readFailed`` when it cannot be read, or is not a regular file
    ///   (a FIFO would block the reader forever, a device such as `/dev/zero` never ends).
    package func read() throws(DefaultsError) -> Contents? {
        try read(using: SystemFileOperations())
    }

    /// Reads the file as ``read()`` does, opening it through `operations` (tests make that fail).
    ///
    /// - Parameters:
    ///   - operations: The system calls to make (``FileOperations``).
    ///   - target: The path to open: the suite file (nil), or the path a write resolved it to
    ///     (``withLock(using:_:)``'s), so that a write reads the very file it replaces even if the
    ///     suite file's link goes or changes in between.
    /// - Returns: The contents, or nil when there is no file.
    /// - Throws: ``DefaultsError/Code/readFailed`` as ``read()`` does.
    package func read<Operations: FileOperations>(using operations: Operations, at target: String? = nil)
        throws(DefaultsError) -> Contents?
    {
        var isLink = true
        return try read(using: operations, at: target, isLink: &isLink)
    }

    /// Reads the file as ``read(using:at:)`` does, and tells whether the path itself may be a
    /// symbolic link: `isLink` is false when the open showed it is not one (it was opened without
    /// following links, or nothing is there), so that ``resolvedPath(using:)`` needs no `readlink`
    /// to know (docs/design.md, "Opening a suite: what a cold open does").
    package func read<Operations: FileOperations>(
        using operations: Operations, at target: String? = nil, isLink: inout Bool
    ) throws(DefaultsError) -> Contents? {
        let path = target ?? location.path
        // Non-blocking, so that opening a FIFO planted at the path returns at once. Not following a
        // link first: `ELOOP` says the path is one, and it is opened again, following it.
        var descriptor = operations.open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW, 0)
        let firstError = descriptor < 0 ? errno : 0
        isLink = firstError == ELOOP
        if isLink { descriptor = operations.open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK, 0) }
        if descriptor < 0 {
            let code = isLink ? errno : firstError
            if code == ENOENT || code == ENOTDIR { return nil }
            throw error(.readFailed, "Could not open", SystemError(errno: code, operation: "open"))
        }
        defer { operations.close(descriptor) }
        var info = stat()
        guard operations.fstat(descriptor, &info) == 0 else {
            throw error(.readFailed, "Could not inspect", SystemError(errno: errno, operation: "fstat"))
        }
        guard info.st_mode & S_IFMT == S_IFREG else { throw notRegularFile(info, code: .readFailed) }
        do {
            let data = try operations.readAll(descriptor, sizeHint: Int(info.st_size))
            return Contents(data: data, identity: FileIdentity(info))
        } catch {
            throw self.error(.readFailed, "Could not read", error)
        }
    }

    /// Runs `body` holding an exclusive advisory lock on the sidecar file `<suite file>.lock`
    /// (beside the file, or under the runtime directory for an administrator's file: ``SidecarPlacement``).
    package func withLock<T, Operations: FileOperations>(
        using operations: Operations, _ body: (_ target: String) throws(DefaultsError) -> T
    ) throws(DefaultsError) -> T {
        let target = resolvedPath(using: operations)
        let base = SidecarPlacement.current.base(forSuiteFile: location.path, target: target)
        let lockPath = Self.lockPath(besideBase: base)
        let flags = O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW
        // The directory is made when the lock file cannot be made for want of it, not looked for
        // before every write (a `readlink` and a `stat` fewer per flush).
        var opened = operations.open(lockPath, flags, 0o600)
        if opened < 0, errno == ENOENT {
            try createDirectoryIfNeeded(using: operations)
            if base != target, let code = SidecarPlacement.makeDirectory(of: lockPath, using: operations) {
                throw DefaultsError(
                    .lockFailed,
                    "Could not create the directory of the lock \(lockPath) for suite \"\(location.name)\": "
                        + "\(String(cString: strerror(code))).",
                    suite: location.name, path: lockPath, underlying: SystemError(errno: code, operation: "mkdir"))
            }
        }
        let descriptor: Int32
        do {
            if opened < 0 { opened = try SystemCall.retrying(.open) { operations.open(lockPath, flags, 0o600) } }
            descriptor = opened
            // A lock beside the file is the file's owner's as much as the file (docs/design.md,
            // "Owners of the files root writes"); one under root's runtime directory stays root's.
            if base == target, let owner = FileOwner.forSidecars(ofSuiteFile: target, using: operations) {
                do { try owner.give(descriptor, using: operations) } catch {
                    operations.close(descriptor)
                    throw error
                }
            }
            do { try SystemCall.retrying(.flock) { operations.flock(descriptor, LOCK_EX) } } catch {
                operations.close(descriptor)  // no lock: the descriptor is not kept
                throw error
            }
        } catch {
            throw DefaultsError(
                .lockFailed,
                "Could not lock \(lockPath) for suite \"\(location.name)\": \(error). Check that the directory is writable.",
                suite: location.name, path: lockPath, underlying: error)
        }
        defer { operations.close(descriptor) }  // closing releases the lock
        return try body(target)
    }

    /// Replaces the suite file with `data` atomically: a new temporary file in the same directory
    /// (exclusive create, no symlink following), fsync, rename over the file, fsync the directory.
    /// The suite file is never truncated in place, so a crash at any moment leaves the old or the
    /// new contents, complete.
    ///
    /// `synced: false` leaves out both `fsync`s, for a file that may be lost to a power cut (a fleet
    /// suite's offline cache): a reader still finds the old file or the new one, whole.
    ///
    /// - Returns: The identity of the file now in place.
    @discardableResult
    package func replace<Operations: FileOperations>(
        with data: Data, using operations: Operations, synced: Bool = true
    ) throws(DefaultsError) -> FileIdentity {
        let target = resolvedPath(using: operations)
        var existing = stat()
        let exists = operations.stat(target, &existing) == 0
        return try replace(
            with: data, at: target, existing: exists ? existing : nil, using: operations, synced: synced)
    }

    /// Replaces the file at `target` (``resolvedPath()``, resolved by the caller) as
    /// ``replace(with:using:)`` does, given what `stat` said of it: its permissions are kept.
    ///
    /// - Parameters:
    ///   - data: The new contents.
    ///   - target: The path to replace.
    ///   - existing: What `stat` said of `target`, nil when there is no file there.
    ///   - operations: The system calls to make (``FileOperations``).
    ///   - synced: Whether the file and the directory are synced (see ``replace(with:using:synced:)``).
    /// - Returns: The identity of the file written, from its open descriptor after the rename (no
    ///   path lookup, and it is this write's file even if another program replaced the path since).
    /// - Throws: ``DefaultsError`` with code `writeFailed` when the directory cannot be made or the
    ///   file cannot be written, or when what is at `target` is not a regular file (a device, a
    ///   FIFO, a directory: never replaced, whatever the caller's read found); the old file is then
    ///   left as it was.
    package func replace<Operations: FileOperations>(
        with data: Data, at target: String, existing: stat?, using operations: Operations, synced: Bool = true
    ) throws(DefaultsError) -> FileIdentity {
        // The last guard of the refusal ``read(using:)`` makes: the device a link names (say
        // `/dev/zero`) is never renamed over, whatever the read before found.
        if let existing, existing.st_mode & S_IFMT != S_IFREG { throw notRegularFile(existing, code: .writeFailed) }
        let directory = Self.directory(of: target)
        // A file in place means its directory is there.
        if existing == nil { try createDirectoryIfNeeded(using: operations) }
        let mode: mode_t = existing.map { $0.st_mode & 0o7777 } ?? 0o600
        // Root keeps the owner of the file it replaces (docs/design.md, "Owners of the files root writes").
        let owner = FileOwner.forFile(replacing: existing, in: directory, using: operations)
        var temporary = ""
        var written = stat()
        var inspected = false
        do throws(SystemError) {
            let descriptor = try createTemporaryFile(beside: target, path: &temporary, using: operations)
            do throws(SystemError) {
                // The owner before the mode: a change of owner may clear the set-ID bits.
                if let owner {
                    try SystemCall.retrying(.fchown) { operations.fchown(descriptor, owner.user, owner.group) }
                }
                if mode != 0o600 { try SystemCall.retrying(.fchmod) { operations.fchmod(descriptor, mode) } }
                try operations.writeAll(descriptor, data)
                // fsync rather than fdatasync: for a new file fdatasync must write the inode as well
                // (its size and blocks are needed to read the data back), on ext4 in the same journal
                // commit, so it would save nothing here.
                if synced { try SystemCall.retrying(.fsync) { operations.fsync(descriptor) } }
                try SystemCall.retrying(.rename) { operations.rename(temporary, target) }
            } catch {
                operations.close(descriptor)
                throw error
            }
            // After the rename, as the rename changes the file's ctime. The data is on disk
            // (fsync): closing has nothing left to report of it.
            inspected = operations.fstat(descriptor, &written) == 0
            operations.close(descriptor)
        } catch {
            if !temporary.isEmpty { operations.unlink(temporary) }
            throw self.error(.writeFailed, "Could not write", error, path: target)
        }
        if synced { operations.syncDirectory(directory) }
        return FileIdentity(inspected ? written : stat())
    }

    /// The random part of temporary names: a sequence seeded once per process and mixed
    /// (splitmix64), so that a write asks the system for no randomness. A name only has to be
    /// unlikely to be taken; the exclusive create decides, and a taken name is passed over.
    private static let nameSequence = Atomic<UInt64>(UInt64.random(in: 0...UInt64.max))

    private static func nextNameNumber() -> UInt32 {
        var mixed = nameSequence.wrappingAdd(0x9E37_79B9_7F4A_7C15, ordering: .relaxed).newValue
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return UInt32(truncatingIfNeeded: mixed ^ (mixed >> 31))
    }

    /// How many names a write tries for its temporary file before it gives up.
    static let temporaryNameAttempts = 16

    /// Creates a new temporary file beside `target` (exclusive create, no symlink following), and
    /// sets `path` to it. A name already taken — a planted file or symbolic link, which is never
    /// written through nor removed — is passed over for another random one. The operations may
    /// name the first ones (``FileOperations/plannedTemporaryName(beside:)``: tests plant there).
    private func createTemporaryFile<Operations: FileOperations>(
        beside target: String, path: inout String, using operations: Operations
    ) throws(SystemError) -> Int32 {
        for attempt in 1...Self.temporaryNameAttempts {
            let candidate =
                operations.plannedTemporaryName(beside: target)
                ?? Self.sidecar(
                    of: target, prefix: ".",
                    suffix: Self.temporaryMarker + "\(getpid())-\(Self.nextNameNumber())")
            do {
                let descriptor = try SystemCall.retrying(.open) {
                    operations.open(candidate, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
                }
                path = candidate
                return descriptor
            } catch  where error.errno == EEXIST && attempt < Self.temporaryNameAttempts {
                continue
            }
        }
        throw SystemError(errno: EEXIST, operation: "open")
    }

    /// Removes the suite file (the whole persistent domain). A missing file is not an error.
    package func remove(using operations: some FileOperations = SystemFileOperations()) throws(DefaultsError) {
        if operations.unlink(resolvedPath(using: operations)) != 0, errno != ENOENT {
            throw error(.writeFailed, "Could not remove", SystemError(errno: errno, operation: "unlink"))
        }
        operations.syncDirectory(location.directory)
    }

    /// Keeps the current (bad) file as `<suite file>.corrupt-<time>` before anything replaces it.
    ///
    /// - Returns: The path it was kept at, or nil when there was no file.
    package func keepAside(using operations: some FileOperations = SystemFileOperations()) throws(DefaultsError)
        -> String?
    {
        let target = resolvedPath(using: operations)
        guard operations.access(target, F_OK) == 0 else { return nil }
        let stamp = Date().formatted(.iso8601.year().month().day().time(includingFractionalSeconds: false))
            .replacingOccurrences(of: ":", with: "")
        var kept = Self.sidecar(of: target, prefix: "", suffix: ".corrupt-" + stamp)
        var attempt = 1
        while operations.access(kept, F_OK) == 0 {
            attempt += 1
            kept = Self.sidecar(of: target, prefix: "", suffix: ".corrupt-" + stamp + "-\(attempt)")
        }
        // A hard link keeps the bytes without a moment in which the suite file is missing.
        if operations.link(target, kept) != 0 {
            do throws(SystemError) {
                try copy(target, to: kept, using: operations)
            } catch {
                throw DefaultsError(
                    .writeFailed,
                    "Could not keep the unreadable file \(target) aside as \(kept); it was left unchanged and nothing was written.",
                    suite: location.name, path: target, underlying: error)
            }
        }
        operations.syncDirectory(Self.directory(of: target))
        return kept
    }

    /// Copies the file at `source` to a new file (`0600`) at `destination`, where no file may be:
    /// a file system without hard links keeps a bad file aside so.
    private func copy(_ source: String, to destination: String, using operations: some FileOperations)
        throws(SystemError)
    {
        let input = try SystemCall.retrying(.open) { operations.open(source, O_RDONLY | O_CLOEXEC | O_NONBLOCK, 0) }
        defer { operations.close(input) }
        var info = stat()
        try SystemCall.retrying(.fstat) { operations.fstat(input, &info) }
        let bytes = try operations.readAll(input, sizeHint: Int(info.st_size))
        let output = try SystemCall.retrying(.open) {
            operations.open(destination, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        }
        do throws(SystemError) {
            try operations.writeAll(output, bytes)
            try SystemCall.retrying(.fsync) { operations.fsync(output) }
        } catch {
            operations.close(output)
            operations.unlink(destination)
            throw error
        }
        operations.close(output)
    }

    /// Why the directory the suite file is written in is unsafe, or nil when it is not (or does
    /// not exist yet: it is then created `0700`).
    ///
    /// Unsafe is writable by the group or others without the sticky bit — they could replace or
    /// remove the suite file — or owned by another user than this one or root. In a sticky
    /// directory such as `/tmp` others cannot replace or remove this user's files, and names they
    /// plant are never written through (exclusive create, no symlink following).
    /// `isLink` false says the suite path is known not to be a symbolic link (``read(using:isLink:)``
    /// found so), and no `readlink` is made.
    package func directoryInsecurity(
        using operations: some FileOperations = SystemFileOperations(), isLink: Bool = true
    ) -> DefaultsError? {
        let directory = Self.directory(of: isLink ? resolvedPath(using: operations) : location.path)
        guard let info = OpenDirectoryMemo.stat(of: directory, using: operations) else { return nil }
        let mode = info.st_mode & 0o7777
        let problem: String
        if mode & (S_IWGRP | S_IWOTH) != 0, mode & S_ISVTX == 0 {
            problem =
                "can be written by other users (mode \(String(mode, radix: 8))), who could replace or remove "
                + "the suite file. Make it private (chmod 700)"
        } else if info.st_uid != FileOwner.process.user, info.st_uid != 0 {  // no `geteuid` per open
            problem =
                "belongs to another user (uid \(info.st_uid)), who could replace or remove the suite file. "
                + "Keep suites in a directory of your own"
        } else {
            return nil
        }
        return DefaultsError(
            .insecureDirectory,
            "The directory \(directory) of suite \"\(location.name)\" \(problem); LiveDefaults uses it anyway.",
            suite: location.name, path: directory)
    }

    /// Removes temporary files of this suite left by writers that died mid-write.
    package func removeOrphanedTemporaryFiles(using operations: some FileOperations = SystemFileOperations()) {
        let target = resolvedPath(using: operations)
        let directory = Self.directory(of: target)
        let prefix = Self.name(of: Self.sidecar(of: target, prefix: ".", suffix: Self.temporaryMarker))
        guard let names = operations.directoryEntries(directory) else { return }
        for name in names where name.hasPrefix(prefix) {
            let pidText = name.dropFirst(prefix.count).prefix { $0 != "-" }
            guard let pid = pid_t(pidText), pid != getpid(), operations.processExists(pid) != 0, errno == ESRCH
            else { continue }
            operations.unlink(directory + "/" + name)
        }
    }

    static let temporaryMarker = ".tmp-"

    /// The error for a suite file that is not a regular file (`info`, of the file or of what its
    /// link names): it is neither read nor replaced.
    private func notRegularFile(_ info: stat, code: DefaultsError.Code) -> DefaultsError {
        DefaultsError(
            code,
            "The suite file \(location.path) for suite \"\(location.name)\" is not a regular file (\(Self.kind(of: info))), "
                + "so it was not read and will not be replaced. Remove it to use the suite.",
            suite: location.name, path: location.path)
    }

    /// What kind of file `info` describes, in words.
    private static func kind(of info: stat) -> String {
        switch info.st_mode & S_IFMT {
        case S_IFDIR: "a directory"
        case S_IFIFO: "a FIFO"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFSOCK: "a socket"
        default: "not a regular file"
        }
    }

    /// The lock file of a suite file whose sidecars are kept beside `base`
    /// (``SidecarPlacement/base(forSuiteFile:target:)``).
    package static func lockPath(besideBase base: String) -> String {
        sidecar(of: base, prefix: "", suffix: ".lock")
    }

    /// The path of a file kept beside `path` (`<prefix><name><suffix>`). When that name would be
    /// over the 255-byte limit of a file name, the suite file's name is replaced by a hash of it.
    static func sidecar(of path: String, prefix: String, suffix: String) -> String {
        let directory = Self.directory(of: path)
        var name = Self.name(of: path)
        if prefix.utf8.count + name.utf8.count + suffix.utf8.count + 24 > 255 {
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a: stable across processes
            for byte in name.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
            name = "suite-" + String(hash, radix: 16) + ".plist"
        }
        return directory + "/" + prefix + name + suffix
    }

    private func createDirectoryIfNeeded(using operations: some FileOperations) throws(DefaultsError) {
        let directory = Self.directory(of: resolvedPath(using: operations))
        var info = stat()
        if operations.stat(directory, &info) == 0 { return }
        var path = ""
        for component in directory.split(separator: "/", omittingEmptySubsequences: true) {
            path += "/" + component
            if operations.mkdir(path, 0o700) != 0 {
                if errno == EEXIST { continue }
                throw error(
                    .writeFailed, "Could not create the directory for", SystemError(errno: errno, operation: "mkdir"))
            }
            // Root making a directory in another user's takes that user's owner, as the file will.
            if let owner = FileOwner.forFile(replacing: nil, in: Self.directory(of: path), using: operations) {
                do throws(SystemError) {
                    try owner.giveDirectory(path, using: operations)
                } catch {
                    throw self.error(.writeFailed, "Could not give the new directory \(path) to its owner for", error)
                }
            }
        }
    }

    /// The directory part of an absolute `path` (everything before its last "/"; "/" for a file
    /// at the root). A Swift split: `NSString`'s path methods cost tens of microseconds a flush.
    static func directory(of path: String) -> String {
        guard let slash = lastSlash(in: path) else { return "." }
        return slash == 0 ? "/" : String(path[..<path.utf8.index(path.utf8.startIndex, offsetBy: slash)])
    }

    /// The last component of `path` (everything after its last "/").
    static func name(of path: String) -> String {
        guard let slash = lastSlash(in: path) else { return path }
        return String(path[path.utf8.index(path.utf8.startIndex, offsetBy: slash + 1)...])
    }

    /// The byte offset of the last "/" in `path`, found in its bytes: the generic
    /// `UTF8View.lastIndex(of:)` steps back one index at a time (about 680 instructions a call, four
    /// calls a cold open, docs/performance.md).
    static func lastSlash(in path: String) -> Int? {
        let found = path.utf8.withContiguousStorageIfAvailable { bytes -> Int? in
            var offset = bytes.count
            while offset > 0 {
                offset -= 1
                if bytes[offset] == UInt8(ascii: "/") { return offset }
            }
            return nil
        }
        if let found { return found }
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return nil }
        return path.utf8.distance(from: path.utf8.startIndex, to: slash)
    }

    private func error(
        _ code: DefaultsError.Code, _ verb: String, _ cause: SystemError, path: String? = nil
    ) -> DefaultsError {
        let path = path ?? location.path
        let advice: String =
            switch cause.errno {
            case ENOSPC, EDQUOT: "The disk is full; free some space."
            case EFBIG: "The file-size limit was reached (ulimit -f)."
            case EACCES, EPERM, EROFS: "Check the permissions of the file and its directory."
            default: "Check the file and its directory."
            }
        let kept = code == .writeFailed ? " The values stay in memory and are written when it succeeds." : ""
        return DefaultsError(
            code, "\(verb) \(path) for suite \"\(location.name)\": \(cause). \(advice)\(kept)",
            suite: location.name, path: path, underlying: cause)
    }
}

/// The `stat` of each suite directory one open of a ``Defaults`` made, kept on its thread for that
/// open alone: the suite and its global domain are in the same directory, and the warning about a
/// directory others can write needs it once (docs/design.md, "Opening a suite: what a cold open
/// does"). Outside an open nothing is kept: a directory found safe may not stay so.
final class OpenDirectoryMemo {
    private var directory = ""
    private var info = Glibc.stat()
    private var isSet = false

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// The memo of the open under way on this thread, if any.
    static var current: OpenDirectoryMemo? {
        pthread_getspecific(key).map { Unmanaged<OpenDirectoryMemo>.fromOpaque($0).takeUnretainedValue() }
    }

    /// Starts keeping `stat`s on this thread; nil when an open under way already does (its end
    /// then ends the memo).
    static func begin() -> OpenDirectoryMemo? {
        guard pthread_getspecific(key) == nil else { return nil }
        let memo = OpenDirectoryMemo()
        pthread_setspecific(key, Unmanaged.passRetained(memo).toOpaque())
        return memo
    }

    /// Stops keeping them: what was kept is forgotten.
    func end() {
        pthread_setspecific(Self.key, nil)
        Unmanaged.passUnretained(self).release()
    }

    /// `directory`'s `stat`, made through `operations` the first time in this open; nil when it
    /// fails (not kept).
    static func stat(of directory: String, using operations: some FileOperations) -> Glibc.stat? {
        let memo = current
        if let memo, memo.isSet, memo.directory == directory { return memo.info }
        var info = Glibc.stat()
        guard operations.stat(directory, &info) == 0 else { return nil }
        if let memo {
            memo.directory = directory
            memo.info = info
            memo.isSet = true
        }
        return info
    }
}
