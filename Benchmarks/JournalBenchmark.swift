import Foundation
import LiveDefaults
import LiveDefaultsPropertyList
import Synchronization

/// The journal (docs/design.md, "The journal"): what it adds to a `set`, and what a dead process's
/// journal costs the next process that opens the suite.
extension BenchmarkRunner {
    func measureJournal(calls: Int, into report: inout Report) {
        let suitePath = directory.appendingPathComponent("bench.journal.plist").path
        let journal = must("making a journal beside \(suitePath)") { try SuiteJournal(suitePath: suitePath) }
        var counter: Int64 = 0
        let append = nanosecondsPerCall(calls) {
            counter += 1
            _ = journal.append(.set, key: "counter", value: .integer(counter))
            // A flush releases the records every 20 ms; here, every 4,096 appends.
            if counter & 4095 == 0 { journal.release(upTo: journal.mark()) }
        }
        report.add("write", "journal append alone (part of every set)", append)

        // A dead process's journal of 1,000 changes, replayed into the suite file at open.
        let rounds = options.quick ? 3 : 15
        var times: [Double] = []
        for round in 0..<rounds {
            let name = "bench.replay.\(round)"
            let location = must("a location for \(name)") {
                try SuiteLocation(suiteName: name, directory: directory.path)
            }
            do {
                let dead = must("a journal for \(name)") { try SuiteJournal(suitePath: location.path) }
                for index in 0..<1_000 {
                    _ = dead.append(.set, key: "key.\(index % 250)", value: .integer(Int64(index)))
                }
            }  // closed with its records: as a process that died
            let start = monotonicNanoseconds()
            let load = FileBackend(location: location, operations: SystemFileOperations()).load()
            times.append(Double(monotonicNanoseconds() - start))
            precondition(load.snapshot.values.count == 250, "the replay applied the journal")
        }
        times.sort()
        report.add(
            "cold load", "open after a dead process's 1,000-change journal (replay + write)", times[times.count / 2])
    }
}

/// The floor of a durable `set` (issue 40): what any store that keeps a `set` through the death of
/// its process must do, and nothing else. The value goes into a dictionary under a `Mutex` (the
/// library's lock), and the same journal record the library appends (``SuiteJournal``) is appended
/// under that lock, so that the records are in the order of the writes.
///
/// No observers, no search list, no flush scheduling: the `set` row is measured against it.
final class SetFloor: Sendable {
    private let values: Mutex<[String: PropertyListValue]>
    private let journal: SuiteJournal
    /// Appends since the records were last released (as a flush releases them every 20 ms).
    private let appended = Atomic<Int>(0)

    /// - Parameters:
    ///   - suitePath: The suite file the journal is beside.
    ///   - values: What the dictionary holds at first: the keys of the suite the `set` is measured
    ///     on, so that both look a key up in a table of the same size (with as many collisions).
    init(suitePath: String, values: [String: PropertyListValue] = [:]) {
        self.values = Mutex(values)
        journal = must("making the set floor's journal beside \(suitePath)") { try SuiteJournal(suitePath: suitePath) }
    }

    func set(_ value: PropertyListValue, forKey key: String) {
        values.withLock { values in
            values[key] = value
            _ = journal.append(.set, key: key, value: value)
        }
        // A flush releases the records every 20 ms; here, every 4,096 appends.
        if appended.add(1, ordering: .relaxed).newValue & 4095 == 0 { journal.release(upTo: journal.mark()) }
    }
}
