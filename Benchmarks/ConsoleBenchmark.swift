import Foundation

/// The settings console (docs/console.md) in headless Chromium: how long a suite file renamed into place takes
/// to show on an open page (the watcher, the console's observer, the server-sent event, the page's update), and
/// how long the page takes to render a domain of 1,000 keys. Tests/ConsoleTests/console_browser.py drives the
/// browser (its `bench` mode); the times are the page's own clock against the renaming process's (one machine).
///
/// Left out of `--quick` (a browser session takes seconds to start); skipped, with a note, when Chromium, its
/// driver or Selenium is missing, or when `livedefaults-console` is not built beside the benchmark.
extension BenchmarkRunner {
    func measureConsole(into report: inout Report) {
        guard !options.quick else {
            report.notes.append("console: rows left out of --quick (a browser session takes seconds).")
            return
        }
        let tools = ["/usr/bin/chromium", "/usr/bin/chromedriver", "/usr/bin/python3"]
        guard tools.allSatisfy({ FileManager.default.isExecutableFile(atPath: $0) }),
            FileManager.default.fileExists(atPath: "/usr/lib/python3/dist-packages/selenium")
        else {
            report.notes.append(
                "console: rows skipped: chromium, chromium-driver or python3-selenium is missing (scripts/setup.sh).")
            return
        }
        let products = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        guard FileManager.default.isExecutableFile(atPath: products.appendingPathComponent("livedefaults-console").path)
        else {
            report.notes.append(
                "console: rows skipped: livedefaults-console is not built beside the benchmark "
                    + "(swift build -c release --product livedefaults-console).")
            return
        }
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Tests/ConsoleTests/console_browser.py").path
        let work = workspace.scratch()
        let samples = 100
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [
            script, "bench", "--bin", products.path, "--work", work.path, "--samples", String(samples),
        ]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch {
            report.notes.append("console: rows skipped: \(script) could not start: \(error).")
            return
        }
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        func measured(_ name: String) -> [Double] {
            let line = text.split(separator: "\n").first { $0.hasPrefix("MEASURE \(name) ") } ?? ""
            return line.split(separator: " ").dropFirst(2).compactMap { Double($0) }.sorted()
        }
        let latencies = measured("renameToPage")
        let renders = measured("thousandKeysRender")
        guard process.terminationStatus == 0, latencies.count == samples, !renders.isEmpty else {
            report.notes.append("console: rows skipped: the browser run failed (status \(process.terminationStatus)).")
            return
        }
        func percentile(_ values: [Double], _ fraction: Double) -> Double {
            values[min(values.count - 1, Int((Double(values.count - 1) * fraction).rounded()))]
        }
        let p99 = percentile(latencies, 0.99)
        report.add(
            "console", "file rename → page update p50", percentile(latencies, 0.5), unit: "ms")
        report.add(
            "console", "file rename → page update p99", p99, unit: "ms", target: "≤ 200 ms", met: p99 <= 200)
        let render = percentile(renders, 0.5)
        report.add(
            "console", "1,000 keys rendered (median of \(renders.count))", render, unit: "ms", target: "< 300 ms",
            met: render < 300)
    }
}
