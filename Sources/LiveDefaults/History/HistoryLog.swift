import Foundation

/// A suite file's history log (docs/design.md, "History: the log"): `.<suite file>.history`
/// beside the file (or under the runtime directory, as its other sidecars: ``SidecarPlacement``),
/// `0600`, appended under the suite's lock by the write that made the changes it records.
///
/// Its system calls go through the ``FileOperations`` each method is given: the suite's, for a
/// store's writes (docs/design.md, "System calls: one seam").
package struct HistoryLog: Sendable {
    /// The log's path.
    package let path: String
    /// The suite file's path.
    package let suitePath: String
    package let suite: String
    /// The log kept open between writes (docs/design.md, "History: the log"): reused while the
    /// log's path still names the file it has open.
    private let kept = Locked<Appender?>(nil)
    /// Whether the log is kept open between writes. A test that must remount the suite's directory
    /// read-only says no: a log open for writing keeps its file system busy, as a journal does.
    package let keepsOpen: Bool
    /// The bounds this log is kept within when not the process's (``Defaults/historyRetention``):
    /// a test sets its own on its own log, which no other test's sees.
    package let retentionOverride = Locked<DefaultsHistoryRetention?>(nil)

    package init(suitePath: String, suite: String, keepsOpen: Bool = true) {
        self.suitePath = suitePath
        self.suite = suite
        self.keepsOpen = keepsOpen
        path = Self.path(forSuiteFile: suitePath)
    }

    /// The log of the suite file at `suitePath`.
    package static func path(forSuiteFile suitePath: String) -> String {
        let base = SidecarPlacement.current.base(forSuiteFile: suitePath)
        return SuiteFile.directory(of: base) + "/." + SuiteFile.name(of: base) + ".history"
    }

    /// What reading the log found.
    package struct Contents: Sendable {
        /// The whole records, oldest first.
        package var batches: [HistoryBatch] = []
        /// Whether older entries were pruned (the first kept is not number 1).
        package var isPruned: Bool { (batches.first?.firstSequence ?? 1) > 1 }
        /// The number of the oldest entry kept.
        package var firstSequence: UInt64? { batches.first?.firstSequence }
        /// The number the next entry will have.
        package var nextSequence: UInt64 = 1
        /// The suite file as the last record left it.
        package var marker: FileIdentity?

        /// The entries, oldest first.
        package func entries(suite: String) -> [DefaultsHistoryEntry] {
            var entries: [DefaultsHistoryEntry] = []
            for batch in batches {
                let date = Date(timeIntervalSince1970: Double(batch.time) / 1e9)
                for (index, change) in batch.changes.enumerated() {
                    entries.append(
                        DefaultsHistoryEntry(
                            id: batch.firstSequence + UInt64(index), date: date, suite: suite, key: change.key,
                            oldValue: change.oldValue, newValue: change.newValue, origin: change.origin,
                            writer: batch.writer))
                }
            }
            return entries
        }
    }

    /// Reads every whole record (a torn tail is left out). No lock is needed: records are appended
    /// whole or checked, and a prune replaces the file by a rename.
    package func read(using operations: some FileOperations = SystemFileOperations()) -> Contents {
        guard let data = operations.contents(ofFile: path) else { return Contents() }
        return data.withUnsafeBytes { Self.contents(of: $0) }
    }

    static func contents(of bytes: UnsafeRawBufferPointer) -> Contents {
        var contents = Contents()
        guard let header = HistoryFormat.decodeHeader(bytes) else { return contents }
        contents.nextSequence = header.nextSequence
        contents.marker = header.marker
        var offset = HistoryFormat.headerSize
        while let (batch, next) = HistoryFormat.decode(bytes, at: offset) {
            contents.batches.append(batch)
            contents.nextSequence = max(contents.nextSequence, batch.firstSequence + UInt64(batch.changes.count))
            contents.marker = batch.marker
            offset = next
        }
        return contents
    }

    /// Waits until no writer holds the suite's lock, taking it shared for a moment (docs/design.md,
    /// "History: reading"). A writer renames the suite file before it appends the change's record,
    /// so a reader told of the change (the console's redraw) could read the log between the two.
    /// Returns at once when there is no lock file (no write was made) or it cannot be opened.
    package func waitForWriter(using operations: some FileOperations = SystemFileOperations()) {
        let target = SuiteFile(location: SuiteLocation(filePath: suitePath)).resolvedPath(using: operations)
        let base = SidecarPlacement.current.base(forSuiteFile: suitePath, target: target)
        let descriptor = operations.open(
            SuiteFile.sidecar(of: base, prefix: "", suffix: ".lock"), O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else { return }
        defer { operations.close(descriptor) }  // closing releases the lock
        _ = try? SystemCall.retrying(.flock) { operations.flock(descriptor, LOCK_SH) }
    }

    /// Opens the log for appending; call under the suite's lock. Nil when it cannot be opened
    /// (reported once per path). The log this value opened last is reused while its path names it.
    package func openForAppending(using operations: some FileOperations = SystemFileOperations()) -> Appender? {
        if keepsOpen, let appender = kept.withLock({ $0 }), appender.isCurrent(using: operations) { return appender }
        let descriptor = operations.open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else {
            let code = errno
            HistoryReports.once(
                path,
                DefaultsError(
                    .writeFailed,
                    "Could not open the history log \(path) of suite \"\(suite)\" "
                        + "(\(String(cString: strerror(code)))); its changes are written but not recorded.",
                    suite: suite, path: path, underlying: SystemError(errno: code, operation: "open")))
            return nil
        }
        if !SidecarPlacement.current.isRelocated(suitePath),
            let owner = FileOwner.forSidecars(ofSuiteFile: suitePath, using: operations)
        {
            do throws(SystemError) { try owner.give(descriptor, using: operations) } catch {
                operations.close(descriptor)
                return nil
            }
        }
        let appender = Appender(
            path: path, suitePath: suitePath, descriptor: descriptor, retentionOverride: retentionOverride,
            using: operations)
        if keepsOpen { kept.withLock { $0 = appender } }
        return appender
    }

    /// The log opened under the suite's lock: what it says of the suite file, and appending. Kept
    /// open between writes by its ``HistoryLog``, and used only under the suite's lock. Each
    /// method makes its calls through the operations it is given (generic: no dynamic dispatch on
    /// a flush); the close when it goes, through those it was opened with.
    package final class Appender: @unchecked Sendable {
        let path: String
        let suitePath: String
        /// The operations the log was opened with, for the `close` when it goes (once a log).
        private let closing: any FileOperations
        /// Its ``HistoryLog``'s bounds, when not the process's.
        private let retentionOverride: Locked<DefaultsHistoryRetention?>
        private var descriptor: Int32
        private(set) var header = HistoryFormat.Header()
        private var size = 0
        /// The file open at `descriptor` (device and inode): the log while its path names it.
        private var device: UInt64 = 0
        private var inode: UInt64 = 0
        /// The header's bytes as this process last read or wrote them: when the file's header
        /// still holds them, and the file's size is the one this process left, no other process
        /// appended since and nothing needs decoding.
        private var headerBytes = [UInt8](repeating: 0, count: HistoryFormat.headerSize)
        private var scratch = [UInt8](repeating: 0, count: HistoryFormat.headerSize)
        /// Reused for each append's bytes.
        private var buffer = HistoryBytes()

        init(
            path: String, suitePath: String, descriptor: Int32,
            retentionOverride: Locked<DefaultsHistoryRetention?> = Locked(nil), using operations: some FileOperations
        ) {
            self.path = path
            self.suitePath = suitePath
            self.descriptor = descriptor
            self.retentionOverride = retentionOverride
            closing = operations
            var info = stat()
            if operations.fstat(descriptor, &info) == 0 {
                device = UInt64(info.st_dev)
                inode = UInt64(info.st_ino)
                size = Int(info.st_size)
            }
            load(using: operations)
        }

        deinit { closing.close(descriptor) }

        /// The bounds the log is kept within: its ``HistoryLog``'s, else the process's.
        var retention: DefaultsHistoryRetention { retentionOverride.withLock { $0 } ?? HistoryIdentity.retention }

        /// Reads the header (and adopts a tail past its end); `size` is the file's.
        private func load(using operations: some FileOperations) {
            let read = headerBytes.withUnsafeMutableBytes { operations.pread(descriptor, $0.baseAddress, $0.count, 0) }
            if read == HistoryFormat.headerSize,
                let found = headerBytes.withUnsafeBytes({ HistoryFormat.decodeHeader($0) })
            {
                header = found
                // Records a writer appended but whose header update it did not finish: adopted.
                if size > header.end { adoptTail(using: operations) }
            } else {
                header = HistoryFormat.Header()
                size = 0
                for index in headerBytes.indices { headerBytes[index] = 0 }
            }
        }

        /// Whether the log's path still names the file open here (not pruned by a rename, removed
        /// or replaced since), with the header brought up to date: another process may have appended.
        func isCurrent(using operations: some FileOperations) -> Bool {
            var info = stat()
            guard operations.stat(path, &info) == 0, UInt64(info.st_dev) == device, UInt64(info.st_ino) == inode
            else {
                return false
            }
            let found = Int(info.st_size)
            let read = scratch.withUnsafeMutableBytes { operations.pread(descriptor, $0.baseAddress, $0.count, 0) }
            if found == size, read == HistoryFormat.headerSize, sameHeader() { return true }
            size = found
            load(using: operations)
            return true
        }

        /// Whether the header just read into `scratch` is the one this process last read or wrote
        /// (one `memcmp`, not the arrays' element by element `==`).
        private func sameHeader() -> Bool {
            scratch.withUnsafeBytes { found in
                headerBytes.withUnsafeBytes { known in
                    guard let found = found.baseAddress, let known = known.baseAddress else { return false }
                    return memcmp(found, known, HistoryFormat.headerSize) == 0
                }
            }
        }

        /// The suite file as the log's last record left it.
        var marker: FileIdentity? { header.marker }

        private func adoptTail(using operations: some FileOperations) {
            var tail = [UInt8](repeating: 0, count: size - header.end)
            let read = tail.withUnsafeMutableBytes {
                operations.pread(descriptor, $0.baseAddress, $0.count, off_t(header.end))
            }
            guard read == tail.count else { return }
            tail.withUnsafeBytes { bytes in
                var offset = 0
                while let (batch, next) = HistoryFormat.decode(bytes, at: offset) {
                    header.entries += UInt64(batch.changes.count)
                    header.nextSequence = max(header.nextSequence, batch.firstSequence + UInt64(batch.changes.count))
                    header.marker = batch.marker
                    offset = next
                }
                header.end += offset
            }
        }

        /// Appends `batches` (numbering their entries) and prunes when past a bound by a quarter.
        package func append(
            _ batches: [HistoryBatch], retention: DefaultsHistoryRetention,
            using operations: some FileOperations = SystemFileOperations()
        ) {
            buffer.bytes.removeAll(keepingCapacity: true)
            if size < HistoryFormat.headerSize { HistoryFormat.encodeHeader(header, into: &buffer) }
            let start = buffer.bytes.isEmpty ? header.end : 0
            var appended = header
            for batch in batches where !batch.changes.isEmpty || batch.marker != appended.marker {
                // (Numbered as encoded: a copy of the batch to set its number copies its writer too.)
                HistoryFormat.encode(batch, numbered: appended.nextSequence, into: &buffer)
                appended.nextSequence += UInt64(batch.changes.count)
                appended.entries += UInt64(batch.changes.count)
                appended.marker = batch.marker
            }
            appended.end = (buffer.bytes.isEmpty ? header.end : start + buffer.bytes.count)
            guard appended != header else { return }
            let written = buffer.bytes.withUnsafeBytes {
                operations.pwrite(descriptor, $0.baseAddress, $0.count, off_t(start))
            }
            guard written == buffer.bytes.count else { return }
            if size > appended.end { _ = operations.ftruncate(descriptor, off_t(appended.end)) }
            // The header last: a process that dies before it leaves whole records the next writer adopts.
            // (Stored straight into the bytes kept to compare with the file's.)
            headerBytes.withUnsafeMutableBytes { bytes in
                HistoryFormat.encodeHeader(appended, in: bytes)
                _ = operations.pwrite(descriptor, bytes.baseAddress, bytes.count, 0)
            }
            header = appended
            size = appended.end
            if header.entries > UInt64(retention.maxEntries + retention.maxEntries / 4)
                || header.end > retention.maxBytes + retention.maxBytes / 4
            {
                prune(retention, using: operations)
            }
        }

        /// Keeps the newest entries within the bounds: a new file, renamed over the log.
        func prune(_ retention: DefaultsHistoryRetention, using operations: some FileOperations) {
            var data = [UInt8](repeating: 0, count: size)
            let read = data.withUnsafeMutableBytes { operations.pread(descriptor, $0.baseAddress, $0.count, 0) }
            guard read == size else { return }
            var contents = data.withUnsafeBytes { HistoryLog.contents(of: $0) }
            var kept: [[UInt8]] = []
            var entries = 0
            var bytes = HistoryFormat.headerSize
            for batch in contents.batches.reversed() {
                var encoded = HistoryFormat.encode(batch)
                if entries + batch.changes.count > retention.maxEntries || bytes + encoded.count > retention.maxBytes {
                    // Part of this batch: its newest changes, as many as both bounds allow.
                    // (The whole batch does not fit, so at most all its changes but one.)
                    var room = min(retention.maxEntries - entries, batch.changes.count - 1)
                    while room > 0 {
                        let dropped = batch.changes.count - room
                        var part = batch
                        part.changes.removeFirst(dropped)
                        part.firstSequence = batch.firstSequence + UInt64(dropped)
                        encoded = HistoryFormat.encode(part)
                        if bytes + encoded.count <= retention.maxBytes {
                            kept.append(encoded)
                            entries += part.changes.count
                            bytes += encoded.count
                            break
                        }
                        room -= max(1, room / 2)
                    }
                    break
                }
                kept.append(encoded)
                entries += batch.changes.count
                bytes += encoded.count
            }
            var pruned = HistoryFormat.Header()
            pruned.entries = UInt64(entries)
            pruned.nextSequence = header.nextSequence
            pruned.marker = header.marker
            pruned.end = bytes
            contents.batches = []
            var file = HistoryFormat.encodeHeader(pruned)
            for record in kept.reversed() { file += record }
            let temporary = path + ".tmp-\(getpid())"
            let output = operations.open(temporary, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
            guard output >= 0 else { return }
            var keepsOutput = false
            defer { if !keepsOutput { operations.close(output) } }
            if !SidecarPlacement.current.isRelocated(suitePath),
                let owner = FileOwner.forSidecars(ofSuiteFile: suitePath, using: operations)
            {
                do throws(SystemError) { try owner.give(output, using: operations) } catch {
                    operations.unlink(temporary)
                    return
                }
            }
            var info = stat()
            do throws(SystemError) {
                try operations.writeAll(output, Data(file))
            } catch {
                operations.unlink(temporary)
                return
            }
            guard operations.fstat(output, &info) == 0, operations.rename(temporary, path) == 0 else {
                operations.unlink(temporary)
                return
            }
            // The new file is the log now: kept open in place of the old one.
            operations.close(descriptor)
            descriptor = output
            keepsOutput = true
            device = UInt64(info.st_dev)
            inode = UInt64(info.st_ino)
            header = pruned
            size = file.count
            headerBytes = Array(file[0..<HistoryFormat.headerSize])
        }
    }
}

/// Problems with history logs, reported once per log.
enum HistoryReports {
    private static let reported = Locked<Set<String>>([])

    static func once(_ path: String, _ problem: DefaultsError) {
        guard reported.withLock({ $0.insert(path).inserted }) else { return }
        DispatchQueue.global().async { DefaultsErrorReporting.report(problem) }
    }
}
