import Foundation
import LiveDefaultsWatching

/// This process's journal of one suite (docs/design.md, "The journal: no `set` lost when the
/// process dies"): an append-only, checksummed log in a file mapped into memory, so that every
/// `set` is in the page cache, which outlives the process, before `set` returns.
///
/// The file is `<directory>/.<suite file>.journals/<pid>-<random>`, created `0600`, and this
/// process holds an `flock` on it for its lifetime: a journal whose lock can be taken belongs to a
/// dead process (a reused PID does not matter). Appending is a memory copy under a lock; the file
/// grows (a system call) by ``JournalFormat/chunk`` at a time.
///
/// Format (``JournalFormat``): a 32-byte header (magic, version, a state word holding the
/// generation and the offset of the first record not yet written to the suite file), then records,
/// each 8-byte aligned: a word holding the payload's length and the generation, written last in one
/// aligned store (a record is either whole or absent when the process dies), a CRC-32 of the
/// payload, and the payload (kind, key, the value's binary property list).
package final class SuiteJournal: @unchecked Sendable {
    package let path: String
    private let descriptor: Int32
    /// For growing (rare: every ``JournalFormat/chunk`` bytes), so an existential is enough.
    private let operations: any FileOperations
    private let lock = Locked<Mapping>(Mapping())

    private struct Mapping {
        var base: UnsafeMutableRawPointer?
        var capacity = 0
        var end = JournalFormat.headerSize
        var generation: UInt32 = 1
        /// Growing failed once: nothing more is appended (the store writes as it did before
        /// journals), and records already appended stay until the next flush releases them.
        var failed = false
    }

    /// The hidden directory holding the journals of the suite file at `suitePath`: beside it, or
    /// under the runtime directory for an administrator's file (``SidecarPlacement``).
    package static func directory(forSuiteFile suitePath: String) -> String {
        var base = SidecarPlacement.current.base(forSuiteFile: suitePath)
        guard let slash = SuiteFile.lastSlash(in: base) else {
            return SuiteFile.directory(of: base) + "/." + SuiteFile.name(of: base) + ".journals"
        }
        // `<directory>/.<name>.journals`, the path's bytes copied once into a string of that size:
        // the split and three appends cost each store about 7,500 instructions of a cold open
        // (docs/performance.md).
        let suffix = ".journals".utf8
        return base.withUTF8 { bytes in
            // The directory as ``SuiteFile/directory(of:)`` gives it ("/" for a file at the root).
            let directoryEnd = slash == 0 ? 1 : slash
            let directoryBytes = UnsafeBufferPointer<UInt8>(rebasing: bytes[..<directoryEnd])
            let nameBytes = UnsafeBufferPointer<UInt8>(rebasing: bytes[(slash + 1)...])
            let count = directoryEnd + 2 + nameBytes.count + suffix.count
            return String(unsafeUninitializedCapacity: count) { buffer in
                var end = buffer.initialize(fromContentsOf: directoryBytes)
                buffer[end] = UInt8(ascii: "/")
                buffer[end + 1] = UInt8(ascii: ".")
                end = buffer[(end + 2)...].initialize(fromContentsOf: nameBytes)
                return buffer[end...].initialize(fromContentsOf: suffix)
            }
        }
    }

    /// Creates this process's journal for the suite file at `suitePath`.
    ///
    /// - Parameters:
    ///   - suitePath: The suite file the journal is beside.
    ///   - operations: The system calls that make, lock, size and map the journal, and grow it
    ///     later (``FileOperations``: tests make them fail). Appending makes none.
    /// - Throws: ``DefaultsError`` (`writeFailed`) naming the path when the directory or file cannot
    ///   be made, locked, sized or mapped.
    package init(
        suitePath: String, operations: some FileOperations = SystemFileOperations()
    ) throws(DefaultsError) {
        let directory = Self.directory(forSuiteFile: suitePath)
        let path = directory + "/\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        self.path = path
        func failure(_ what: String, _ code: Int32) -> DefaultsError {
            DefaultsError(
                .writeFailed,
                "Could not \(what) the journal \(path) (\(String(cString: strerror(code)))). Values set in this process "
                    + "are written at the next flush as before, but a set made just before the process dies may be lost.",
                path: path, underlying: SystemError(errno: code, operation: what))
        }
        self.operations = operations
        if operations.mkdir(directory, 0o700) != 0, errno != EEXIST {
            // Under the runtime directory, the directories above it may not be there yet.
            let code = errno
            guard code == ENOENT, SidecarPlacement.current.isRelocated(suitePath),
                SidecarPlacement.makeDirectory(of: directory + "/", using: operations) == nil
            else { throw failure("create the directory of", code) }
        }
        // Root writing another user's suite file gives its journals to that user, who replays them
        // (docs/design.md, "Owners of the files root writes"); under root's runtime directory they stay root's.
        let owner =
            SidecarPlacement.current.isRelocated(suitePath)
            ? nil : FileOwner.forSidecars(ofSuiteFile: suitePath, using: operations)
        if let owner {
            do throws(SystemError) { try owner.giveDirectory(directory, using: operations) } catch {
                throw failure("give to its owner the directory of", error.errno)
            }
        }
        let opened = operations.open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard opened >= 0 else { throw failure("create", errno) }
        if let owner {
            do throws(SystemError) { try owner.give(opened, using: operations) } catch {
                operations.close(opened)
                operations.unlink(path)
                throw failure("give to its owner", error.errno)
            }
        }
        guard operations.flock(opened, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            operations.close(opened)
            operations.unlink(path)
            throw failure("lock", code)
        }
        let mapped = lock.withLock { mapping -> Int32? in
            if let code = Self.grow(
                &mapping, descriptor: opened, path: path, to: JournalFormat.chunk, using: operations)
            {
                return code
            }
            if let base = mapping.base {
                JournalFormat.writeHeader(base, generation: mapping.generation, start: JournalFormat.headerSize)
            }
            return nil
        }
        if let code = mapped {
            operations.close(opened)
            operations.unlink(path)
            throw failure("size and map", code)
        }
        descriptor = opened
        // Who writes this journal, once per process (docs/design.md, "History: the writer").
        HistoryWriterFile.write(HistoryIdentity.current, toJournal: opened)
    }

    deinit {
        lock.withLock { mapping in
            // Nothing unwritten: the journal goes. Otherwise it stays for the next process.
            if mapping.end == JournalFormat.headerSize || Self.isReleased(mapping) { operations.unlink(path) }
            if let base = mapping.base { operations.unmap(base, mapping.capacity) }
        }
        operations.close(descriptor)
    }

    private static func isReleased(_ mapping: Mapping) -> Bool {
        guard let base = mapping.base else { return true }
        return JournalFormat.readState(base).start >= mapping.end
    }

    /// Makes the mapping at least `capacity` bytes: reserves the blocks (so a full disk fails here,
    /// not as a fault on a later memory copy) and maps the file again. Returns the error, nil on success.
    private static func grow(
        _ mapping: inout Mapping, descriptor: Int32, path: String, to capacity: Int,
        using operations: some FileOperations
    ) -> Int32? {
        let reserved = operations.allocate(descriptor, off_t(capacity))
        if reserved != 0 { return reserved }
        let mapped = operations.map(descriptor, capacity)
        guard let mapped, mapped != MAP_FAILED else { return errno }
        if let old = mapping.base { operations.unmap(old, mapping.capacity) }
        mapping.base = mapped
        mapping.capacity = capacity
        return nil
    }

    /// Appends a record. Returns an error to report when the journal could not grow (once: later
    /// appends do nothing).
    package func append(_ kind: JournalRecord.Kind, key: String, value: PropertyListValue?) -> DefaultsError? {
        // The common values (numbers, booleans, short ASCII strings) are encoded straight into the
        // mapping; others go through the codec first (an allocation).
        if kind == .set, let value, var inline = JournalFormat.InlineObject(value) {
            var key = key
            return key.withUTF8 { keyBytes in
                inline.withBytes { prefix, text in
                    appendRecord(payloadCount: 8 + keyBytes.count + prefix.count + text.count) { destination in
                        JournalFormat.writePayload(
                            at: destination, kind: .setObject, key: keyBytes, value: prefix, text)
                    }
                }
            }
        }
        var payload = JournalFormat.payload(kind, key: key, value: value)
        return payload.withUnsafeMutableBytes { bytes in
            let payload = UnsafeRawBufferPointer(bytes)
            return appendRecord(payloadCount: payload.count) { destination in
                if let source = payload.baseAddress { destination.copyMemory(from: source, byteCount: payload.count) }
            }
        }
    }

    /// Appends an ``JournalRecord/Kind/origin`` record: the next change of `key` comes from `origin`.
    package func appendOrigin(_ origin: DefaultsHistoryEntry.Origin, key: String) -> DefaultsError? {
        var payload = JournalFormat.payload(.origin, key: key, value: nil)
        payload[1] = HistoryFormat.originCode(origin)
        return payload.withUnsafeBytes { payload in
            appendRecord(payloadCount: payload.count) { destination in
                if let source = payload.baseAddress { destination.copyMemory(from: source, byteCount: payload.count) }
            }
        }
    }

    /// Appends a record whose payload `write` copies to the address it is given.
    @inline(__always)
    private func appendRecord(payloadCount: Int, _ write: (UnsafeMutableRawPointer) -> Void) -> DefaultsError? {
        lock.withLock { mapping -> DefaultsError? in
            guard !mapping.failed else { return nil }
            let size = JournalFormat.recordSize(payloadCount: payloadCount)
            if mapping.end + size > mapping.capacity {
                let wanted = (mapping.end + size + JournalFormat.chunk - 1) / JournalFormat.chunk * JournalFormat.chunk
                if let code = Self.grow(
                    &mapping, descriptor: descriptor, path: path, to: wanted, using: operations)
                {
                    mapping.failed = true
                    return DefaultsError(
                        .writeFailed,
                        "Could not grow the journal \(path) (\(String(cString: strerror(code)))). Values set in this "
                            + "process are written at the next flush as before, but a set made just before the "
                            + "process dies may be lost.",
                        path: path, underlying: SystemError(errno: code, operation: "grow"))
                }
            }
            guard let base = mapping.base else { return nil }
            let record = base + mapping.end
            write(record + JournalFormat.recordHeaderSize)
            JournalFormat.sealRecord(at: record, payloadCount: payloadCount, generation: mapping.generation)
            mapping.end += size
            return nil
        }
    }

    /// The offset after the last record appended: records before it are in the changes a flush
    /// took at the same moment (under the store's state lock).
    package func mark() -> Int {
        lock.withLock { $0.end }
    }

    /// The records before `mark` are in the suite file, durable: they are released. Records
    /// appended since (during the flush) stay: the state word's start moves to `mark`, or, when
    /// there are none, the generation moves on and appends start over at the header.
    package func release(upTo mark: Int) {
        lock.withLock { mapping in
            guard let base = mapping.base else { return }
            if mapping.end == mark {
                mapping.generation &+= 1
                if mapping.generation == 0 { mapping.generation = 1 }
                JournalFormat.writeState(base, generation: mapping.generation, start: JournalFormat.headerSize)
                mapping.end = JournalFormat.headerSize
            } else {
                JournalFormat.writeState(base, generation: mapping.generation, start: mark)
            }
        }
    }
}
