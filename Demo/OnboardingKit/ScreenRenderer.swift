import Foundation

/// Turns a ``Screen`` into text: plain frames for pipes and logs, or ANSI that redraws a terminal in place.
///
/// A plain frame starts with a line `==== <title> ====` (``frameMarker``) and ends with a newline,
/// so a reader of the output can split it into frames. It holds no escape codes.
public struct ScreenRenderer: Sendable {
    /// How frames are drawn.
    public enum Style: Sendable {
        /// Text only: one frame after another.
        case plain
        /// Clears the terminal and draws in place, with colour.
        case ansi
    }

    /// The start of the first line of every frame.
    public static let frameMarker = "==== "

    /// How frames are drawn.
    public var style: Style
    /// Whether a person is typing (the welcome screen then says to press Enter, the main screen how to quit).
    public var interactive: Bool
    /// Whether the main screen stays open and redraws (it then says so).
    public var live: Bool

    /// A renderer.
    ///
    /// - Parameters:
    ///   - style: Plain frames or ANSI.
    ///   - interactive: Whether a person is at a terminal.
    ///   - live: Whether the main screen stays open.
    public init(style: Style, interactive: Bool, live: Bool) {
        self.style = style
        self.interactive = interactive
        self.live = live
    }

    /// The text of `screen`, ending with a newline (or, for a question in ANSI, with the prompt).
    public func render(_ screen: Screen) -> String {
        var lines: [String] = []
        var problem: AnswerProblem?
        let title: String
        switch screen {
        case .welcome:
            title = "Welcome (1/4)"
            lines.append("Welcome to the LiveDefaults onboarding demo!")
            lines.append("Three questions, then your answers are saved in the suite \(OnboardingSuite.name).")
            if interactive { lines.append("Press Enter to begin.") }
        case .askName(let suggestion, let refused):
            title = "Your name (2/4)"
            lines.append("What should we call you?" + hint(suggestion))
            problem = refused
        case .askTheme(let suggestion, let refused):
            title = "Theme (3/4)"
            let choices = Theme.allCases.map(\.rawValue).joined(separator: ", ")
            lines.append("Which theme? \(choices)" + hint(suggestion.rawValue))
            problem = refused
        case .askNotifications(let suggestion, let refused):
            title = "Notifications (4/4)"
            lines.append("Turn notifications on? yes or no" + hint(suggestion ? "yes" : "no"))
            problem = refused
        case .saving:
            title = "Saving"
            lines.append("Saving your choices…")
        case .main(let main):
            title = "Main screen"
            lines.append(contentsOf: mainLines(main))
        }
        if let problem { lines.insert(emphasised("! " + problem.message, code: "31"), at: 0) }
        switch style {
        case .plain:
            return ([Self.frameMarker + title + " ===="] + lines).joined(separator: "\n") + "\n"
        case .ansi:
            // Home, clear the screen, then the frame; a question ends with its prompt.
            let heading = "\u{1B}[1;7m \(title) \u{1B}[0m"
            let prompt = screen.asksForAnswer ? "\n> " : "\n"
            return "\u{1B}[H\u{1B}[2J" + ([heading, ""] + lines).joined(separator: "\n") + prompt
        }
    }

    private func mainLines(_ main: MainScreen) -> [String] {
        var lines = [main.launchCount > 1 ? "Welcome back, \(main.username)!" : "Welcome, \(main.username)!"]
        lines.append("  Launches       \(main.launchCount)")
        lines.append("  Theme          " + themeSample(main.theme))
        lines.append("  Notifications  \(main.notificationsEnabled ? "on" : "off")")
        lines.append("  First launch   " + (main.firstLaunchDate.map { $0.formatted(.iso8601) } ?? "unknown"))
        lines.append("  Last version   \(main.lastVersion ?? "unknown")")
        if live || interactive {
            lines.append("Changes to \(OnboardingSuite.name) from any process show here at once.")
            lines.append(interactive ? "q + Enter or Ctrl-C quits." : "Ctrl-C quits.")
        }
        return lines
    }

    private func hint(_ suggestion: String?) -> String {
        guard let suggestion, !suggestion.isEmpty else { return "" }
        return " [\(suggestion)]"
    }

    private func themeSample(_ theme: Theme) -> String {
        switch theme {
        case .system: return theme.rawValue
        case .light: return emphasised(" light ", code: "30;47")
        case .dark: return emphasised(" dark ", code: "97;40")
        }
    }

    /// `text` in the SGR colour `code` for ANSI; for plain text, `text` trimmed of padding.
    private func emphasised(_ text: String, code: String) -> String {
        switch style {
        case .plain: return text.trimmingCharacters(in: .whitespaces)
        case .ansi: return "\u{1B}[\(code)m\(text)\u{1B}[0m"
        }
    }
}
