import Dispatch
import Foundation
import LiveDefaults
import Synchronization

/// The demo's state: a snapshot of the settings kept current by observing the suite, and this run's
/// onboarding progress. The screen is a function of the two (``Screen/init(settings:progress:)``);
/// the model calls back whenever it changes, whoever changed the settings — this process or another.
///
/// ```swift
/// let model = OnboardingModel(defaults: defaults, queue: queue) { screen in draw(screen) }
/// model.answer("Anna")    // on the name screen: accepted, the theme screen is next
/// ```
///
/// Pass a serial `queue` and call the model's methods on it: callbacks then come in order, on that
/// queue. The model never re-reads the suite after it starts: every change arrives by observation.
public final class OnboardingModel: Sendable {
    /// What an answer did.
    public enum AnswerOutcome: Equatable, Sendable {
        /// Accepted; the next screen is shown (after the last answer, the choices are written).
        case accepted
        /// Refused; the same question is shown again with the problem.
        case rejected(AnswerProblem)
        /// The screen shown asks nothing (the main screen, or onboarding being saved).
        case notAsked
    }

    private struct State {
        var settings: Settings
        var progress = OnboardingProgress.start
        var screen: Screen
    }

    /// The suite the model observes and writes.
    public let defaults: Defaults
    private let state: Mutex<State>
    private let token = Mutex<ObservationToken?>(nil)
    private let onChange: @Sendable (Screen) -> Void

    /// Starts observing the demo's keys in `defaults`.
    ///
    /// - Parameters:
    ///   - defaults: The suite (``OnboardingSuite/name`` in the demo).
    ///   - queue: A serial queue for observation callbacks and `onChange`; nil delivers them as
    ///     ``Defaults/observe(_:options:queue:_:)-swift.method`` does.
    ///   - onChange: Called with the new screen each time it changes.
    public init(defaults: Defaults, queue: DispatchQueue? = nil, onChange: @escaping @Sendable (Screen) -> Void) {
        self.defaults = defaults
        self.onChange = onChange
        let settings = Settings(reading: defaults)
        state = Mutex(State(settings: settings, screen: Screen(settings: settings, progress: .start)))
        // Observe first, then take the snapshot again: a change made in between is then either in
        // the snapshot or delivered after it, and both carry the latest value.
        let observation = defaults.observe(Settings.keys, queue: queue) { [weak self] change in
            self?.update { state in
                let wasOnMain = state.settings.hasSeenOnboarding
                state.settings.apply(change)
                // Onboarding starts over from the welcome screen the next time it is needed.
                if state.settings.hasSeenOnboarding != wasOnMain { state.progress = .start }
                return false
            }
        }
        token.withLock { $0 = observation }
        let current = Settings(reading: defaults)
        state.withLock { state in
            state.settings = current
            state.screen = Screen(settings: current, progress: state.progress)
        }
    }

    /// Stops observing; the model then no longer calls back.
    public func cancel() {
        let cancelled = token.withLock { token in
            defer { token = nil }
            return token
        }
        cancelled?.cancel()
    }

    /// The settings as last observed.
    public var settings: Settings { state.withLock { $0.settings } }
    /// This run's onboarding progress.
    public var progress: OnboardingProgress { state.withLock { $0.progress } }
    /// The screen to show.
    public var screen: Screen { state.withLock { $0.screen } }

    /// Leaves the welcome screen for the first question (the welcome screen asks nothing).
    public func continuePastWelcome() {
        update { state in
            if state.progress.step == .welcome { state.progress.step = .name }
            return false
        }
    }

    /// Takes an answer to the question on screen.
    ///
    /// On the welcome screen any answer continues. After the last question the choices,
    /// `first_launch_date` (when it has none) and, last, `has_seen_onboarding` are written
    /// together; the main screen follows when that change comes back through observation.
    ///
    /// - Parameter text: One line as typed, without its newline.
    /// - Returns: Whether the answer was taken.
    @discardableResult
    public func answer(_ text: String) -> AnswerOutcome {
        var outcome = AnswerOutcome.notAsked
        var choices: (username: String, theme: Theme, notifications: Bool)?
        update { state in
            switch state.screen {
            case .welcome:
                state.progress.step = .name
                outcome = .accepted
            case .askName(let suggestion, _):
                outcome = Self.take(AnswerParser.name(text, suggestion: suggestion), into: &state.progress) {
                    $0.username = $1
                    $0.step = .theme
                }
            case .askTheme(let suggestion, _):
                outcome = Self.take(AnswerParser.theme(text, suggestion: suggestion), into: &state.progress) {
                    $0.theme = $1
                    $0.step = .notifications
                }
            case .askNotifications(let suggestion, _):
                outcome = Self.take(AnswerParser.yesNo(text, suggestion: suggestion), into: &state.progress) {
                    progress, enabled in
                    choices = (progress.username ?? "", progress.theme ?? .system, enabled)
                    progress.step = .saving
                }
            case .saving, .main:
                break
            }
            // A refused answer shows the question again even when the problem is the same.
            if case .rejected = outcome { return true }
            return false
        }
        if let choices { save(choices) }
        return outcome
    }

    private static func take<Value>(
        _ result: Result<Value, AnswerProblem>, into progress: inout OnboardingProgress,
        _ apply: (inout OnboardingProgress, Value) -> Void
    ) -> AnswerOutcome {
        switch result {
        case .success(let value):
            progress.problem = nil
            apply(&progress, value)
            return .accepted
        case .failure(let problem):
            progress.problem = problem
            return .rejected(problem)
        }
    }

    /// Writes the onboarding choices. The flag goes last: a reader that sees it sees the choices.
    private func save(_ choices: (username: String, theme: Theme, notifications: Bool)) {
        defaults[.username] = choices.username
        defaults[.theme] = choices.theme
        defaults[.notificationsEnabled] = choices.notifications
        if defaults[.firstLaunchDate] == nil { defaults[.firstLaunchDate] = Date() }
        defaults[.hasSeenOnboarding] = true
    }

    /// Changes the state, recomputes the screen and calls back (outside the lock) when it changed,
    /// or when `change` returns true.
    private func update(_ change: (inout State) -> Bool) {
        let changed: Screen? = state.withLock { state in
            let before = state.screen
            let forceCallback = change(&state)
            state.screen = Screen(settings: state.settings, progress: state.progress)
            return state.screen != before || forceCallback ? state.screen : nil
        }
        if let changed { onChange(changed) }
    }
}
