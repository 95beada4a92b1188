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
    let process = configuredProcess(executable, arguments, environment: environment, in: directory)
    let output = Pipe()
    process.standardOutput = output
    process.standardError = output
    try process.run()
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    return (process.terminationStatus, text)
}

/// A process for `executable`, not yet started (nil `environment` or `directory`: this process's).
private func configuredProcess(
    _ executable: String, _ arguments: [String], environment: [String: String]?, in directory: URL?
) -> Process {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let environment { process.environment = environment }
    if let directory { process.currentDirectoryURL = directory }
    return process
}

/// How a program that ran to its end ended, and what it printed, each stream apart.
public struct FinishedProcess: Sendable {
    public var status: Int32
    public var reason: Process.TerminationReason
    public var output: String
    public var errors: String
}

/// Runs `executable` to its end and gives how it ended and what it printed, standard output and
/// standard error apart (standard error is read on a thread of its own, so that a program that
/// fills one pipe while the other is being read never blocks).
///
/// - Parameters:
///   - executable: The program's path.
///   - arguments: Its arguments.
///   - environment: Its whole environment; nil for this process's.
///   - directory: Its working directory; nil for this process's.
/// - Returns: How it ended, and its two streams.
/// - Throws: When the program cannot be started.
public func runToEndApart(
    _ executable: String, _ arguments: [String], environment: [String: String]? = nil, in directory: URL? = nil
) throws -> FinishedProcess {
    let process = configuredProcess(executable, arguments, environment: environment, in: directory)
    let output = Pipe()
    let errors = Pipe()
    process.standardOutput = output
    process.standardError = errors
    try process.run()
    let errorsRead = ErrorsRead(errors.fileHandleForReading)
    let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    return FinishedProcess(
        status: process.terminationStatus, reason: process.terminationReason, output: printed,
        errors: errorsRead.text())
}

/// Standard error, read to its end on a thread of its own.
private final class ErrorsRead: @unchecked Sendable {
    private var read = ""
    private let done = DispatchSemaphore(value: 0)

    init(_ handle: FileHandle) {
        Thread { [self] in
            read = String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
            done.signal()
        }.start()
    }

    /// Everything written to standard error (waits for its end).
    func text() -> String {
        done.wait()
        return read
    }
}

/// Starts `executable` with its standard output in `output` and its standard error in `errors`
/// (each made empty first), and returns it running: for a process that runs beside the test (a
/// watcher, racers) or whose output is read from the files after it ends.
///
/// - Parameters:
///   - executable: The program.
///   - arguments: Its arguments.
///   - environment: Its whole environment.
///   - output: The file for its standard output.
///   - errors: The file for its standard error.
/// - Returns: The running process; the caller waits for it or stops it by its PID.
/// - Throws: When a file cannot be made or the program cannot be started.
public func startWithOutputInFiles(
    _ executable: URL, _ arguments: [String], environment: [String: String], output: URL, errors: URL
) throws -> Process {
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    process.environment = environment
    for file in [output, errors] {
        guard FileManager.default.createFile(atPath: file.path, contents: nil) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: file.path])
        }
    }
    process.standardOutput = try FileHandle(forWritingTo: output)
    process.standardError = try FileHandle(forWritingTo: errors)
    try process.run()
    return process
}

/// Waits (up to 10 s) until no open file description of `path` holds its `flock`: a journal
/// closed in a test is a dead process's only then. A child that another test of this process is
/// starting holds a copy of every descriptor until it runs its program (they close on exec), and
/// a replay meanwhile takes the journal for a live process's.
///
/// - Returns: Whether the lock was free before the deadline (false also when `path` cannot be opened).
public func waitUntilUnlocked(_ path: String) -> Bool {
    let deadline = ContinuousClock.now + .seconds(10)
    while ContinuousClock.now < deadline {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        if flock(descriptor, LOCK_EX | LOCK_NB) == 0 { return true }
        usleep(1_000)  // polling the lock, which has no event to wait on
    }
    return false
}
