import Foundation
import LiveDefaults
import LiveDefaultsCommand

/// The `defaults` command's standard streams, captured, for a run in this process through its seam
/// (``DefaultsCommandRunner``): one byte stream for standard output, text and data alike, as a
/// process has, and standard input given.
package final class CapturedCommandIO: Sendable {
    private let output = Locked(Data())
    private let errors = Locked(Data())
    /// The streams to hand the command.
    package let io: CommandIO

    /// - Parameter standardInput: What the command reads from standard input.
    package init(standardInput: Data = Data()) {
        io = CommandIO(
            standardOutput: { [output] text in output.withLock { $0.append(contentsOf: text.utf8) } },
            standardError: { [errors] text in errors.withLock { $0.append(contentsOf: text.utf8) } },
            writeStandardOutputData: { [output] data in output.withLock { $0.append(data) } },
            readStandardInput: { standardInput })
    }

    /// Adds `text` to standard error, as the command's own writes do (for a domain's notes).
    package func writeError(_ text: String) {
        io.standardError(text)
    }

    /// Everything written to standard output.
    package var standardOutput: String { String(decoding: output.withLock { $0 }, as: UTF8.self) }
    /// Everything written to standard error.
    package var standardError: String { String(decoding: errors.withLock { $0 }, as: UTF8.self) }
}
