import Foundation
import OnboardingKit
import Testing

@Suite struct ScreenRendererTests {
    static let screens: [Screen] = [
        .welcome, .askName(suggestion: "Anna", problem: nil),
        .askTheme(suggestion: .dark, problem: AnswerProblem("Unknown theme \"x\".")),
        .askNotifications(suggestion: false, problem: nil),
        .main(MainScreen(Settings(hasSeenOnboarding: true, username: "Anna", theme: .dark, launchCount: 2))),
    ]

    @Test(arguments: screens)
    func plainFramesAreOneMarkedFrameWithoutEscapes(screen: Screen) {
        for renderer in [
            ScreenRenderer(style: .plain, interactive: false, live: false),
            ScreenRenderer(style: .plain, interactive: true, live: true),
        ] {
            let text = renderer.render(screen)
            #expect(!text.contains("\u{1B}"))
            #expect(text.hasPrefix(ScreenRenderer.frameMarker))
            #expect(text.hasSuffix("\n"))
            #expect(text.components(separatedBy: "\n" + ScreenRenderer.frameMarker).count == 1)
        }
    }

    @Test(arguments: screens)
    func ansiFramesRedrawInPlace(screen: Screen) {
        let text = ScreenRenderer(style: .ansi, interactive: true, live: false).render(screen)
        #expect(text.hasPrefix("\u{1B}[H\u{1B}[2J"))
        #expect(text.hasSuffix(screen.asksForAnswer ? "> " : "\n"))
    }

    @Test func mainScreenShowsTheSettings() {
        let settings = Settings(
            hasSeenOnboarding: true, firstLaunchDate: Date(timeIntervalSince1970: 0), username: "Anna",
            theme: .dark, notificationsEnabled: true, launchCount: 2, lastVersion: "1.0.0")
        let text = ScreenRenderer(style: .plain, interactive: false, live: false).render(.main(MainScreen(settings)))
        #expect(
            text == """
                ==== Main screen ====
                Welcome back, Anna!
                  Launches       2
                  Theme          dark
                  Notifications  on
                  First launch   1970-01-01T00:00:00Z
                  Last version   1.0.0

                """)
    }

    @Test func firstLaunchSaysWelcomeAndLiveSaysHowToQuit() {
        let main = MainScreen(Settings(hasSeenOnboarding: true, username: "Anna", launchCount: 1))
        let text = ScreenRenderer(style: .plain, interactive: false, live: true).render(.main(main))
        #expect(text.contains("Welcome, Anna!"))
        #expect(text.contains("Ctrl-C quits."))
        #expect(!text.contains("q + Enter"))
    }

    @Test func welcomeAsksForEnterOnlyInATerminal() {
        #expect(ScreenRenderer(style: .plain, interactive: true, live: false).render(.welcome).contains("Press Enter"))
        #expect(
            !ScreenRenderer(style: .plain, interactive: false, live: false).render(.welcome).contains("Press Enter"))
    }

    @Test func aRefusedAnswerIsShownFirst() {
        let screen = Screen.askTheme(suggestion: .system, problem: AnswerProblem("Unknown theme \"purple\"."))
        let lines = ScreenRenderer(style: .plain, interactive: false, live: false).render(screen)
            .split(separator: "\n")
        #expect(lines.dropFirst().first == "! Unknown theme \"purple\".")
        #expect(lines.last == "Which theme? system, light, dark [system]")
    }
}
