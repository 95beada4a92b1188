import Foundation

extension FileBackend {
    /// A migrator of this backend's file, which leaves this process's own journal alone.
    package func fileMigrator() -> FileMigrator? {
        FileMigrator(file: file, ownJournal: ownJournalPath, operations: operations)
    }
}

/// Runs a migration's steps on a suite file under its lock (``Defaults/migrate(to:_:)``).
package struct FileMigrator {
    let file: SuiteFile
    /// This process's journal of the suite, if it has one: not a dead process's, never replayed here.
    var ownJournal: String? = nil
    /// The system calls the migration makes (its backend's: docs/design.md, "System calls: one
    /// seam"). An existential: a migration runs once, not per `set` or flush.
    var operations: any FileOperations = SystemFileOperations()

    /// Runs the pending steps under the suite file's lock and writes them with their record.
    ///
    /// - Parameters:
    ///   - version: The number of the last step.
    ///   - willWrite: Called under the lock before each write of this suite's file.
    ///   - body: Makes each step's changes.
    /// - Returns: The numbers of the steps run.
    /// - Throws: ``DefaultsError`` as ``Defaults/migrate(to:_:)`` does.
    func migrate(
        to version: Int, willWrite: () -> Void, _ body: (inout DefaultsMigration) throws -> Void
    ) throws(DefaultsError) -> [Int] {
        let name = file.location.name
        return try file.withLock(using: operations) { (target) throws(DefaultsError) -> [Int] in
            var (values, format) = try read(file, at: target)
            // A dead process's changes were made before this migration, so its steps see them: the
            // journals are replayed first, under the same lock, as every write does (docs/design.md,
            // "The journal"), and go once the file holding them is written. Left to a later open,
            // they would be replayed over the migrated file (a renamed key back under its old name).
            var listing = JournalListing(directory: SuiteJournal.directory(forSuiteFile: file.location.path))
            let dead = DeadJournal.take(excluding: ownJournal, listing: &listing, using: operations)
            var written = false
            defer {
                for journal in dead {
                    if written { journal.finish(suitePath: file.location.path, suite: name) } else { journal.abandon() }
                }
            }
            for journal in dead where !journal.contents.records.isEmpty {
                var changed: [(key: String, value: PropertyListValue?)] = []
                journal.apply(to: &values, changed: &changed)
            }
            var record = MigrationRecord(in: values)
            if !record.moving.isEmpty {
                willWrite()
                try finishMoves(&record, &values, format: format, target: target)
                written = true
            }
            // Every pending step runs on the values in memory; the result is written once, so
            // every process sees the migration as one change, and a crash leaves the file as it was.
            var ran: [Int] = []
            var moving = record.moving
            var failure: DefaultsError?
            while record.version + ran.count < version {
                let number = record.version + ran.count + 1
                let result: (values: [String: PropertyListValue], moves: [String: [String]])
                do {
                    result = try MigrationRecord.run(step: number, over: values, body)
                } catch {
                    failure = DefaultsError(
                        .migrationFailed,
                        "Step \(number) of the migration of suite \"\(name)\" failed; the steps before it are done "
                            + "and the next start tries again from step \(number).",
                        suite: name, underlying: SendableDescription(error))
                    break
                }
                values = result.values
                for (other, keys) in result.moves.sorted(by: { $0.key < $1.key }) {
                    let source = try read(try otherFile(other)).values
                    let present = keys.filter { source[$0] != nil }
                    for key in present { values[key] = source[key] }
                    if !present.isEmpty { moving[other, default: []].append(contentsOf: present) }
                }
                ran.append(number)
            }
            if let last = ran.last {
                record = MigrationRecord(version: last, moving: moving)
                values = record.stored(in: values)
                willWrite()
                try write(values, format: format, to: file, target: target)
                written = true
                if !record.moving.isEmpty { try finishMoves(&record, &values, format: format, target: target) }
            }
            if let failure { throw failure }
            return ran
        }
    }

    /// Removes the moved keys from their old suites (each under its own lock), then clears them
    /// from the record.
    private func finishMoves(
        _ record: inout MigrationRecord, _ values: inout [String: PropertyListValue], format: PropertyListFormat,
        target: String
    ) throws(DefaultsError) {
        for (other, keys) in record.moving.sorted(by: { $0.key < $1.key }) {
            let source = try otherFile(other)
            try source.withLock(using: operations) { (otherTarget) throws(DefaultsError) in
                var (otherValues, otherFormat) = try read(source, at: otherTarget)
                guard keys.contains(where: { otherValues[$0] != nil }) else { return }
                for key in keys { otherValues[key] = nil }
                try write(otherValues, format: otherFormat, to: source, target: otherTarget)
            }
        }
        record.moving = [:]
        values = record.stored(in: values)
        try write(values, format: format, to: file, target: target)
    }

    private func otherFile(_ suite: String) throws(DefaultsError) -> SuiteFile {
        do {
            return SuiteFile(location: try SuiteLocation(suiteName: suite, directory: file.location.directory))
        } catch let error as DefaultsError {
            throw error
        } catch {
            throw DefaultsError(.invalidSuiteName, "\(error)", suite: suite)
        }
    }

    /// The file's values and format (none, binary, when there is no file); a file that does not
    /// parse is an error: a migration never writes over it. Under the file's lock, `target` is the
    /// path the lock resolved, which the write replaces: what is read is what is replaced, as in
    /// the store's own writes (docs/design.md, "Contracts", 3).
    private func read(_ file: SuiteFile, at target: String? = nil) throws(DefaultsError) -> (
        values: [String: PropertyListValue], format: PropertyListFormat
    ) {
        guard let contents = try file.read(using: operations, at: target) else { return ([:], .binary) }
        let decoded: (value: PropertyListValue, format: PropertyListFormat)
        do throws(PropertyListError) {
            decoded = try PropertyListCodec.decode(contents.data)
        } catch {
            throw DefaultsError(
                .corruptFile, "The suite file \(file.location.path) does not parse; no migration step was run on it.",
                suite: file.location.name, path: file.location.path, underlying: DefaultsError(error))
        }
        guard case .dictionary(let values) = decoded.value else {
            throw DefaultsError(
                .corruptFile, "The suite file \(file.location.path) is not a dictionary; no migration step was run.",
                suite: file.location.name, path: file.location.path)
        }
        return (values, decoded.format)
    }

    /// Replaces the file at once (the store's atomic replace: temporary file, fsync, rename).
    private func write(
        _ values: [String: PropertyListValue], format: PropertyListFormat, to file: SuiteFile, target: String
    ) throws(DefaultsError) {
        let data: Data
        do throws(PropertyListError) {
            data = try PropertyListCodec.encode(.dictionary(values), format: format)
        } catch {
            throw DefaultsError(
                .writeFailed, "Could not encode suite \"\(file.location.name)\": \(error.message)",
                suite: file.location.name, path: file.location.path)
        }
        var existing = stat()
        let exists = operations.stat(target, &existing) == 0
        // The suite's history records the migration's changes as such (docs/design.md, "History: origins").
        let before = (try? read(file, at: target).values) ?? [:]
        let history = HistoryLog(suitePath: file.location.path, suite: file.location.name)
            .openForAppending(using: operations)
        let identity = try file.replace(
            with: data, at: target, existing: exists ? existing : nil, using: operations)
        if let history {
            var changes: [HistoryChange] = []
            for key in Set(before.keys).union(values.keys).sorted() where before[key] != values[key] {
                changes.append(
                    HistoryChange(key: key, oldValue: before[key], newValue: values[key], origin: .migration))
            }
            history.append(
                [
                    HistoryBatch(
                        time: HistoryBatch.now(), writer: HistoryIdentity.current, marker: identity, changes: changes)
                ],
                retention: history.retention, using: operations)
        }
    }
}
