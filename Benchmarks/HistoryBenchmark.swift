import Foundation
import LiveDefaults

/// `defaults history` of a suite whose log holds 10,000 entries, one whole process per run (the
/// target: under 50 ms; docs/design.md, "History: reading"; docs/performance.md, "History"). The log
/// is made as 10,000 flushes of one change each would leave it (one record per flush), written
/// straight through the log's appender. The notes give each form's range and CPU time: on a loaded
/// machine the CPU time is the figure to compare.
extension BenchmarkRunner {
    func measureHistory(into report: inout Report) {
        let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("defaults").path
        let binary = options.commandBinary ?? beside
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            report.notes.append("history: rows skipped: no defaults binary at \(binary) (or give --command PATH).")
            return
        }
        let directory = NSTemporaryDirectory() + "livedefaults-bench-history-\(getpid())"
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let suite = "com.example.history"
        let suitePath = directory + "/" + suite + ".plist"
        let entries = 10_000
        guard let appender = HistoryLog(suitePath: suitePath, suite: suite).openForAppending() else {
            report.notes.append("history: rows skipped: the log could not be made in \(directory).")
            return
        }
        let writer = DefaultsHistoryEntry.Writer.current
        let retention = DefaultsHistoryRetention(maxEntries: entries, maxBytes: 64 << 20)
        for index in 0..<entries {
            let value: PropertyListValue = index % 3 == 0 ? .string("value \(index)") : .integer(Int64(index))
            let change = HistoryChange(
                key: "key\(index % 50)", oldValue: index < 50 ? nil : .integer(Int64(index - 50)), newValue: value,
                origin: .program)
            appender.append(
                [HistoryBatch(time: Int64(index) * 1_000_000, writer: writer, marker: nil, changes: [change])],
                retention: retention)
        }
        let environment = ["XDG_CONFIG_HOME": directory, "HOME": directory, "PATH": "/usr/bin:/bin"]
        let commands = [
            ("text", [binary, "history", suite]), ("json", [binary, "history", suite, "--json"]),
            ("one key, last 10", [binary, "history", suite, "key7", "--limit", "10"]),
        ]
        let rounds = options.quick ? 5 : 30
        for (name, arguments) in commands {
            var samples: [Double] = []
            var cpu: [Double] = []
            for _ in 0..<rounds {
                let start = monotonicNanoseconds()
                let (status, cpuNanoseconds) = Self.spawnAndWait(arguments, environment)
                cpu.append(cpuNanoseconds)
                let elapsed = Double(monotonicNanoseconds() - start)
                guard status == 0 else {
                    report.notes.append(
                        "history: rows skipped: \(arguments.joined(separator: " ")) exited with \(status).")
                    return
                }
                samples.append(elapsed)
            }
            let median = percentile(samples, 0.5)
            report.add(
                "history", "defaults history of \(entries) entries (\(name)), whole process", median, unit: "ns",
                target: "< 50 ms", met: median < 50e6)
            let sorted = samples.sorted()
            // The CPU time (user and system, from wait4) hardly moves with the machine's load.
            report.notes.append(
                String(
                    format: "history: %@, %d runs: median %.2f ms (%.2f–%.2f); CPU time median %.2f ms.", name,
                    rounds, median / 1e6, (sorted.first ?? 0) / 1e6, (sorted.last ?? 0) / 1e6,
                    percentile(cpu, 0.5) / 1e6))
        }
    }
}
