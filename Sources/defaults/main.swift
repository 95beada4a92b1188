import Foundation
import LiveDefaults

// The `defaults` command: all parsing and logic live in LiveDefaults (Command/), where they are tested.
let runner = DefaultsCommandRunner(domains: CommandDomains(), io: .standard)
switch runner.run(Array(CommandLine.arguments.dropFirst())) {
case .exit(let status):
    exit(status)
case .watching(let token):
    withExtendedLifetime(token) { dispatchMain() }
}
