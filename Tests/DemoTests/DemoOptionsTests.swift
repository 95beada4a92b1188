import OnboardingKit
import Testing

@Suite struct DemoOptionsTests {
    @Test(arguments: [
        ([], DemoOptions()),
        (["--live"], DemoOptions(live: true)),
        (["--reset", "--live"], DemoOptions(live: true, reset: true)),
        (["-h"], DemoOptions(help: true)),
        (["--help"], DemoOptions(help: true)),
        // `-key value` pairs belong to the argument domain and are left to it.
        (["-theme", "dark", "--live"], DemoOptions(live: true)),
    ])
    func parses(arguments: [String], expected: DemoOptions) throws {
        #expect(try DemoOptions.parse(arguments) == expected)
    }

    @Test(arguments: [
        (["--bogus"], "onboarding-demo: unknown argument '--bogus'"),
        (["live"], "onboarding-demo: unknown argument 'live'"),
        (["-"], "onboarding-demo: unknown argument '-'"),
        (["-theme"], "onboarding-demo: '-theme' needs a value (-<key> <value>)"),
    ])
    func refuses(arguments: [String], message: String) {
        #expect(throws: DemoOptions.UsageError(message: message)) { try DemoOptions.parse(arguments) }
    }
}
