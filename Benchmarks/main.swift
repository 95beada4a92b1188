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
runner.measureReads(into: &report)
runner.measureWrites(into: &report)
runner.measureFlushes(into: &report)
runner.measureColdLoads(into: &report)
runner.measureCodec(into: &report)
runner.measureExternalChanges(into: &report)
runner.measureFanOut(into: &report)
runner.measureMemory(into: &report)
report.print()
