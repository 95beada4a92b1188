import Dispatch
import Foundation
import LiveDefaults
import OnboardingKit
import TestSupport
import Testing

@Suite struct OnboardingModelTests {
    @Test func aFreshSuiteStartsAtTheWelcomeScreen() throws {
        let directory = try TemporaryDirectory()
        let model = OnboardingModel(defaults: try openSuite(in: directory)) { _ in }
        #expect(model.screen == .welcome)
        #expect(model.settings == Settings())
    }

    @Test func answersWalkThroughOnboardingAndAreWrittenTogetherAtTheEnd() throws {
        let directory = try TemporaryDirectory()
        let defaults = try openSuite(in: directory)
        defer { try? defaults.synchronize() }
        let recorder = SessionRecorder()
        let model = OnboardingModel(defaults: defaults) { recorder.record($0) }

        #expect(model.answer("") == .accepted)  // the welcome screen: Enter continues
        #expect(model.answer("Anna") == .accepted)
        #expect(model.answer("dark") == .accepted)
        #expect(model.progress == OnboardingProgress(step: .notifications, username: "Anna", theme: .dark))
        // Nothing is written before the last answer.
        #expect(defaults.persistentValues().isEmpty)

        #expect(model.answer("yes") == .accepted)
        #expect(defaults[.hasSeenOnboarding])
        #expect(defaults[.username] == "Anna")
        #expect(defaults[.theme] == .dark)
        #expect(defaults[.notificationsEnabled])
        let date = try #require(defaults[.firstLaunchDate])
        #expect(abs(date.timeIntervalSinceNow) < 60)
        // The main screen came back through observation of the written flag.
        guard case .main(let main) = model.screen else {
            Issue.record("expected the main screen, got \(model.screen)")
            return
        }
        #expect(main.username == "Anna")
        #expect(main.theme == .dark)
        #expect(recorder.screens.first == .askName(suggestion: nil, problem: nil))
        #expect(recorder.screens.last == model.screen)
        #expect(model.progress == .start)
        #expect(model.answer("more") == .notAsked)
    }

    @Test func aRefusedAnswerAsksAgainEachTime() throws {
        let directory = try TemporaryDirectory()
        let recorder = SessionRecorder()
        let model = OnboardingModel(defaults: try openSuite(in: directory)) { recorder.record($0) }
        model.continuePastWelcome()
        model.answer("Anna")
        let problem = AnswerProblem("Unknown theme \"purple\". Choose one of: system, light, dark.")
        #expect(model.answer("purple") == .rejected(problem))
        #expect(model.answer("purple") == .rejected(problem))
        #expect(model.screen == .askTheme(suggestion: .system, problem: problem))
        // Once for each refusal, though the screen is the same.
        #expect(recorder.screens.suffix(2) == [model.screen, model.screen])
        #expect(model.answer("light") == .accepted)
        #expect(model.progress.problem == nil)
    }

    @Test func theSnapshotFollowsChangesMadeByAnotherWriter() throws {
        let directory = try TemporaryDirectory()
        let writer = try openSuite(in: directory)
        defer { try? writer.synchronize() }
        writer[.hasSeenOnboarding] = true
        writer[.username] = "Anna"
        let recorder = SessionRecorder()
        let model = OnboardingModel(defaults: try openSuite(in: directory)) { recorder.record($0) }
        #expect(model.settings.theme == .system)

        writer[.theme] = .light
        #expect(model.settings.theme == .light)
        guard case .main(let main) = recorder.screens.last else {
            Issue.record("expected a redraw of the main screen, got \(recorder.screens)")
            return
        }
        #expect(main.theme == .light)

        writer[.launchCount] = 5
        writer[.lastVersion] = "2.0"
        writer[.notificationsEnabled] = true
        writer[.firstLaunchDate] = Date(timeIntervalSince1970: 0)
        #expect(
            model.settings
                == Settings(
                    hasSeenOnboarding: true, firstLaunchDate: Date(timeIntervalSince1970: 0), username: "Anna",
                    theme: .light, notificationsEnabled: true, launchCount: 5, lastVersion: "2.0"))
        // A write of the same value changes no screen, so it draws nothing.
        let drawn = recorder.screens.count
        writer[.theme] = .light
        #expect(recorder.screens.count == drawn)
    }

    @Test func clearingTheFlagStartsOnboardingOverAndSettingItLeavesIt() throws {
        let directory = try TemporaryDirectory()
        let writer = try openSuite(in: directory)
        defer { try? writer.synchronize() }
        writer[.hasSeenOnboarding] = true
        let model = OnboardingModel(defaults: try openSuite(in: directory)) { _ in }
        #expect(!model.screen.isOnboarding)

        writer.removeObject(forKey: "has_seen_onboarding")
        #expect(model.screen == .welcome)
        model.continuePastWelcome()
        model.answer("Anna")
        #expect(model.progress.step == .theme)

        // Someone else finishes onboarding: the main screen, and the next onboarding starts over.
        writer.set(true, forKey: "has_seen_onboarding")
        #expect(!model.screen.isOnboarding)
        writer.set(false, forKey: "has_seen_onboarding")
        #expect(model.screen == .welcome)
    }

    @Test func afterCancelTheModelNoLongerFollowsTheSuite() throws {
        let directory = try TemporaryDirectory()
        let writer = try openSuite(in: directory)
        defer { try? writer.synchronize() }
        let recorder = SessionRecorder()
        let model = OnboardingModel(defaults: try openSuite(in: directory)) { recorder.record($0) }
        model.cancel()
        writer[.hasSeenOnboarding] = true
        #expect(model.screen == .welcome)
        #expect(recorder.screens.isEmpty)
    }

    @Test func withAQueueChangesArriveOnItInOrder() async throws {
        let directory = try TemporaryDirectory()
        let writer = try openSuite(in: directory)
        defer { try? writer.synchronize() }
        writer[.hasSeenOnboarding] = true
        let queue = DispatchQueue(label: "model-test")
        let recorder = SessionRecorder()
        let model = OnboardingModel(defaults: try openSuite(in: directory), queue: queue) { screen in
            dispatchPrecondition(condition: .onQueue(queue))
            recorder.record(screen)
        }
        for count in 1...20 { writer[.launchCount] = count }
        let counts = {
            recorder.screens.compactMap { screen -> Int? in
                if case .main(let main) = screen { return main.launchCount }
                return nil
            }
        }
        // Waits for the screens, not for the model's settings: those change before the model calls back.
        #expect(await eventually { counts().last == 20 })
        #expect(model.settings.launchCount == 20)
        #expect(counts() == Array(1...20))
    }

    @Test func aLaunchIsCountedAndResetKeepsTheCountAndChoices() throws {
        let directory = try TemporaryDirectory()
        let defaults = try openSuite(in: directory)
        defer { try? defaults.synchronize() }
        Launch.record(in: defaults, version: "1.0.0", resettingOnboarding: false)
        #expect(defaults[.launchCount] == 1)
        #expect(defaults[.lastVersion] == "1.0.0")

        defaults[.hasSeenOnboarding] = true
        defaults[.firstLaunchDate] = Date()
        defaults[.username] = "Anna"
        Launch.record(in: defaults, version: "1.0.1", resettingOnboarding: true)
        #expect(defaults[.launchCount] == 2)
        #expect(defaults[.lastVersion] == "1.0.1")
        #expect(defaults.propertyList(forKey: "has_seen_onboarding") == nil)
        #expect(defaults.propertyList(forKey: "first_launch_date") == nil)
        #expect(defaults[.username] == "Anna")
    }
}
