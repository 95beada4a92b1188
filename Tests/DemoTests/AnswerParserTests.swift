import OnboardingKit
import Testing

@Suite struct AnswerParserTests {
    @Test(arguments: [
        ("yes", true), ("y", true), ("on", true), ("true", true), ("YES", true), (" On ", true),
        ("no", false), ("n", false), ("off", false), ("false", false), ("No", false), ("FALSE", false),
    ])
    func yesNoWords(text: String, expected: Bool) {
        #expect(AnswerParser.yesNo(text, suggestion: !expected) == .success(expected))
    }

    @Test(arguments: ["maybe", "yess", "1", "si"])
    func otherWordsAreNotYesOrNo(text: String) throws {
        let problem = try #require(failure(of: AnswerParser.yesNo(text, suggestion: true)))
        #expect(problem.message.contains("yes or no"))
    }

    @Test func emptyAnswerTakesTheSuggestion() {
        #expect(AnswerParser.yesNo("", suggestion: true) == .success(true))
        #expect(AnswerParser.theme("  ", suggestion: .dark) == .success(.dark))
        #expect(AnswerParser.name("", suggestion: "Anna") == .success("Anna"))
    }

    @Test(arguments: [
        ("system", Theme.system), ("light", .light), ("dark", .dark), ("Dark", .dark), (" LIGHT ", .light),
    ])
    func themes(text: String, expected: Theme) {
        #expect(AnswerParser.theme(text, suggestion: .system) == .success(expected))
    }

    @Test func unknownThemeListsTheChoices() throws {
        let problem = try #require(failure(of: AnswerParser.theme("purple", suggestion: .system)))
        #expect(problem.message == "Unknown theme \"purple\". Choose one of: system, light, dark.")
    }

    @Test func namesAreTrimmedAndMustNotBeEmpty() throws {
        #expect(AnswerParser.name("  Anna Lee \t", suggestion: nil) == .success("Anna Lee"))
        #expect(AnswerParser.name("Bob", suggestion: "Anna") == .success("Bob"))
        let problem = try #require(failure(of: AnswerParser.name("   ", suggestion: nil)))
        #expect(problem.message == "Please type a name.")
        #expect(failure(of: AnswerParser.name("", suggestion: "")) != nil)
    }

    private func failure<Value>(of result: Result<Value, AnswerProblem>) -> AnswerProblem? {
        if case .failure(let problem) = result { return problem }
        return nil
    }
}
