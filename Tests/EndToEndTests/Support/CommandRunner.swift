import Foundation
import LiveDefaults
import LiveDefaultsTestHelpers
import TestSupport

/// Runs built executables as separate processes, with their own environment, and collects their output.
///
/// `run` waits for the process to finish; `start` returns a ``RunningCommand`` whose output can be awaited
/// line by line with a deadline (for long-running commands such as `defaults watch`).
struct CommandRunner: DefaultsCommandRunning {
    var executable: URL
    var environment: [String: String]

    /// - Parameters:
    ///   - executable: The program to run.
    ///   - environment: Variables set on top of this process's environment.
    init(executable: URL, environment: [String: String] = [:]) {
        self.executable = executable
        self.environment = environment
    }

    /// Runs to completion and returns the exit status and everything printed.
    func run(_ arguments: [String], standardInput: Data? = nil) throws -> CommandResult {
        let running = try start(arguments, standardInput: standardInput)
        return running.waitForExit()
    }

    /// Starts the process; its output is collected as it arrives. Standard input gets
    /// `standardInput` and is closed, unless `keepingInputOpen` (then ``RunningCommand/write(_:)``).
    func start(_ arguments: [String], standardInput: Data? = nil, keepingInputOpen: Bool = false) throws
        -> RunningCommand
    {
        try RunningCommand(
            executable: executable, arguments: arguments,
            environment: ProcessInfo.processInfo.environment.merging(environment) { _, new in new },
            standardInput: standardInput, keepingInputOpen: keepingInputOpen)
    }
}

/// A started process whose standard output and error are read as they arrive.
final class RunningCommand: Sendable {
    enum Stream: Sendable { case output, error }

    struct Timeout: Error, CustomStringConvertible {
        var waitingFor: String
        var output: String
        var error: String
        var description: String {
            "timed out waiting for \(waitingFor)\n--- stdout ---\n\(output)--- stderr ---\n\(error)"
        }
    }

    private struct Buffers {
        var output = Data()
        var error = Data()
        var openStreams = 2
    }

    /// The output read so far, shared with the pipes' reading handlers.
    private final class Collected: Sendable {
        let buffers = Locked(Buffers())  // Not Mutex: the thread sanitizer cannot see its futex.
        let arrived = DispatchSemaphore(value: 0)
    }

    let process = Process()
    private let collected = Collected()
    private let input = Pipe()

    fileprivate init(
        executable: URL, arguments: [String], environment: [String: String], standardInput: Data?,
        keepingInputOpen: Bool
    ) throws {
        process.executableURL = executable
        process.arguments = arguments
        process.environment = environment
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        process.standardInput = input
        // Each stream is read by a thread of its own with blocking reads until end of file, not by a
        // `readabilityHandler`: that one is a Dispatch read source, and the pipe's descriptor is closed
        // while its source may still be registered with Dispatch's epoll; with descriptors opened and
        // closed fast in process by other tests, the number was reused and Dispatch's event loop crashed
        // (a bad pointer in `_dispatch_event_loop_drain`).
        for (pipe, stream) in [(output, Stream.output), (error, Stream.error)] {
            let handle = pipe.fileHandleForReading
            let reader = Thread { [collected] in
                while true {
                    let chunk = handle.availableData
                    collected.buffers.withLock { buffers in
                        if chunk.isEmpty {
                            buffers.openStreams -= 1
                        } else if stream == .output {
                            buffers.output.append(chunk)
                        } else {
                            buffers.error.append(chunk)
                        }
                    }
                    collected.arrived.signal()
                    if chunk.isEmpty { return }
                }
            }
            reader.name = "RunningCommand.\(stream)"
            reader.start()
        }
        try process.run()
        if let standardInput { input.fileHandleForWriting.write(standardInput) }
        if !keepingInputOpen { try? input.fileHandleForWriting.close() }
    }

    /// Everything written to standard output so far.
    var standardOutput: String { text(of: .output) }
    /// Everything written to standard error so far.
    var standardError: String { text(of: .error) }

    /// Writes `text` to standard input (started with `keepingInputOpen`).
    func write(_ text: String) {
        input.fileHandleForWriting.write(Data(text.utf8))
    }

    /// Closes standard input: the process reads end of file.
    func closeInput() throws {
        try input.fileHandleForWriting.close()
    }

    /// Sends `signal` to the process.
    func send(_ signal: Int32) {
        kill(process.processIdentifier, signal)
    }

    /// Waits until the standard output so far satisfies `condition`, for at most `seconds` (a bound
    /// on a hang, as ``eventually(within:_:)``'s default: only a failing test waits it out).
    func waitForOutput(within seconds: Double = 30, _ condition: (String) -> Bool) async -> Bool {
        await eventually(within: seconds) { condition(standardOutput) }
    }

    /// Waits for the process to exit, for at most `seconds`; its status, or nil (then it is killed).
    func waitForExit(within seconds: Double) async -> Int32? {
        guard await eventually(within: seconds, { !process.isRunning }) else {
            send(SIGKILL)
            return nil
        }
        return waitForExit().status
    }

    /// Everything printed so far on `stream`.
    func text(of stream: Stream) -> String {
        collected.buffers.withLock { String(decoding: stream == .output ? $0.output : $0.error, as: UTF8.self) }
    }

    /// Waits until a complete line on `stream` satisfies `predicate`, and returns it.
    ///
    /// - Throws: ``Timeout`` (with everything printed so far) when `timeout` passes first (30 s
    ///   unless given: a bound on a hang, not a speed target).
    @discardableResult
    func waitForLine(
        on stream: Stream, timeout: Duration = .seconds(30), where predicate: (String) -> Bool,
        describedAs what: String = "a matching line"
    ) throws -> String {
        let deadline = ContinuousClock.now + timeout
        while true {
            let lines = text(of: stream).split(separator: "\n", omittingEmptySubsequences: false).dropLast()
            if let line = lines.first(where: { predicate(String($0)) }) { return String(line) }
            let remaining = deadline - ContinuousClock.now
            if remaining <= .zero {
                throw Timeout(waitingFor: what, output: text(of: .output), error: text(of: .error))
            }
            let milliseconds = Int(
                remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000)
            _ = collected.arrived.wait(timeout: .now() + .milliseconds(max(1, milliseconds)))
        }
    }

    /// Waits for the process to exit and for its output to be read to the end.
    func waitForExit() -> CommandResult {
        process.waitUntilExit()
        let deadline = ContinuousClock.now + .seconds(10)
        while collected.buffers.withLock({ $0.openStreams > 0 }), ContinuousClock.now < deadline {
            _ = collected.arrived.wait(timeout: .now() + .milliseconds(100))
        }
        return CommandResult(
            status: process.terminationStatus, standardOutput: text(of: .output), standardError: text(of: .error))
    }

    /// Stops the process (SIGTERM) and waits for it.
    func terminate() {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }

    deinit {
        if process.isRunning { process.terminate() }
    }
}
