import Foundation
import LiveDefaults
import LiveDefaultsPropertyList

/// This process's journal of a fleet suite's pending writes (docs/design.md, "The journal: no `set`
/// lost when the process dies", its fleet paragraph): the local suites' journal (``SuiteJournal``),
/// beside the suite's offline cache file, so that a write made while etcd is away outlives the
/// process.
///
/// - Every `set`, removal and replacement is appended before `set` returns (a memory copy).
/// - The records a flush took are released once etcd has taken them, or refused them for good
///   (they are dropped then); a flush etcd does not answer keeps them.
/// - At open, before the suite is followed, and when etcd answers again after an outage, the
///   process adopts the journals of dead processes (their lock could be taken, whatever process now
///   has their PID): their records become this process's pending writes, in the order written,
///   appended to its own journal first, and then the dead journals go. So they are sent as this process's own queued writes: each key keeps the last
///   write, and a write whose answer was lost is sent again (README, "Fleet settings").
///
/// When the journal cannot be made or grown, one report names its path and the pending writes are
/// held in memory only, as before journals.
final class FleetJournal: Sendable {
    /// The offline cache file: the journals are in `.<file>.journals/` beside it.
    let cacheFile: SuiteFile
    private let suite: String
    private let slot: Locked<JournalSlot>

    init(cacheFile: SuiteFile, suite: String) {
        self.cacheFile = cacheFile
        self.suite = suite
        slot = Locked(JournalSlot(suitePath: cacheFile.location.path, suite: suite, makesDirectory: true))
    }

    /// The path of this process's journal, once it has one.
    var path: String? { slot.withLock { $0.path } }

    /// Appends a change (nil: a removal). Called under the store's state lock, in the changes' order.
    func append(_ value: PropertyListValue?, forKey key: String) {
        slot.withLock { $0.append(value, forKey: key) }
    }

    /// Appends a replacement of every value.
    func appendReplacement(_ values: [String: PropertyListValue]) {
        slot.withLock { $0.appendReplacement(values) }
    }

    /// Notes where the journal stands as the store takes its pending changes for a write.
    func mark() {
        slot.withLock { $0.takeMark() }
    }

    /// The write of the changes taken at the last mark is over for good (etcd took them, or
    /// refused them): their records go.
    func release() {
        slot.withLock { $0.release() }
    }

    /// Makes the dead processes' pending writes this process's own (see the type's comment), under
    /// the cache file's lock, so that two processes opening the suite together do not both take them.
    ///
    /// - Returns: A problem to report when the lock could not be taken (the journals stay for the
    ///   next process).
    func adoptDeadJournals(into store: SuiteStore) -> DefaultsError? {
        let suitePath = cacheFile.location.path
        guard access(SuiteJournal.directory(forSuiteFile: suitePath), F_OK) == 0 else { return nil }
        let ownPath = path
        do throws(DefaultsError) {
            try cacheFile.withLock(using: SystemFileOperations()) { _ in
                let dead = DeadJournal.take(suitePath: suitePath, excluding: ownPath)
                for journal in dead { Self.replay(journal.contents.records, into: store) }
                // Now in this process's journal (or, when it has none, in its memory): they go.
                for journal in dead {
                    journal.finish(
                        suitePath: suitePath, suite: suite,
                        applied: "were made pending writes of process \(getpid()), which sends them to etcd")
                }
            }
        } catch {
            return error
        }
        return nil
    }

    /// Sets the records' changes in `store`, in the order written: a replacement (a clear and the
    /// sets after it) as one replacement, the changes before it being replaced.
    static func replay(_ records: [JournalRecord], into store: SuiteStore) {
        var replacement: [String: PropertyListValue]?
        let start: Int
        if let clear = records.lastIndex(where: { $0.kind == .clear }) {
            replacement = [:]
            start = clear + 1
        } else {
            start = 0
        }
        for record in records[start...] {
            let value = record.kind == .remove ? nil : record.value
            if replacement != nil {
                replacement?[record.key] = value
            } else {
                store.set(value, forKey: record.key)
            }
        }
        if let replacement { store.replaceAll(with: replacement) }
    }
}
