import Foundation
import LiveDefaults
import LiveDefaultsCommand
import LiveDefaultsTestHelpers
import TestSupport

/// Runs the `defaults` command in this process through its seam (``DefaultsCommandRunner``) against
/// `domains`, reading `standardInput`, with its standard streams captured: one byte stream for standard
/// output, text and data alike, as a process has.
///
/// - Returns: Its exit status and what it printed; nil when it started `watch` instead of finishing
///   (watching is tested with the binary).
func runInProcess(_ arguments: [String], domains: CommandDomains, standardInput: Data = Data()) -> CommandResult? {
    let streams = CapturedCommandIO(standardInput: standardInput)
    guard case .exit(let status) = DefaultsCommandRunner(domains: domains, io: streams.io).run(arguments) else {
        return nil
    }
    return CommandResult(status: status, standardOutput: streams.standardOutput, standardError: streams.standardError)
}
