import Foundation
import OnboardingKit
import Testing

@Suite struct ScreenTests {
    @Test func freshSettingsShowTheWelcomeScreen() {
        #expect(Screen(settings: Settings(), progress: .start) == .welcome)
        #expect(Screen(settings: Settings(), progress: .start).isOnboarding)
    }

    @Test func eachStepShowsItsQuestionWithTheCurrentSettingAsSuggestion() {
        let settings = Settings(username: "Anna", theme: .dark, notificationsEnabled: true)
        #expect(Screen(settings: settings, progress: .init(step: .name)) == .askName(suggestion: "Anna", problem: nil))
        #expect(Screen(settings: settings, progress: .init(step: .theme)) == .askTheme(suggestion: .dark, problem: nil))
        #expect(
            Screen(settings: settings, progress: .init(step: .notifications))
                == .askNotifications(suggestion: true, problem: nil))
        #expect(Screen(settings: settings, progress: .init(step: .saving)) == .saving)
        #expect(Screen(settings: Settings(), progress: .init(step: .name)) == .askName(suggestion: nil, problem: nil))
    }

    @Test func aRefusedAnswerIsShownWithTheQuestion() {
        let problem = AnswerProblem("Unknown theme")
        let screen = Screen(settings: Settings(), progress: .init(step: .theme, problem: problem))
        #expect(screen == .askTheme(suggestion: .system, problem: problem))
        #expect(screen.asksForAnswer)
    }

    @Test(arguments: OnboardingProgress.Step.allCases)
    func theFlagShowsTheMainScreenWhateverTheProgress(step: OnboardingProgress.Step) throws {
        let date = Date(timeIntervalSince1970: 1_700_000_000)
        let settings = Settings(
            hasSeenOnboarding: true, firstLaunchDate: date, username: "Anna", theme: .light,
            notificationsEnabled: true, launchCount: 7, lastVersion: "1.0.0")
        let screen = Screen(settings: settings, progress: .init(step: step))
        guard case .main(let main) = screen else {
            Issue.record("expected the main screen, got \(screen)")
            return
        }
        #expect(main.username == "Anna")
        #expect(main.launchCount == 7)
        #expect(main.theme == .light)
        #expect(main.notificationsEnabled)
        #expect(main.firstLaunchDate == date)
        #expect(main.lastVersion == "1.0.0")
        #expect(!screen.isOnboarding)
        #expect(!screen.asksForAnswer)
    }
}
