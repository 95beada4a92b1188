import Foundation
import LiveDefaultsWatching

/// Directories already warned about (``DefaultsError/Code/insecureDirectory``): once each per process.
private let insecureDirectoriesReported = Locked<Set<String>>([])

/// A suite kept in its property-list file (contracts 1, 3–5 of docs/design.md): a write is lock
/// ▸ re-read if the file changed ▸ apply this process's changes ▸ temporary file ▸ fsync ▸ rename
/// ▸ fsync the directory; a file that does not parse is kept aside before anything replaces it;
/// a symbolic link at the suite's path is followed; the directory is watched.
///
/// `Operations` is the system-call seam (``FileOperations``): a generic parameter, so the
/// library's writes call the system directly, and tests make calls fail on demand.
package final class FileBackend<Operations: FileOperations>: SuiteBackend {
    package let file: SuiteFile
    let operations: Operations
    private let state = Locked(State())
    /// This process's journal of the suite (``JournalSlot``).
    let journaling: Locked<JournalSlot>
    /// The slot's journal once it is made, for ``journal(_:forKey:)`` (FileBackend+Journal.swift),
    /// which runs under the ``ChangeLock``. The append then takes no lock of the slot's: the change
    /// lock orders the appends, and the journal's own lock keeps them apart from a flush's mark
    /// and release (docs/performance.md, "Issue 40"). Unmanaged: the slot holds the journal from
    /// when it is made until this backend goes, and a strong reference here would cost a retain
    /// and a release per `set`.
    let appendingJournal = ChangeOrdered<Unmanaged<SuiteJournal>?>(nil)
    /// The suite's history log (FileBackend+History.swift), made at the first write that records
    /// (``historyLog``).
    private let madeHistoryLog = Locked<HistoryLog?>(nil)
    /// Whether the history log stays open between writes (see ``init(location:operations:keepsHistoryLogOpen:)``).
    private let keepsHistoryLogOpen: Bool

    /// The suite's history log. Its path is worked out at the first write, not at open: a store
    /// that is only read never needs it (about 7,500 instructions of a cold open per store,
    /// docs/performance.md). Made once, since it keeps the log open between writes.
    var historyLog: HistoryLog {
        madeHistoryLog.withLock { made in
            if let made { return made }
            let log = HistoryLog(suitePath: location.path, suite: location.name, keepsOpen: keepsHistoryLogOpen)
            made = log
            return log
        }
    }

    private struct State {
        /// The bytes last read from or written to the file: a reload that finds another identity
        /// but the same bytes is no change, and bad bytes are reported once.
        var bytes: Data?
        /// The file as this process last read or wrote it (`stat` after the rename): a reload that
        /// finds it so reads nothing (this is how the store's own writes are not echoed).
        var identity: FileIdentity?
        var format: PropertyListFormat = .binary
        /// The file on disk did not parse: it is kept aside before anything replaces it.
        var isCorrupt = false
        var version: UInt64 = 0
        var cleanedTemporaryFiles = false
        var watch: FileWatch?
        /// The binary encoding of the values this store last wrote, and their version: the next
        /// write re-encodes only the keys it changes (docs/design.md, "The codec: the binary
        /// encoder"). Used only when the values to write over are still that version.
        var encoding: (encoding: BinaryDictionaryEncoding, version: UInt64)?
        /// The file's identities before and after the last reload that found new values, for the
        /// history's outside change (docs/design.md, "History: outside changes").
        var reloaded: (from: FileIdentity?, to: FileIdentity?)?
    }

    /// The identities the last reload went from and to, once.
    func reloadedIdentities() -> (FileIdentity?, FileIdentity?)? {
        state.withLock { state in
            defer { state.reloaded = nil }
            return state.reloaded
        }
    }

    /// A backend of the suite file at `location`.
    ///
    /// - Parameters:
    ///   - location: The suite file.
    ///   - operations: The system calls the backend, its journal and its history log make.
    ///   - keepsHistoryLogOpen: Whether the history log stays open between writes: a test that
    ///     remounts the suite's directory read-only says no (a file open for writing keeps its file
    ///     system busy).
    package init(location: SuiteLocation, operations: Operations, keepsHistoryLogOpen: Bool = true) {
        self.file = SuiteFile(location: location)
        self.operations = operations
        self.journaling = Locked(
            JournalSlot(suitePath: location.path, suite: location.name, operations: operations, makesDirectory: true))
        self.keepsHistoryLogOpen = keepsHistoryLogOpen
    }

    private var location: SuiteLocation { file.location }

    /// The format the file is written in.
    package var format: PropertyListFormat { state.withLock { $0.format } }

    // MARK: Loading

    package func load() -> SuiteLoad {
        var load = SuiteLoad()
        if let problem = replayDeadJournals() { load.warnings.append(problem) }
        var isLink = true
        do throws(DefaultsError) {
            let contents = try file.read(using: operations, isLink: &isLink)
            let parsed = try contents.map { contents throws(DefaultsError) in try parse(contents.data) }
            load.snapshot = state.withLock { state in
                state.bytes = contents?.data
                state.identity = contents?.identity
                if let parsed {
                    state.format = parsed.format
                    state.version += 1
                    state.encoding = nil
                }
                return SuiteSnapshot(values: parsed?.values ?? [:], version: state.version)
            }
        } catch {
            state.withLock { $0.isCorrupt = error.code == .corruptFile }
            load.error = error
        }
        if let warning = directoryWarning(isLink: isLink) { load.warnings.append(warning) }
        return load
    }

    /// The warning to give when others could replace the suite file (the store is still used),
    /// once per directory. `isLink` false: the load found that the suite path is not a link.
    private func directoryWarning(isLink: Bool) -> DefaultsError? {
        guard let warning = file.directoryInsecurity(using: operations, isLink: isLink), let directory = warning.path
        else {
            return nil
        }
        let isNew = insecureDirectoriesReported.withLock { $0.insert(directory).inserted }
        return isNew ? warning : nil
    }

    /// Parses suite bytes: the values and the format to write them back in.
    ///
    /// - Parameters:
    ///   - data: The suite file's bytes.
    ///   - reloading: Whether values read before stay in use when the bytes are bad (a reload), or
    ///     there are none (the first load): the error says which.
    /// - Returns: The root dictionary's values, and the format to write them back in (XML when the
    ///   file was XML, else binary).
    /// - Throws: ``DefaultsError`` with code `corruptFile` when the bytes are empty, do not parse,
    ///   or hold something other than a dictionary at their root.
    private func parse(_ data: Data, reloading: Bool = false) throws(DefaultsError) -> (
        values: [String: PropertyListValue], format: PropertyListFormat
    ) {
        if data.isEmpty {
            throw corruptFileError("is empty (0 bytes), so it is not a property list", cause: nil, reloading: reloading)
        }
        let decoded: (value: PropertyListValue, format: PropertyListFormat)
        do {
            decoded = try PropertyListCodec.decode(data)
        } catch {
            // The codec's message says where: the line (XML, old-style text) or byte offset (binary).
            throw corruptFileError(
                "does not parse as a property list (\(error.message))", cause: DefaultsError(error),
                reloading: reloading)
        }
        guard case .dictionary(let values) = decoded.value else {
            throw corruptFileError(
                "holds a \(decoded.value.typeName) at its root, not a dictionary", cause: nil, reloading: reloading)
        }
        // Written back as XML when it was XML, else binary (old-style text is read, not written).
        return (values, decoded.format == .xml ? .xml : .binary)
    }

    private func corruptFileError(_ problem: String, cause: (any Error)?, reloading: Bool) -> DefaultsError {
        let consequence =
            reloading
            ? "The values read from it before are kept in use. The file is left in place (it may still be "
                + "being edited); if this process writes before it is fixed, it is first kept aside as "
                + "\(location.path).corrupt-<time>. Fix the file to use its new values."
            : "Its values were not loaded: the suite reads as empty until the file is fixed. If this process "
                + "writes the suite first, the file is kept aside as \(location.path).corrupt-<time> before it is "
                + "replaced. Fix or remove the file to use its values."
        return DefaultsError(
            .corruptFile,
            "The suite file \(location.path) for suite \"\(location.name)\" \(problem). " + consequence,
            suite: location.name, path: location.path, underlying: cause.map { SendableDescription($0) })
    }

    // MARK: Writing

    package func write(_ changes: SuiteWrite, over known: inout SuiteSnapshot) throws(DefaultsError) -> SuiteWritten {
        removeOrphanedTemporaryFilesOnce()
        return try file.withLock(using: operations) { (target) throws(DefaultsError) in
            // Dead processes' changes first, then this process's (docs/design.md, "The journal").
            let dead = takeDeadJournals()
            let written = try writeLocked(changes, over: &known, target: target, replaying: dead)
            // The file is durable (renamed, directory synced): the journal's records in it go.
            releaseJournal()
            return written
        }
    }

    /// Removes dead writers' temporary files before this backend's first write.
    private func removeOrphanedTemporaryFilesOnce() {
        let clean = state.withLock { $0.cleanedTemporaryFiles }
        if !clean {
            file.removeOrphanedTemporaryFiles(using: operations)
            state.withLock { $0.cleanedTemporaryFiles = true }
        }
    }

    /// Replays the journals of dead processes into the suite file, if there are any (at open, so
    /// that the first values read include them).
    private func replayDeadJournals() -> DefaultsError? {
        guard mayHaveDeadJournals() else { return nil }
        do throws(DefaultsError) {
            try file.withLock(using: operations) { (target) throws(DefaultsError) in
                let dead = takeDeadJournals()
                guard !dead.isEmpty else { return }
                guard dead.contains(where: { !$0.contents.records.isEmpty }) else {
                    for journal in dead { journal.finish(suitePath: location.path, suite: location.name) }
                    return
                }
                removeOrphanedTemporaryFilesOnce()
                var known = SuiteSnapshot()
                _ = try writeLocked(.changes([:]), over: &known, target: target, replaying: dead)
            }
        } catch {
            return error
        }
        return nil
    }

    /// The part of a write done under the file lock.
    ///
    /// `known`'s values are merged into in place when the file was not changed by others (each
    /// replaced value is remembered, so a failed write puts them back as they were). `target` is
    /// the path the file is written to (the suite file, or the file its symbolic link names).
    private func writeLocked(
        _ changes: SuiteWrite, over known: inout SuiteSnapshot, target: String, replaying dead: [DeadJournal]
    ) throws(DefaultsError) -> SuiteWritten {
        var finished = false
        defer {
            if !finished { for journal in dead { journal.abandon() } }
        }
        let last = state.withLock { (identity: $0.identity, corrupt: $0.isCorrupt, format: $0.format) }
        // The last encoding is moved out (the only reference, so it changes in place), and a new
        // one is put back only after the write succeeds.
        var reusable = state.withLock { state in
            var taken: (encoding: BinaryDictionaryEncoding, version: UInt64)?
            swap(&taken, &state.encoding)
            return taken
        }
        var merged: [String: PropertyListValue] = [:]
        swap(&merged, &known.values)
        // Whether `merged` is `known`'s values changed in place, with `replaced` to undo the changes.
        var isKnown = true
        var replaced: [(key: String, value: PropertyListValue?)] = []
        func giveBack() {
            guard isKnown else { return }
            for (key, value) in replaced.reversed() { merged[key] = value }
            swap(&merged, &known.values)
            isKnown = false
        }
        var format = last.format
        // One `stat` tells whether others wrote and gives the permissions the new file keeps.
        var existing = stat()
        let exists = operations.stat(target, &existing) == 0
        let rereads = (exists ? FileIdentity(existing) : nil) != last.identity || last.corrupt
        var data: Data?
        var identity: FileIdentity?
        var encoding: BinaryDictionaryEncoding?
        var replayed = false
        // The suite's history, appended once the file is in place (docs/design.md, "History").
        var history = startRecording()
        let log = historyLog
        do throws(DefaultsError) {
            if rereads {
                // Someone else wrote since we last looked (or the file is bad): start from what is there now.
                // `target`, not the suite file's path: what is read is what is replaced.
                if let contents = try file.read(using: operations, at: target) {
                    do throws(DefaultsError) {
                        let parsed = try parse(contents.data)
                        history?.noteOutsideChange(
                            known: merged, knownIdentity: last.identity, found: parsed.values,
                            foundIdentity: contents.identity, log: log, using: operations)
                        giveBack()
                        merged = parsed.values
                        format = parsed.format
                    } catch {
                        // (The values this store knows are written, with this process's changes.)
                        // Contract 4: never replace a bad file without keeping it.
                        if let kept = try file.keepAside(using: operations) {
                            DefaultsErrorReporting.report(
                                DefaultsError(
                                    .corruptFile,
                                    "The suite file \(location.path) for suite \"\(location.name)\" did not parse; it was "
                                        + "kept as \(kept) and replaced by this process's values.",
                                    suite: location.name, path: location.path, underlying: error))
                        }
                    }
                } else {
                    history?.noteOutsideChange(
                        known: merged, knownIdentity: last.identity, found: [:], foundIdentity: nil, log: log,
                        using: operations)
                    giveBack()
                    merged = [:]
                }
            } else {
                history?.noteOutsideChange(
                    known: merged, knownIdentity: last.identity, found: merged,
                    foundIdentity: exists ? FileIdentity(existing) : nil, log: log, using: operations)
            }
            // A dead process's changes, in the order written, before this process's own.
            for journal in dead where !journal.contents.records.isEmpty {
                var changed: [(key: String, value: PropertyListValue?)] = []
                journal.apply(to: &merged, changed: &changed)
                if isKnown { replaced += changed }
                history?.noteReplayed(journal, changed: changed, after: merged)
                replayed = true
            }
            switch changes {
            case .whole(let values, _):
                history?.noteReplacement(from: merged, to: values, origins: takenOrigins())
                giveBack()
                merged = values
            case .changes(let pending):
                if isKnown { replaced.reserveCapacity(pending.count) }
                for (key, change) in pending {
                    let old =
                        if let value = change.value { merged.updateValue(value, forKey: key) } else {
                            merged.removeValue(forKey: key)
                        }
                    if isKnown { replaced.append((key, old)) }
                    if history != nil {
                        history?.own.append(
                            HistoryRecording.OwnChange(
                                key: key, old: old, new: change.value, generation: change.generation))
                    }
                }
                history?.noteOwn(origins: takenOrigins())
            }
            if changes.removesSuite {
                try file.remove(using: operations)
            } else {
                let encoded: Data
                do throws(PropertyListError) {
                    if format == .binary {
                        if !rereads, !replayed, case .changes(let pending) = changes,
                            reusable?.version == known.version,
                            var reused = reusable?.encoding
                        {
                            reusable = nil  // (`reused` is now the only reference)
                            // The bytes kept to know this store's own writes (`bytes`) are that
                            // encoding's file: let go of them, so that a same-size change is made in
                            // that buffer rather than in a copy. (If this write fails, the next
                            // reload reads the file again rather than comparing bytes.)
                            state.withLock { $0.bytes = nil }
                            // `merged` is the values that encoding was made from, with `pending` applied.
                            encoded = reused.applying(pending.lazy.map { (key: $0.key, value: $0.value.value) })
                            encoding = reused
                        } else {
                            let whole = BinaryDictionaryEncoding(merged)
                            encoded = whole.data
                            encoding = whole
                        }
                    } else {
                        encoded = try PropertyListCodec.encode(.dictionary(merged), format: format)
                    }
                } catch {
                    throw DefaultsError(
                        .writeFailed, "Could not encode suite \"\(location.name)\": \(error.message)",
                        suite: location.name, path: location.path, underlying: DefaultsError(error))
                }
                identity = try file.replace(
                    with: encoded, at: target, existing: exists ? existing : nil, using: operations)
                data = encoded
            }
        } catch {
            giveBack()
            throw error
        }
        finished = true
        history?.finish(leaving: identity, using: operations)
        for journal in dead { journal.finish(suitePath: location.path, suite: location.name) }
        let version = state.withLock { state -> UInt64 in
            state.bytes = data
            state.identity = identity
            state.isCorrupt = false
            state.format = format
            state.version += 1
            state.encoding = encoding.map { ($0, state.version) }
            return state.version
        }
        return SuiteWritten(
            snapshot: SuiteSnapshot(values: merged, version: version), unchangedByOthers: !rereads && !replayed)
    }

    // MARK: Outside changes

    package func reload(goneForGood: Bool) -> SuiteReload {
        // The identity first: when the file is the one this process last wrote or read (its own
        // flush, which the watcher reports as any other rename), nothing changed and the file is
        // not read (docs/design.md, "Live reload: this process's own flush").
        var info = stat()
        let present = operations.stat(location.path, &info) == 0
        let absent = !present && (errno == ENOENT || errno == ENOTDIR)
        let (known, hadContent) = state.withLock { ($0.identity, $0.identity != nil || $0.bytes != nil) }
        if present, FileIdentity(info) == known { return .unchanged }
        // Absent after "may have changed": it went after the watcher looked, and the watcher,
        // which owns the deletion grace, says "gone for good" if it stays away.
        if absent, !goneForGood || !hadContent { return .unchanged }
        let contents: SuiteFile.Contents?
        do throws(DefaultsError) {
            contents = absent ? nil : try file.read(using: operations)
        } catch {
            return .failed(error)
        }
        if contents == nil, !goneForGood || !hadContent { return .unchanged }
        // Another identity but the same bytes (a `touch`, a copy of the same file): no change.
        let same = state.withLock { state -> Bool in
            guard let contents, state.bytes == contents.data else { return false }
            state.identity = contents.identity
            return true
        }
        if same { return .unchanged }
        var parsed: (values: [String: PropertyListValue], format: PropertyListFormat)?
        if let contents {
            do throws(DefaultsError) {
                parsed = try parse(contents.data, reloading: true)
            } catch {
                // Keep the last good values; the file is kept aside only if this process must write
                // before it is fixed (a person may still be editing it).
                let isNew = state.withLock { state -> Bool in
                    let isNew = state.bytes != contents.data
                    state.bytes = contents.data
                    state.identity = contents.identity
                    state.isCorrupt = true
                    return isNew
                }
                return .unreadable(error, isNew: isNew)
            }
        }
        let version = state.withLock { state -> UInt64 in
            state.reloaded = (state.identity, contents?.identity)
            state.bytes = contents?.data
            state.identity = contents?.identity
            state.isCorrupt = false
            if let parsed { state.format = parsed.format }
            state.version += 1
            state.encoding = nil
            return state.version
        }
        return .changed(SuiteSnapshot(values: parsed?.values ?? [:], version: version))
    }

    package func startWatching(_ onChange: @escaping @Sendable (SuiteChange) -> Void) {
        let needsWatch = state.withLock { $0.watch == nil }
        guard needsWatch else { return }
        let watch = FileWatcher.shared.watch(path: location.path) { change in
            switch change {
            case .mayHaveChanged: onChange(.mayHaveChanged)
            case .goneForGood: onChange(.goneForGood)
            }
        }
        state.withLock { state in
            if state.watch == nil { state.watch = watch } else { watch.cancel() }
        }
    }
}
