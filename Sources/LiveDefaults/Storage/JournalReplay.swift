import Foundation

/// A dead process's journal, opened and locked by the process replaying it (docs/design.md, "The
/// journal"): its lock could be taken, so its writer is gone (whatever process now has its PID).
package struct DeadJournal {
    package let path: String
    fileprivate let descriptor: Int32
    /// Its records not yet written to the suite file, in the order written.
    package let contents: JournalFormat.Contents
    fileprivate let modified: timespec

    /// Applies the records to `values`, in the order written. Returns the keys changed.
    package func apply(
        to values: inout [String: PropertyListValue], changed: inout [(key: String, value: PropertyListValue?)]
    ) {
        for record in contents.records {
            switch record.kind {
            case .set, .setObject:
                guard let value = record.value else { continue }
                changed.append((record.key, values.updateValue(value, forKey: record.key)))
            case .remove:
                changed.append((record.key, values.removeValue(forKey: record.key)))
            case .clear:
                for (key, value) in values { changed.append((key, value)) }
                values.removeAll()
            }
        }
    }

    /// The suite file now holds the records: the journal goes (or, when it could not be read to its
    /// end, is kept aside beside the suite file and reported). Releases its lock.
    ///
    /// `applied` says where the records went, when not into the suite file (a fleet suite's
    /// journal: "were made pending writes of …").
    package func finish(suitePath: String, suite: String, applied: String? = nil) {
        defer { close(descriptor) }
        guard let problem = contents.problem else {
            unlink(path)
            return
        }
        let kept = suitePath + ".journal-corrupt-\(Int(Date().timeIntervalSince1970))-\(getpid())"
        let moved = rename(path, kept) == 0
        DefaultsErrorReporting.report(
            DefaultsError(
                .corruptFile,
                "The journal \(path) of a process that ended, for suite \"\(suite)\", \(problem). The "
                    + "\(contents.records.count) change(s) before that point \(applied ?? "were written to \(suitePath)"); "
                    + (moved
                        ? "the journal was kept as \(kept)." : "the journal could not be moved aside and was left."),
                suite: suite, path: moved ? kept : path))
    }

    /// Releases the journal's lock without removing it (the suite file was not written).
    package func abandon() { close(descriptor) }

    /// The journals of dead processes for the suite file at `suitePath`, oldest modification first,
    /// each opened and locked. `ownPath` (this process's journal) is skipped. Call under the suite lock.
    package static func take(suitePath: String, excluding ownPath: String?) -> [DeadJournal] {
        let directory = SuiteJournal.directory(forSuiteFile: suitePath)
        guard let stream = opendir(directory) else { return [] }
        defer { closedir(stream) }
        var found: [DeadJournal] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard !name.hasPrefix(".") else { continue }
            let path = directory + "/" + name
            guard path != ownPath else { continue }
            let descriptor = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
            guard descriptor >= 0 else { continue }
            // Held by a live process (its lock is held for its lifetime): not ours to replay.
            guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
                close(descriptor)
                continue
            }
            var info = stat()
            guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
                close(descriptor)
                continue
            }
            let contents: JournalFormat.Contents
            if let data = try? SystemCall.readAll(descriptor, sizeHint: Int(info.st_size)) {
                contents = data.withUnsafeBytes { JournalFormat.read($0) }
            } else {
                contents = JournalFormat.Contents(records: [], problem: "could not be read")
            }
            found.append(DeadJournal(path: path, descriptor: descriptor, contents: contents, modified: info.st_mtim))
        }
        return found.sorted { ($0.modified.tv_sec, $0.modified.tv_nsec) < ($1.modified.tv_sec, $1.modified.tv_nsec) }
    }
}
