import Foundation
import TestSupport
import Testing

/// The console in a real browser: `console_browser.py` starts the built `livedefaults-console` in a temporary
/// directory and drives headless Chromium with Selenium through every case, in one browser session (CI time);
/// each test here checks its case's line. Skipped when Chromium, its driver or Selenium is missing, unless
/// `LIVEDEFAULTS_REQUIRE_BROWSER=1` (CI), where that fails.
///
/// Screenshots go to `$LIVEDEFAULTS_CONSOLE_SCREENSHOTS` when set (docs/console.md says how the docs' are made).
@Suite(.requiresBrowser)
struct ConsoleBrowserTests {
    @Test func opensWithTokenAndListsDomains() async { await BrowserRun.expectPassed(#function) }
    @Test func refusesWithoutTokenAndCrossOrigin() async { await BrowserRun.expectPassed(#function) }
    @Test func formEditReachesFileAndAnotherProcess() async { await BrowserRun.expectPassed(#function) }
    /// Within 1 s of `defaults write`'s exit (a wait with that deadline in the script; 5 s in the thread
    /// sanitizer's run).
    @Test func shellWriteUpdatesThePage() async { await BrowserRun.expectPassed(#function) }
    @Test func invalidValueShowsErrorAndChangesNothing() async { await BrowserRun.expectPassed(#function) }
    @Test func forcedKeyIsReadOnly() async { await BrowserRun.expectPassed(#function) }
    @Test func secretHiddenUntilRevealed() async { await BrowserRun.expectPassed(#function) }
    /// Two `defaults write`s, both listed in the key's history; its rollback button restores the first.
    @Test func historyAndRollback() async { await BrowserRun.expectPassed(#function) }
    @Test func searchFindsNestedValues() async { await BrowserRun.expectPassed(#function) }
    @Test func markupShowsAsText() async { await BrowserRun.expectPassed(#function) }
    /// The time is measured and printed (the benchmark and docs/console.md keep it), never asserted.
    /// A fleet suite given as an `etcd://` URL, with a member of the script's own: where etcd is installed, or
    /// always in CI (`LIVEDEFAULTS_REQUIRE_ETCD=1`), where a missing etcd fails.
    @Test(
        .enabled(
            if: ["/usr/bin/etcd", "/usr/local/bin/etcd"].contains { FileManager.default.isExecutableFile(atPath: $0) }
                || ProcessInfo.processInfo.environment["LIVEDEFAULTS_REQUIRE_ETCD"] == "1",
            "etcd is not installed (scripts/setup.sh installs it)"))
    func fleetSuiteIsShownLive() async { await BrowserRun.expectPassed(#function) }

    @Test func thousandKeysRender() async {
        await BrowserRun.expectPassed(#function)
        // The figures, for the record (docs/console.md; the benchmark measures them in a release build).
        for line in await BrowserRun.run.value.output.split(separator: "\n") where line.hasPrefix("MEASURE ") {
            print("console: \(line.dropFirst("MEASURE ".count))")
        }
    }
    /// The console stopped: the page marks its values stale; a change meanwhile; the console again (same port and
    /// token file): the page reconnects, shows the change it missed, and is live.
    @Test func reconnectingPageCatchesUp() async { await BrowserRun.expectPassed(#function) }
}

/// The one run of the script that every test of the suite reads.
enum BrowserRun {
    struct Outcome: Sendable {
        var status: Int32
        var output: String
    }

    static let required = ProcessInfo.processInfo.environment["LIVEDEFAULTS_REQUIRE_BROWSER"] == "1"

    static var isInstalled: Bool {
        ["/usr/bin/chromium", "/usr/bin/chromedriver"].allSatisfy { FileManager.default.isExecutableFile(atPath: $0) }
            && FileManager.default.fileExists(atPath: "/usr/lib/python3/dist-packages/selenium")
    }

    /// The script beside this file.
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("console_browser.py").path

    /// The directory of the built products (the test bundle's, where `TestHelper` is).
    static let productsDirectory: String = {
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.isExecutableFile(atPath: url.appendingPathComponent("TestHelper").path) {
                return url.path
            }
        }
        return URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path
    }()

    static let run = Task.detached { () -> Outcome in
        do {
            let work = try TemporaryDirectory()
            var arguments = [script, "test", "--bin", productsDirectory, "--work", work.path]
            // CI's thread-sanitizer run (it sets TSAN_OPTIONS) runs sanitized builds of `defaults` and the console:
            // the shell-write case then waits 5 s instead of 1 s.
            if ProcessInfo.processInfo.environment["TSAN_OPTIONS"] != nil { arguments.append("--sanitized") }
            if let screenshots = ProcessInfo.processInfo.environment["LIVEDEFAULTS_CONSOLE_SCREENSHOTS"] {
                arguments += ["--screenshots", screenshots]
            }
            // Debian's python3, whose python3-selenium this is (not one earlier in PATH).
            let (status, output) = try runToEnd("/usr/bin/python3", arguments)
            return Outcome(status: status, output: output)
        } catch {
            return Outcome(status: -1, output: "could not run \(script): \(error)")
        }
    }

    /// Expects the script's line `PASS <name>` (the test's name without its parentheses).
    static func expectPassed(_ function: String) async {
        let name = String(function.prefix { $0 != "(" })
        let outcome = await run.value
        if outcome.status == 3 {
            Issue.record("the browser is missing: \(outcome.output)")
            return
        }
        let lines = outcome.output.split(separator: "\n")
        #expect(
            lines.contains { $0 == "PASS \(name)" },
            "\(name) did not pass:\n\(lines.filter { $0.contains(name) }.joined(separator: "\n"))\n--- output ---\n\(outcome.output)"
        )
    }
}

extension Trait where Self == ConditionTrait {
    /// Runs where Chromium, chromium-driver and python3-selenium are installed — or always in CI, which sets
    /// `LIVEDEFAULTS_REQUIRE_BROWSER=1`, so that a missing browser fails there instead of skipping.
    static var requiresBrowser: Self {
        .enabled(
            if: BrowserRun.isInstalled || BrowserRun.required,
            "Chromium, chromium-driver or python3-selenium is not installed (scripts/setup.sh installs them)")
    }
}
