import Foundation
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
        (["--fleet", "http://127.0.0.1:2379"], DemoOptions(fleet: URL(string: "http://127.0.0.1:2379")!)),
        (
            ["--live", "--managed", "--fleet", "https://etcd.internal:2379"],
            DemoOptions(live: true, fleet: URL(string: "https://etcd.internal:2379")!, managed: true)
        ),
    ])
    func parses(arguments: [String], expected: DemoOptions) throws {
        #expect(try DemoOptions.parse(arguments) == expected)
    }

    @Test(arguments: [
        (["--bogus"], "onboarding-demo: unknown argument '--bogus'"),
        (["live"], "onboarding-demo: unknown argument 'live'"),
        (["-"], "onboarding-demo: unknown argument '-'"),
        (["-theme"], "onboarding-demo: '-theme' needs a value (-<key> <value>)"),
        (["--fleet"], "onboarding-demo: '--fleet' needs an etcd client URL, such as http://127.0.0.1:2379"),
        (
            ["--fleet", "127.0.0.1:2379"],
            "onboarding-demo: '--fleet' needs an etcd client URL such as http://127.0.0.1:2379, not '127.0.0.1:2379'"
        ),
        (
            ["--fleet", "ftp://host"],
            "onboarding-demo: '--fleet' needs an etcd client URL such as http://127.0.0.1:2379, not 'ftp://host'"
        ),
        (["--managed"], "onboarding-demo: '--managed' needs '--fleet <url>' (the fleet suite it applies to)"),
    ])
    func refuses(arguments: [String], message: String) {
        #expect(throws: DemoOptions.UsageError(message: message)) { try DemoOptions.parse(arguments) }
    }
}
