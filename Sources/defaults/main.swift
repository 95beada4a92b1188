import Foundation
import LiveDefaults
import LiveDefaultsCommand

// The `defaults` command: all parsing and logic live in LiveDefaultsCommand, where they are tested in process.
// The command reports file problems itself (once, in its own words); CommandNotes says which of the
// library's reports are passed on.
DefaultsErrorReporting.setHandler { error in
    if let note = CommandNotes.note(for: error, administeredSettings: AdministeredSettings.fromEnvironment) {
        FileHandle.standardError.write(Data(note.utf8))
    }
}
var runner = DefaultsCommandRunner(domains: CommandDomains(), io: .standard)
// Its changes are the command's in the suites' history (docs/design.md, "History: the writer").
runner.namesItselfInHistory = true
switch runner.run(Array(CommandLine.arguments.dropFirst())) {
case .exit(let status):
    exit(status)
case .watching(let session):
    withExtendedLifetime(session) { dispatchMain() }
}
