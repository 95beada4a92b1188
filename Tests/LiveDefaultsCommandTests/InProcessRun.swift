import Foundation
import LiveDefaults
import LiveDefaultsCommand
import TestSupport

/// Runs the `defaults` command in this process through its seam (``DefaultsCommandRunner``) against
/// `domains`, reading `standardInput`, with its standard streams captured: one byte stream for standard
/// output, text and data alike, as a process has.
///
/// - Returns: Its exit status and what it printed; nil when it started `watch` instead of finishing
///   (watching is tested with the binary).
func runInProcess(_ arguments: [String], domains: CommandDomains, standardInput: Data = Data()) -> CommandResult? {
    let output = Locked(Data())
    let errors = Locked(Data())
    let io = CommandIO(
        standardOutput: { text in output.withLock { $0.append(contentsOf: text.utf8) } },
        standardError: { text in errors.withLock { $0.append(contentsOf: text.utf8) } },
        writeStandardOutputData: { data in output.withLock { $0.append(data) } },
        readStandardInput: { standardInput })
    guard case .exit(let status) = DefaultsCommandRunner(domains: domains, io: io).run(arguments) else { return nil }
    return CommandResult(
        status: status, standardOutput: String(decoding: output.withLock { $0 }, as: UTF8.self),
        standardError: String(decoding: errors.withLock { $0 }, as: UTF8.self))
}
