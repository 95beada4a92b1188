import Foundation

/// Runs `executable` to its end and gives its exit status and what it printed, standard output and
/// standard error together (for tools whose output is only read when they fail).
///
/// - Parameters:
///   - executable: The program's path.
///   - arguments: Its arguments.
///   - environment: Its environment; nil for this process's.
///   - directory: Its working directory; nil for this process's.
/// - Returns: The exit status and the combined output.
/// - Throws: When the program cannot be started.
public func runToEnd(
    _ executable: String, _ arguments: [String], environment: [String: String]? = nil, in directory: URL? = nil
) throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let environment { process.environment = environment }
    if let directory { process.currentDirectoryURL = directory }
    let output = Pipe()
    process.standardOutput = output
    process.standardError = output
    try process.run()
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    return (process.terminationStatus, text)
}
