// LiveDefaults against Foundation's UserDefaults, dconf (when installed) and the raw limit, in one run.
//
//   swift run -c release livedefaults-bench            the full run (about two minutes, the etcd rows included)
//   swift run -c release livedefaults-bench --quick    small sizes and counts (CI's smoke test)
//   … --json                                          one JSON document instead of the table
//   … --only etcd                                     the etcd rows alone (a member of its own on loopback)
//   … --only command [--command PATH]                 the `defaults` command against `dconf read`/`write`
//
// The same executable plays the other processes of some measurements (`--child …`).
import Foundation
import LiveDefaults

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "--child" {
    ChildProcess.run(Array(arguments.dropFirst()))
}

let options = BenchmarkOptions(arguments)
// Foundation's UserDefaults takes XDG_CONFIG_HOME from the environment the process started with,
// so the run starts itself again with it pointing at a scratch directory (never ~/.config).
guard let scratch = ProcessInfo.processInfo.environment["LIVEDEFAULTS_BENCH_DIRECTORY"] else {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("livedefaults-bench-\(getpid())")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let run = Process()
    run.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
    run.arguments = arguments
    run.environment = ProcessInfo.processInfo.environment.merging(
        [
            "XDG_CONFIG_HOME": directory.path, "XDG_CACHE_HOME": directory.path + "/cache",
            "LIVEDEFAULTS_BENCH_DIRECTORY": directory.path,
        ]) { _, new in new }
    try run.run()
    run.waitUntilExit()
    try? FileManager.default.removeItem(at: directory)
    exit(run.terminationStatus)
}
let workspace = Workspace(directory: URL(fileURLWithPath: scratch))

var report = Report(options: options)
// dconf takes part in reads, writes, flushes and external changes when it is installed.
var dconf: DconfPeer? = nil
if options.noDconf {
    report.notes.append("dconf: columns skipped (--no-dconf).")
} else if ["read", "write", "flush", "external", "command"].contains(where: options.runs) {
    switch DconfPeer.start(in: workspace.directory) {
    case .success(let peer): dconf = peer
    case .failure(let unavailable): report.notes.append("dconf: columns skipped: \(unavailable.reason).")
    }
}
let runner = BenchmarkRunner(options: options, workspace: workspace, dconf: dconf)
let groups: [(String, (inout Report) -> Void)] = [
    ("read", runner.measureReads), ("write", runner.measureWrites), ("flush", runner.measureFlushes),
    ("cold", runner.measureColdLoads), ("codec", runner.measureCodec), ("external", runner.measureExternalChanges),
    ("fanout", runner.measureFanOut), ("memory", runner.measureMemory),
    // The `defaults` command against dconf's command line, whole processes (CommandBenchmark.swift).
    ("command", runner.measureCommand),
    // The settings console in headless Chromium (ConsoleBenchmark.swift; not in --quick).
    ("console", runner.measureConsole),
    // `defaults history` of a 10,000-entry log, whole processes (HistoryBenchmark.swift).
    ("history", runner.measureHistory),
]
for (name, measure) in groups where options.runs(name) {
    measure(&report)
}
dconf?.stop()

// etcd: a member of the benchmark's own on loopback, stopped by its PID at the end.
let etcdGroups: [(String, (EtcdBenchmark) -> (inout Report) -> Void)] = [
    ("etcd-latency", EtcdBenchmark.measureLatency), ("etcd-cold", EtcdBenchmark.measureColdStart),
    ("etcd-fanout", EtcdBenchmark.measureFanOut), ("etcd-resume", EtcdBenchmark.measureResume),
    ("etcd-stall", EtcdBenchmark.measureStall), ("etcd-scale", EtcdBenchmark.measureScale),
    ("etcd-thousand", EtcdBenchmark.measureThousandWatchers),
    // A watch line's parser against JSONSerialization and json-c (EtcdJSON.swift).
    ("etcd-json", EtcdBenchmark.measureWatchLineParsers),
]
if etcdGroups.contains(where: { options.runs($0.0) }) {
    switch EtcdBenchmark.start(options: options, workspace: workspace) {
    case .success(let etcd):
        for (name, measure) in etcdGroups where options.runs(name) {
            measure(etcd)(&report)
        }
        etcd.stop()
    case .failure(let unavailable):
        report.notes.append("etcd: rows skipped: \(unavailable.description).")
    }
}
report.print()
