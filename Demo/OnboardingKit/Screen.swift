import Foundation

/// What the demo shows: a pure function of the settings and the onboarding progress.
public enum Screen: Equatable, Sendable {
    /// The first onboarding screen.
    case welcome
    /// Asks for a name; `suggestion` is taken when the answer is empty.
    case askName(suggestion: String?, problem: AnswerProblem?)
    /// Asks for a theme; `suggestion` is taken when the answer is empty.
    case askTheme(suggestion: Theme, problem: AnswerProblem?)
    /// Asks whether notifications are on; `suggestion` is taken when the answer is empty.
    case askNotifications(suggestion: Bool, problem: AnswerProblem?)
    /// Onboarding answered and being written; nothing is asked.
    case saving
    /// The main screen, shown once `has_seen_onboarding` is set.
    case main(MainScreen)

    /// The screen for `settings` and `progress`: the main screen when `has_seen_onboarding` is set,
    /// else the onboarding step in `progress`.
    ///
    /// - Parameters:
    ///   - settings: The current settings.
    ///   - progress: This run's onboarding progress.
    public init(settings: Settings, progress: OnboardingProgress) {
        if settings.hasSeenOnboarding {
            self = .main(MainScreen(settings))
            return
        }
        switch progress.step {
        case .welcome:
            self = .welcome
        case .name:
            self = .askName(
                suggestion: settings.username.isEmpty ? nil : settings.username, problem: progress.problem)
        case .theme:
            self = .askTheme(suggestion: settings.theme, problem: progress.problem)
        case .notifications:
            self = .askNotifications(suggestion: settings.notificationsEnabled, problem: progress.problem)
        case .saving:
            self = .saving
        }
    }

    /// Whether this is one of the onboarding screens (saving included).
    public var isOnboarding: Bool {
        if case .main = self { return false }
        return true
    }

    /// Whether this screen waits for an answer on standard input.
    public var asksForAnswer: Bool {
        switch self {
        case .askName, .askTheme, .askNotifications: return true
        case .welcome, .saving, .main: return false
        }
    }
}

/// What the main screen shows.
public struct MainScreen: Equatable, Sendable {
    /// The user's name.
    public var username: String
    /// How many times the demo was started.
    public var launchCount: Int
    /// The chosen theme.
    public var theme: Theme
    /// Whether notifications are on.
    public var notificationsEnabled: Bool
    /// When onboarding finished.
    public var firstLaunchDate: Date?
    /// The version that ran last.
    public var lastVersion: String?

    /// The main screen's part of `settings`.
    public init(_ settings: Settings) {
        username = settings.username
        launchCount = settings.launchCount
        theme = settings.theme
        notificationsEnabled = settings.notificationsEnabled
        firstLaunchDate = settings.firstLaunchDate
        lastVersion = settings.lastVersion
    }
}
