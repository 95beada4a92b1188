/// How far the user got through onboarding in this run: the step shown and the answers accepted so
/// far. Answers are kept here, not in the suite, until the last one: they are written together.
public struct OnboardingProgress: Equatable, Sendable {
    /// An onboarding step, in order.
    public enum Step: Int, CaseIterable, Comparable, Sendable {
        /// The welcome text; no answer needed (in a terminal, Enter continues).
        case welcome
        /// Asks for the user's name.
        case name
        /// Asks for the theme.
        case theme
        /// Asks whether notifications are on.
        case notifications
        /// Every answer was accepted and written; waiting for the flag to come back through observation.
        case saving

        public static func < (lhs: Step, rhs: Step) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// The step shown.
    public var step: Step
    /// The accepted name, once the name step is done.
    public var username: String?
    /// The accepted theme, once the theme step is done.
    public var theme: Theme?
    /// Why the last answer was refused; shown with the question asked again.
    public var problem: AnswerProblem?

    /// Progress at `step` with the given answers.
    public init(step: Step = .welcome, username: String? = nil, theme: Theme? = nil, problem: AnswerProblem? = nil) {
        self.step = step
        self.username = username
        self.theme = theme
        self.problem = problem
    }

    /// The beginning of onboarding.
    public static let start = OnboardingProgress()
}
