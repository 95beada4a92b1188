// LiveDefaults against Foundation's UserDefaults and against the raw limit, in one run.
//
//   swift run -c release livedefaults-bench            the full run (about a minute)
//   swift run -c release livedefaults-bench --quick    small sizes and counts (CI's smoke test)
//   … --json                                          one JSON document instead of the table
//
// The same executable plays the other process for two measurements (`--child …`).
import Foundation
import LiveDefaults

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "--child" {
    ChildProcess.run(Array(arguments.dropFirst()))
}

let options = BenchmarkOptions(arguments)
let workspace = try Workspace()
// Foundation reads XDG_CONFIG_HOME once, on first use: point it at the scratch directory now.
setenv("XDG_CONFIG_HOME", workspace.directory.path, 1)

var report = Report(options: options)
let runner = BenchmarkRunner(options: options, workspace: workspace)
let groups: [(String, (inout Report) -> Void)] = [
    ("read", runner.measureReads), ("write", runner.measureWrites), ("flush", runner.measureFlushes),
    ("cold", runner.measureColdLoads), ("codec", runner.measureCodec), ("external", runner.measureExternalChanges),
    ("fanout", runner.measureFanOut), ("memory", runner.measureMemory),
]
for (name, measure) in groups where options.only.isEmpty || options.only.contains(name) {
    measure(&report)
}
report.print()
