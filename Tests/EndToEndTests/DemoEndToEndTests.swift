import Foundation
import LiveDefaults
import TestSupport
import Testing

/// The built `onboarding-demo` run as a user runs it: piped answers, later launches, `--live` with
/// another process changing the suite, signals.
@Suite struct DemoEndToEndTests {
    static let suite = "com.example.onboarding"

    /// Runs the demo once in `directory` (as `XDG_CONFIG_HOME`) with `input` piped in.
    private func runDemo(
        _ arguments: [String] = [], input: String, in directory: borrowing TemporaryDirectory
    ) throws -> CommandResult {
        try ProductRunner.run(
            "onboarding-demo", arguments, environment: ["XDG_CONFIG_HOME": directory.path], input: Data(input.utf8))
    }

    /// The suite file as Foundation reads it, straight from the disk.
    private func suiteFile(in directory: borrowing TemporaryDirectory) throws -> [String: Any] {
        let data = try Data(contentsOf: directory.file("\(Self.suite).plist"))
        return try #require(try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any])
    }

    /// Sets or removes a key from another process (TestHelper), as `defaults write` would.
    private func helper(_ arguments: [String], in directory: borrowing TemporaryDirectory) throws {
        let command = arguments[0]
        let result = try ProductRunner.run(
            "TestHelper", [command, directory.path, Self.suite] + arguments.dropFirst())
        #expect(result.status == 0, "TestHelper \(arguments): \(result.standardError)")
    }

    /// The plain frames in `output`, each starting with its `==== title ====` line.
    private func frames(_ output: String) -> [String] {
        output.components(separatedBy: "==== ").dropFirst().map { "==== " + $0 }
    }

    private func titles(_ output: String) -> [String] {
        frames(output).map { String($0.prefix { $0 != "\n" }) }
    }

    @Test func firstLaunchCompletesOnboardingFromPipedAnswersAndWritesTheFlags() throws {
        let directory = try TemporaryDirectory()
        let result = try runDemo(input: "Anna\ndark\nyes\n", in: directory)

        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardError.isEmpty)
        #expect(!result.standardOutput.contains("\u{1B}"), "no escape codes when input is piped")
        #expect(
            titles(result.standardOutput) == [
                "==== Welcome (1/4) ====", "==== Your name (2/4) ====", "==== Theme (3/4) ====",
                "==== Notifications (4/4) ====", "==== Main screen ====",
            ])
        let main = try #require(frames(result.standardOutput).last)
        #expect(main.contains("Welcome, Anna!"))
        #expect(main.contains("Theme          dark"))
        #expect(main.contains("Notifications  on"))
        #expect(main.contains("Launches       1"))

        let file = try suiteFile(in: directory)
        #expect(file["has_seen_onboarding"] as? Bool == true)
        #expect(file["username"] as? String == "Anna")
        #expect(file["theme"] as? String == "dark")
        #expect(file["notifications_enabled"] as? Bool == true)
        #expect(file["launch_count"] as? Int == 1)
        #expect(file["last_version"] as? String == "1.0.0")
        let date = try #require(file["first_launch_date"] as? Date)
        #expect(abs(date.timeIntervalSinceNow) < 120)
    }

    @Test func secondLaunchSkipsOnboardingWithLaunchCountTwo() throws {
        let directory = try TemporaryDirectory()
        let first = try runDemo(input: "Anna\nlight\nno\n", in: directory)
        #expect(first.status == 0, "\(first.standardError)")
        let firstDate = try suiteFile(in: directory)["first_launch_date"] as? Date

        let second = try runDemo(input: "", in: directory)
        #expect(second.status == 0, "\(second.standardError)")
        #expect(titles(second.standardOutput) == ["==== Main screen ===="])
        #expect(second.standardOutput.contains("Welcome back, Anna!"))
        #expect(second.standardOutput.contains("Launches       2"))
        #expect(second.standardOutput.contains("Theme          light"))
        #expect(second.standardOutput.contains("Notifications  off"))

        let file = try suiteFile(in: directory)
        #expect(file["launch_count"] as? Int == 2)
        #expect(file["first_launch_date"] as? Date == firstDate)
    }

    @Test func anUnknownThemeIsAskedAgainWithTheChoices() throws {
        let directory = try TemporaryDirectory()
        let result = try runDemo(input: "Anna\npurple\nLight\ny\n", in: directory)

        #expect(result.status == 0, "\(result.standardError)")
        #expect(titles(result.standardOutput).filter { $0 == "==== Theme (3/4) ====" }.count == 2)
        #expect(result.standardOutput.contains("! Unknown theme \"purple\". Choose one of: system, light, dark."))
        #expect(try suiteFile(in: directory)["theme"] as? String == "light")
    }

    @Test func inputEndingDuringOnboardingFailsAndWritesNoChoice() throws {
        let directory = try TemporaryDirectory()
        let result = try runDemo(input: "Anna\ndark\n", in: directory)

        #expect(result.status == 1)
        #expect(result.standardError.contains("standard input ended before onboarding was finished"))
        #expect(result.standardError.contains("Saved: this launch (launch_count 1, last_version 1.0.0)"))
        let file = try suiteFile(in: directory)
        #expect(file["has_seen_onboarding"] == nil)
        #expect(file["username"] == nil)
        #expect(file["theme"] == nil)
        #expect(file["launch_count"] as? Int == 1, "the launch itself is counted")
    }

    @Test func resetRunsOnboardingAgainAndKeepsTheLaunchCount() throws {
        let directory = try TemporaryDirectory()
        #expect(try runDemo(input: "Anna\ndark\nyes\n", in: directory).status == 0)
        let result = try runDemo(["--reset"], input: "Bob\n\n\n", in: directory)

        #expect(result.status == 0, "\(result.standardError)")
        #expect(titles(result.standardOutput).first == "==== Welcome (1/4) ====")
        #expect(result.standardOutput.contains("What should we call you? [Anna]"))
        let file = try suiteFile(in: directory)
        #expect(file["username"] as? String == "Bob")
        #expect(file["theme"] as? String == "dark", "an empty answer keeps the current choice")
        #expect(file["notifications_enabled"] as? Bool == true)
        #expect(file["launch_count"] as? Int == 2)
        #expect(file["has_seen_onboarding"] as? Bool == true)
    }

    @Test func anArgumentOverridesASettingForOneRunOnly() throws {
        let directory = try TemporaryDirectory()
        #expect(try runDemo(input: "Anna\ndark\nyes\n", in: directory).status == 0)
        let overridden = try runDemo(["-theme", "light"], input: "", in: directory)
        #expect(overridden.status == 0, "\(overridden.standardError)")
        #expect(overridden.standardOutput.contains("Theme          light"))
        #expect(try suiteFile(in: directory)["theme"] as? String == "dark")
    }

    @Test func aBadOptionPrintsOneLineAndTheUsage() throws {
        let directory = try TemporaryDirectory()
        let result = try runDemo(["--bogus"], input: "", in: directory)
        #expect(result.status == 2)
        #expect(result.standardOutput.isEmpty)
        let lines = result.standardError.split(separator: "\n")
        #expect(lines.first == "onboarding-demo: unknown argument '--bogus'")
        #expect(lines.dropFirst().first?.hasPrefix("usage: onboarding-demo") == true)
        #expect(!FileManager.default.fileExists(atPath: directory.file("\(Self.suite).plist").path))

        let help = try runDemo(["--help"], input: "", in: directory)
        #expect(help.status == 0)
        #expect(help.standardOutput.hasPrefix("usage: onboarding-demo"))
    }

    @Test func ctrlCOnTheLiveMainScreenExitsCleanlyAndLosesNothing() async throws {
        let directory = try TemporaryDirectory()
        let demo = try ProductRunner.start(
            "onboarding-demo", ["--live"], environment: ["XDG_CONFIG_HOME": directory.path], keepingInputOpen: true)
        demo.write("Anna\ndark\nyes\n")
        #expect(await demo.waitForOutput { $0.contains("==== Main screen ====") }, "\(demo.standardOutput)")
        // At once, before the background flush is due: the exit must write it.
        demo.send(SIGINT)

        #expect(await demo.waitForExit(within: 10) == 0, "\(demo.standardError)")
        let file = try suiteFile(in: directory)
        #expect(file["has_seen_onboarding"] as? Bool == true)
        #expect(file["username"] as? String == "Anna")
        #expect(file["theme"] as? String == "dark")
    }

    // Relies on the file watcher: another process's writes reach the demo only through it.
    @Test func liveModeFollowsChangesMadeByAnotherProcess() async throws {
        let directory = try TemporaryDirectory()
        let demo = try ProductRunner.start(
            "onboarding-demo", ["--live"], environment: ["XDG_CONFIG_HOME": directory.path], keepingInputOpen: true)
        demo.write("Anna\ndark\nyes\n")
        try #require(await demo.waitForOutput { $0.contains("==== Main screen ====") }, "\(demo.standardOutput)")
        #expect(demo.process.isRunning, "--live stays on the main screen")
        #expect(try suiteFile(in: directory)["username"] as? String == "Anna")

        // Another process changes the theme: a new frame shows it.
        try helper(["set", "theme", "light"], in: directory)
        try #require(
            await demo.waitForOutput { frames($0).last?.contains("Theme          light") == true },
            "no redraw after another process set the theme: \(demo.standardOutput)")

        // Another process clears the flag: the running app goes back to onboarding.
        try helper(["set", "has_seen_onboarding", "false"], in: directory)
        try #require(
            await demo.waitForOutput { frames($0).last?.hasPrefix("==== Your name (2/4) ====") == true },
            "no onboarding after another process cleared the flag: \(demo.standardOutput)")

        // Answered again from standard input, then deleting the key does the same.
        demo.write("Bob\n\nno\n")
        try #require(await demo.waitForOutput { frames($0).last?.contains("Welcome, Bob!") == true })
        // The choices are on disk before the main screen shows, so the next outside write lands on
        // top of them (were they still pending, the demo's flush would put the flag back).
        #expect(try suiteFile(in: directory)["has_seen_onboarding"] as? Bool == true)
        try helper(["remove", "has_seen_onboarding"], in: directory)
        try #require(await demo.waitForOutput { frames($0).last?.hasPrefix("==== Your name (2/4) ====") == true })

        demo.send(SIGTERM)
        #expect(await demo.waitForExit(within: 10) == 0, "\(demo.standardError)")
        let file = try suiteFile(in: directory)
        #expect(file["username"] as? String == "Bob")
        #expect(file["theme"] as? String == "light")
        #expect(file["has_seen_onboarding"] == nil)
    }

    /// A `set` that returned survives the death of its process (docs/design.md, "The journal"):
    /// the demo finishes onboarding and is killed with SIGKILL within a millisecond of setting the
    /// flag, and the next launch shows the main screen. Another process holds the suite's lock
    /// meanwhile (as a writer of the suite at that moment would), so that no flush of the demo's
    /// can put the flag in the file first: only the journal carries it.
    @Test func killedJustAfterFinishingOnboardingTheNextLaunchShowsTheMainScreen() async throws {
        let directory = try TemporaryDirectory()
        let demo = try ProductRunner.start(
            "onboarding-demo", [], environment: ["XDG_CONFIG_HOME": directory.path], keepingInputOpen: true)
        demo.write("Anna\ndark\n")
        try #require(
            await demo.waitForOutput { $0.contains("==== Notifications (4/4) ====") }, "\(demo.standardOutput)")
        let lock = open(directory.path + "/\(Self.suite).plist.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        try #require(lock >= 0 && flock(lock, LOCK_EX) == 0, "the suite's lock is taken")
        demo.write("yes\n")
        // The event: the flag's record in the demo's journal (the set has returned); then the kill.
        let journals = directory.path + "/.\(Self.suite).plist.journals"
        let deadline = ContinuousClock.now + .seconds(10)
        var flagged = Self.journal(in: journals, holds: "has_seen_onboarding", .bool(true))
        while !flagged, ContinuousClock.now < deadline {
            usleep(100)
            flagged = Self.journal(in: journals, holds: "has_seen_onboarding", .bool(true))
        }
        demo.send(SIGKILL)
        #expect(flagged, "the flag's record reached the journal: \(demo.standardOutput)")
        #expect(await demo.waitForExit(within: 10) != 0)
        close(lock)
        let before = try? suiteFile(in: directory)
        #expect(before?["has_seen_onboarding"] == nil, "the flag was not in the suite file when the demo died")

        let next = try runDemo(input: "", in: directory)
        #expect(next.status == 0, "\(next.standardError)")
        #expect(titles(next.standardOutput) == ["==== Main screen ===="], "\(next.standardOutput)")
        #expect(next.standardOutput.contains("Welcome back, Anna!"))
        #expect(next.standardOutput.contains("Theme          dark"))
        #expect(next.standardOutput.contains("Notifications  on"))
        let file = try suiteFile(in: directory)
        #expect(file["has_seen_onboarding"] as? Bool == true)
        #expect(file["launch_count"] as? Int == 2)
    }

    /// Whether a journal in `directory` holds, unreleased, a record setting `key` to `value`.
    private static func journal(in directory: String, holds key: String, _ value: PropertyListValue) -> Bool {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return false }
        return names.contains { name in
            guard let data = FileManager.default.contents(atPath: directory + "/" + name) else { return false }
            let records = data.withUnsafeBytes { JournalFormat.read($0) }.records
            return records.contains { $0.kind == .set && $0.key == key && $0.value == value }
        }
    }
}
