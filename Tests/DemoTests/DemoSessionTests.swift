import Dispatch
import Foundation
import LiveDefaults
import OnboardingKit
import TestSupport
import Testing

@Suite struct DemoSessionTests {
    private let queue = DispatchQueue(label: "session-test")

    private func session(
        _ defaults: Defaults, _ recorder: SessionRecorder, options: DemoOptions = DemoOptions()
    ) -> DemoSession {
        DemoSession(
            defaults: defaults, options: options, interactive: false,
            renderer: ScreenRenderer(style: .plain, interactive: false, live: options.live), queue: queue,
            output: recorder.output)
    }

    private func feed(_ session: DemoSession, _ lines: [String], thenEnd: Bool) {
        for line in lines { queue.async { session.receive(line: line) } }
        if thenEnd { queue.async { session.inputEnded() } }
    }

    @Test func pipedAnswersCompleteOnboardingAndTheSessionEndsOnTheMainScreen() async throws {
        let directory = try TemporaryDirectory()
        let defaults = try openSuite(in: directory)
        defer { try? defaults.synchronize() }
        let recorder = SessionRecorder()
        let session = session(defaults, recorder)
        queue.sync { session.start() }
        // The end of input arrives right behind the last answer, before the flag comes back.
        feed(session, ["Anna", "dark", "yes"], thenEnd: true)

        #expect(await eventually { recorder.exitStatus != nil })
        #expect(recorder.exitStatus == 0)
        #expect(recorder.errors.isEmpty)
        let titles = recorder.frames.map { $0.prefix { $0 != "\n" } }
        #expect(
            titles == [
                "==== Welcome (1/4) ====", "==== Your name (2/4) ====", "==== Theme (3/4) ====",
                "==== Notifications (4/4) ====", "==== Main screen ====",
            ])
        #expect(recorder.text.contains("> Anna\n"))
        #expect(recorder.frames.last?.contains("Welcome, Anna!") == true)
        #expect(defaults[.hasSeenOnboarding])
        #expect(defaults[.launchCount] == 1)
    }

    @Test func finishedOnboardingIsOnDiskBeforeTheMainScreenShows() async throws {
        let directory = try TemporaryDirectory()
        let defaults = try openSuite(in: directory)
        defer { try? defaults.synchronize() }
        let recorder = SessionRecorder()
        let session = session(defaults, recorder, options: DemoOptions(live: true))
        queue.sync { session.start() }
        feed(session, ["Anna", "light", "no"], thenEnd: false)

        #expect(await eventually { recorder.frames.last?.hasPrefix("==== Main screen ====") == true })
        let data = try Data(contentsOf: directory.file("\(OnboardingSuite.name).plist"))
        let file = try #require(try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any])
        #expect(file["has_seen_onboarding"] as? Bool == true)
        #expect(file["username"] as? String == "Anna")
        #expect(file["theme"] as? String == "light")
        #expect(recorder.exitStatus == nil, "--live stays on the main screen")
    }

    /// The decision (docs/demo.md, "Without a terminal"): a launch that ends before onboarding is
    /// finished still counts, as every launch of an app does; the message says what was saved and what not.
    @Test func theEndOfInputDuringOnboardingCountsTheLaunchSavesNoAnswerAndSaysSo() async throws {
        let directory = try TemporaryDirectory()
        let defaults = try openSuite(in: directory)
        defer { try? defaults.synchronize() }
        let recorder = SessionRecorder()
        let session = session(defaults, recorder)
        queue.sync { session.start() }
        feed(session, ["Anna", "dark"], thenEnd: true)

        #expect(await eventually { recorder.exitStatus != nil })
        #expect(recorder.exitStatus == 1)
        #expect(recorder.errors.count == 1)
        let message = try #require(recorder.errors.first)
        #expect(message.contains("ended before onboarding was finished"), "\(message)")
        #expect(message.contains("Saved: this launch (launch_count 1, last_version 1.0.0)"), "\(message)")
        #expect(message.contains("Not saved: your answers"), "\(message)")
        #expect(defaults.propertyList(forKey: "username") == nil)
        #expect(defaults.propertyList(forKey: "theme") == nil)
        #expect(defaults.propertyList(forKey: "has_seen_onboarding") == nil)
        #expect(defaults[.launchCount] == 1)
        #expect(defaults[.lastVersion] == "1.0.0")

        // The next launch counts too, and asks again from the start.
        let next = SessionRecorder()
        let again = self.session(defaults, next)
        queue.sync { again.start() }
        feed(again, ["Anna", "dark", "yes"], thenEnd: true)
        #expect(await eventually { next.exitStatus != nil })
        #expect(next.exitStatus == 0)
        #expect(next.frames.first?.hasPrefix("==== Welcome (1/4) ====") == true)
        #expect(next.frames.last?.contains("Launches       2") == true)
    }

    @Test func aLaterLaunchSkipsOnboarding() async throws {
        let directory = try TemporaryDirectory()
        let defaults = try openSuite(in: directory)
        defer { try? defaults.synchronize() }
        defaults[.hasSeenOnboarding] = true
        defaults[.username] = "Anna"
        defaults[.launchCount] = 1
        let recorder = SessionRecorder()
        let session = session(defaults, recorder)
        queue.sync { session.start() }

        #expect(recorder.exitStatus == 0)
        #expect(recorder.frames.count == 1)
        #expect(recorder.frames.first?.contains("Welcome back, Anna!") == true)
        #expect(recorder.frames.first?.contains("Launches       2") == true)
    }

    @Test func resetRunsOnboardingAgainAndSuggestsTheOldAnswers() throws {
        let directory = try TemporaryDirectory()
        let defaults = try openSuite(in: directory)
        defer { try? defaults.synchronize() }
        defaults[.hasSeenOnboarding] = true
        defaults[.username] = "Anna"
        let recorder = SessionRecorder()
        let session = session(defaults, recorder, options: DemoOptions(reset: true))
        queue.sync { session.start() }

        #expect(recorder.exitStatus == nil)
        #expect(recorder.frames.last?.contains("What should we call you? [Anna]") == true)
    }

    @Test func liveSessionRedrawsOnChangesAndGoesBackToOnboarding() async throws {
        let directory = try TemporaryDirectory()
        let writer = try openSuite(in: directory)
        defer { try? writer.synchronize() }
        writer[.hasSeenOnboarding] = true
        writer[.username] = "Anna"
        let recorder = SessionRecorder()
        let session = session(try openSuite(in: directory), recorder, options: DemoOptions(live: true))
        queue.sync { session.start() }
        feed(session, [], thenEnd: true)  // with --live the end of input does not end the main screen

        writer[.theme] = .dark
        #expect(await eventually { recorder.frames.last?.contains("Theme          dark") == true })
        writer.removeObject(forKey: "has_seen_onboarding")
        #expect(await eventually { recorder.frames.last?.hasPrefix("==== Your name (2/4) ====") == true })
        // Input has ended, so the question cannot be answered: the session says so and fails.
        #expect(await eventually { recorder.exitStatus == 1 })
    }

    @Test func qQuitsTheLiveMainScreen() async throws {
        let directory = try TemporaryDirectory()
        let defaults = try openSuite(in: directory)
        defer { try? defaults.synchronize() }
        defaults[.hasSeenOnboarding] = true
        let recorder = SessionRecorder()
        let session = session(defaults, recorder, options: DemoOptions(live: true))
        queue.sync { session.start() }
        #expect(recorder.exitStatus == nil)
        feed(session, ["x", "q"], thenEnd: false)
        #expect(await eventually { recorder.exitStatus == 0 })
    }
}
