import Foundation
import LiveDefaults
import LiveDefaultsCommand

// The `defaults` command: all parsing and logic live in LiveDefaultsCommand, where they are tested in process.
// The command reports file problems itself (once, in its own words). Passed on: a degraded watch, and
// what an administrator's file does that no verb's output shows — a managed file ignored because a
// user could change it, a key set (by `rename` or `import`) that a managed file forces.
DefaultsErrorReporting.setHandler { error in
    switch error.code {
    case .watchingDegraded, .untrustedManagedFile, .forcedKey:
        FileHandle.standardError.write(Data("defaults: note: \(error.message)\n".utf8))
    default:
        break
    }
}
let runner = DefaultsCommandRunner(domains: CommandDomains(), io: .standard)
switch runner.run(Array(CommandLine.arguments.dropFirst())) {
case .exit(let status):
    exit(status)
case .watching(let session):
    withExtendedLifetime(session) { dispatchMain() }
}
