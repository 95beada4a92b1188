import Foundation

/// What a write records in the suite's history (docs/design.md, "History"), gathered under the
/// suite's lock as the write merges, and appended once the file is in place.
struct HistoryRecording {
    let appender: HistoryLog.Appender
    var batches: [HistoryBatch] = []
    /// This process's own changes, as the write applies them.
    var own: [OwnChange] = []

    /// One of this process's own changes: key, value before, value after, and its generation. (A
    /// struct: an array of tuples is copied and sorted through the runtime's generic tuple code.)
    struct OwnChange {
        var key: String
        var old: PropertyListValue?
        var new: PropertyListValue?
        var generation: UInt64
    }

    /// Whether the log has no record yet: the history starts at the first write LiveDefaults makes,
    /// and what the file held before is no change.
    var isFresh: Bool { appender.header.entries == 0 && appender.header.nextSequence == 1 && appender.marker == nil }

    /// Records the outside change that left the file at `found` (identity `foundIdentity`) when the
    /// last write LiveDefaults recorded left another file (docs/design.md, "History: outside
    /// changes"). `known` is what this process last read or wrote, at `knownIdentity`: the exact
    /// base when that is the file the log's last record left; else the log's newest value of each key
    /// is laid over it. The log is read through `operations`.
    mutating func noteOutsideChange(
        known: [String: PropertyListValue], knownIdentity: FileIdentity?, found: [String: PropertyListValue],
        foundIdentity: FileIdentity?, log: HistoryLog, using operations: some FileOperations
    ) {
        guard !isFresh, foundIdentity != appender.marker else { return }
        var overlay: [String: PropertyListValue?] = [:]
        if knownIdentity != appender.marker {
            let contents = log.read(using: operations)
            let start =
                contents.batches.lastIndex { $0.marker != nil && $0.marker == knownIdentity }.map { $0 + 1 } ?? 0
            for batch in contents.batches[start...] {
                for change in batch.changes { overlay[change.key] = .some(change.newValue) }
            }
        }
        func base(_ key: String) -> PropertyListValue? {
            if let laid = overlay[key] { return laid }
            return known[key]
        }
        var changes: [HistoryChange] = []
        var keys = Set(overlay.keys)
        known.forEachDifference(to: found, value: { $0 }) { key, _, _ in keys.insert(key) }
        for key in keys.sorted() {
            let old = base(key)
            let new = found[key]
            if old != new { changes.append(HistoryChange(key: key, oldValue: old, newValue: new, origin: .outside)) }
        }
        guard !changes.isEmpty else { return }
        let time = foundIdentity?.modifiedNanoseconds ?? HistoryBatch.now()
        batches.append(HistoryBatch(time: time, writer: nil, marker: foundIdentity, changes: changes))
    }

    /// Records a dead process's replayed journal: each key's change, net, in the order of its last record.
    mutating func noteReplayed(
        _ journal: DeadJournal, changed: [(key: String, value: PropertyListValue?)],
        after values: [String: PropertyListValue]
    ) {
        var before: [String: PropertyListValue?] = [:]
        var order: [String] = []
        for (key, old) in changed {
            if before[key] == nil { before[key] = .some(old) }
            order.removeAll { $0 == key }
            order.append(key)
        }
        let writer = journal.writer
        let fallback: DefaultsHistoryEntry.Origin = (writer?.command.isEmpty ?? true) ? .program : .command
        // A dead process that renamed its file but died before appending to the log left a file
        // that looks changed from outside: the changes to values its journal set are its own.
        var claimed: [HistoryChange] = []
        if let last = batches.indices.last, batches[last].writer == nil,
            batches[last].changes.allSatisfy({ $0.origin == .outside })
        {
            var kept: [HistoryChange] = []
            for change in batches[last].changes {
                let wrote = journal.contents.records.contains { record in
                    record.key == change.key
                        && ((record.kind == .set || record.kind == .setObject) && record.value == change.newValue
                            || record.kind == .remove && change.newValue == nil)
                }
                if wrote {
                    var own = change
                    own.origin = fallback
                    claimed.append(own)
                } else {
                    kept.append(change)
                }
            }
            if kept.isEmpty { batches.removeLast() } else { batches[last].changes = kept }
        }
        var origins: [String: DefaultsHistoryEntry.Origin] = [:]
        var pendingOrigin: [String: DefaultsHistoryEntry.Origin] = [:]
        for record in journal.contents.records {
            switch record.kind {
            case .origin: pendingOrigin[record.key] = record.originCode.map(HistoryFormat.origin)
            case .clear: break
            default: origins[record.key] = pendingOrigin.removeValue(forKey: record.key) ?? fallback
            }
        }
        var changes = claimed
        for key in order {
            let old = before[key] ?? nil
            let new = values[key]
            guard old != new else { continue }
            changes.append(HistoryChange(key: key, oldValue: old, newValue: new, origin: origins[key] ?? fallback))
        }
        batches.append(HistoryBatch(time: HistoryBatch.now(), writer: writer, marker: nil, changes: changes))
    }

    /// Records a replacement of the whole suite: every key that differs.
    mutating func noteReplacement(
        from old: [String: PropertyListValue], to new: [String: PropertyListValue], origins: OriginTable
    ) {
        var changes: [HistoryChange] = []
        old.forEachDifference(to: new, value: { $0 }) { key, before, after in
            changes.append(
                HistoryChange(key: key, oldValue: before, newValue: after, origin: origins.origin(of: key, nil)))
        }
        changes.sort { $0.key < $1.key }
        batches.append(
            HistoryBatch(time: HistoryBatch.now(), writer: HistoryIdentity.current, marker: nil, changes: changes))
    }

    /// Records this process's own changes, gathered in ``own``, in the order they were made.
    mutating func noteOwn(origins: OriginTable) {
        // The pending changes come in a dictionary's order; mostly there is one.
        if own.count > 1, !zip(own, own.dropFirst()).allSatisfy({ $0.generation < $1.generation }) {
            own.sort { $0.generation < $1.generation }
        }
        var changes: [HistoryChange] = []
        changes.reserveCapacity(own.count)
        for change in own where change.old != change.new {
            changes.append(
                HistoryChange(
                    key: change.key, oldValue: change.old, newValue: change.new,
                    origin: origins.origin(of: change.key, change.generation)))
        }
        own = []
        batches.append(
            HistoryBatch(time: HistoryBatch.now(), writer: HistoryIdentity.current, marker: nil, changes: changes))
    }

    /// Appends what was gathered, through `operations`; the file the write left is `identity`
    /// (nil: removed).
    mutating func finish(leaving identity: FileIdentity?, using operations: some FileOperations) {
        // Each record of this write names the file as the write left it; an outside change's, the
        // file as it was found.
        for index in batches.indices where !batches[index].changes.allSatisfy({ $0.origin == .outside }) {
            batches[index].marker = identity
        }
        if let last = batches.indices.last { batches[last].marker = identity }
        appender.append(
            batches, retention: appender.retention, using: operations)
    }

    /// The origins of the changes a write took (``JournalSlot/markedOrigins``).
    struct OriginTable {
        var marked: [String: (origin: DefaultsHistoryEntry.Origin, generation: UInt64)]
        let fallback = HistoryIdentity.defaultOrigin

        func origin(of key: String, _ generation: UInt64?) -> DefaultsHistoryEntry.Origin {
            guard let entry = marked[key] else { return fallback }
            if let generation, generation != entry.generation { return fallback }
            return entry.origin
        }
    }
}

extension FileBackend {
    /// Opens the history for a write under the suite lock; nil when it cannot be kept.
    func startRecording() -> HistoryRecording? {
        historyLog.openForAppending(using: operations).map { HistoryRecording(appender: $0) }
    }

    /// The origins of the changes the write now under way took.
    func takenOrigins() -> HistoryRecording.OriginTable {
        HistoryRecording.OriginTable(marked: journaling.withLock { $0.markedOrigins })
    }

    package func recordOutsideChange(from old: [String: PropertyListValue], to new: [String: PropertyListValue]) {
        guard let (previous, current) = reloadedIdentities(), previous != current else { return }
        let log = historyLog
        // A write LiveDefaults recorded (the common case: another process's flush): nothing to do,
        // and no lock taken. Only a process that had read the file the last record names knows the
        // values before the outside change exactly; the others leave it to that one (or to the next flush).
        guard let marker = HistoryLog.peekMarker(log.path, using: operations), marker != current, marker == previous
        else { return }
        try? file.withLock(using: operations) { (target) throws(DefaultsError) in
            guard let recording = startRecording(), recording.appender.marker == previous else { return }
            // A dead writer's journal: the change may be its flush, cut short before the log; the
            // next flush or open replays it and names it (``HistoryRecording/noteReplayed``).
            let dead = takeDeadJournals()
            defer { for journal in dead { journal.abandon() } }
            guard dead.allSatisfy({ $0.contents.records.isEmpty }) else { return }
            var info = stat()
            guard operations.stat(target, &info) == 0 ? FileIdentity(info) == current : current == nil else { return }
            var recorder = recording
            recorder.noteOutsideChange(
                known: old, knownIdentity: previous, found: new, foundIdentity: current, log: log, using: operations)
            guard !recorder.batches.isEmpty else { return }
            recorder.appender.append(
                recorder.batches, retention: recorder.appender.retention, using: operations)
        }
    }
}

extension HistoryLog {
    /// The suite file as the log's header names it, read without the lock (a hint: see
    /// ``HistoryFormat``); nil when there is no log or it names none. Read through `operations`.
    static func peekMarker(_ path: String, using operations: some FileOperations) -> FileIdentity?? {
        let descriptor = operations.open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else { return nil }
        defer { operations.close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: HistoryFormat.headerSize)
        let read = bytes.withUnsafeMutableBytes { operations.pread(descriptor, $0.baseAddress, $0.count, 0) }
        guard read == bytes.count, let header = bytes.withUnsafeBytes({ HistoryFormat.decodeHeader($0) }) else {
            return nil
        }
        return .some(header.marker)
    }
}
