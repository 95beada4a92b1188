import Foundation

/// Why an answer was refused, in words shown to the user with the question asked again.
public struct AnswerProblem: Error, Equatable, Sendable {
    /// One sentence saying what was wrong and what is accepted.
    public let message: String

    /// A problem with `message`.
    public init(_ message: String) { self.message = message }
}

/// Reads the onboarding answers. Answers are trimmed; an empty answer takes the suggestion (the
/// current setting) when there is one.
public enum AnswerParser {
    /// The words accepted as yes.
    public static let yesWords = ["yes", "y", "on", "true"]
    /// The words accepted as no.
    public static let noWords = ["no", "n", "off", "false"]

    /// A name: any non-empty text, trimmed.
    ///
    /// - Parameters:
    ///   - text: The answer as typed.
    ///   - suggestion: The name taken for an empty answer, if any.
    /// - Returns: The name, or the problem to show.
    public static func name(_ text: String, suggestion: String?) -> Result<String, AnswerProblem> {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if !trimmed.isEmpty { return .success(trimmed) }
        if let suggestion, !suggestion.isEmpty { return .success(suggestion) }
        return .failure(AnswerProblem("Please type a name."))
    }

    /// A theme: "system", "light" or "dark", in any case.
    ///
    /// - Parameters:
    ///   - text: The answer as typed.
    ///   - suggestion: The theme taken for an empty answer.
    /// - Returns: The theme, or the problem to show (it lists the valid choices).
    public static func theme(_ text: String, suggestion: Theme) -> Result<Theme, AnswerProblem> {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.isEmpty { return .success(suggestion) }
        if let theme = Theme(rawValue: trimmed.lowercased()) { return .success(theme) }
        let choices = Theme.allCases.map(\.rawValue).joined(separator: ", ")
        return .failure(AnswerProblem("Unknown theme \"\(trimmed)\". Choose one of: \(choices)."))
    }

    /// A yes or no: yes/no, y/n, on/off or true/false, in any case.
    ///
    /// - Parameters:
    ///   - text: The answer as typed.
    ///   - suggestion: The answer taken for an empty answer.
    /// - Returns: The answer, or the problem to show.
    public static func yesNo(_ text: String, suggestion: Bool) -> Result<Bool, AnswerProblem> {
        let word = text.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
        if word.isEmpty { return .success(suggestion) }
        if yesWords.contains(word) { return .success(true) }
        if noWords.contains(word) { return .success(false) }
        return .failure(AnswerProblem("Please answer yes or no (also y/n, on/off, true/false)."))
    }
}
