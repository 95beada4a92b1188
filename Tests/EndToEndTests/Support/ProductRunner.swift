import Foundation
import LiveDefaults
import TestSupport

/// Runs the package's built executables (they sit next to the test bundle) as separate processes.
enum ProductRunner {
    /// The directory holding the built products.
    static let productsDirectory: URL = {
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.isExecutableFile(atPath: url.appendingPathComponent("TestHelper").path) {
                return url
            }
        }
        return URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    }()

    struct Result {
        var status: Int32
        var standardOutput: String
        var standardError: String
    }

    /// Starts `product` without waiting for it.
    static func start(
        _ product: String, _ arguments: [String], environment: [String: String] = [:],
        standardInput: FileHandle? = nil
    ) throws -> (process: Process, output: Pipe, error: Pipe) {
        let process = Process()
        process.executableURL = productsDirectory.appendingPathComponent(product)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        if let standardInput { process.standardInput = standardInput }
        try process.run()
        return (process, output, error)
    }

    /// Runs `product` to completion and collects its output.
    static func run(
        _ product: String, _ arguments: [String], environment: [String: String] = [:], input: Data? = nil
    ) throws -> Result {
        let inputPipe = input.map { _ in Pipe() }
        let (process, output, error) = try start(
            product, arguments, environment: environment, standardInput: inputPipe?.fileHandleForReading)
        if let input, let inputPipe {
            inputPipe.fileHandleForWriting.write(input)
            try inputPipe.fileHandleForWriting.close()
        }
        // Read both pipes at once so a full pipe never blocks the child.
        let group = DispatchGroup()
        nonisolated(unsafe) var errorData = Data()
        DispatchQueue.global().async(group: group) { errorData = error.fileHandleForReading.readDataToEndOfFile() }
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus, standardOutput: String(decoding: outputData, as: UTF8.self),
            standardError: String(decoding: errorData, as: UTF8.self))
    }
}

/// A product started with a standard input pipe kept open, whose output is collected as it comes,
/// so a test can wait for a line, write more input, or send a signal.
// Safe as Sendable: `process` and the pipes are only started, signalled and closed (thread-safe
// operations), and the collected output is guarded by a lock.
final class RunningProduct: @unchecked Sendable {
    let process: Process
    private let input = Pipe()
    private let collected = Locked((output: "", error: ""))
    private let drained = DispatchGroup()

    /// Starts `product` with `arguments`; its environment is this process's plus `environment`.
    init(_ product: String, _ arguments: [String], environment: [String: String] = [:]) throws {
        let (process, output, error) = try ProductRunner.start(
            product, arguments, environment: environment, standardInput: input.fileHandleForReading)
        self.process = process
        for (pipe, isError) in [(output, false), (error, true)] {
            DispatchQueue.global().async(group: drained) { [collected] in
                while true {
                    let data = pipe.fileHandleForReading.availableData
                    if data.isEmpty { return }
                    let text = String(decoding: data, as: UTF8.self)
                    collected.withLock { if isError { $0.error += text } else { $0.output += text } }
                }
            }
        }
    }

    /// Everything written to standard output so far.
    var standardOutput: String { collected.withLock { $0.output } }
    /// Everything written to standard error so far.
    var standardError: String { collected.withLock { $0.error } }

    /// Writes `text` to the product's standard input.
    func write(_ text: String) {
        input.fileHandleForWriting.write(Data(text.utf8))
    }

    /// Closes the product's standard input (it reads end of file).
    func closeInput() throws {
        try input.fileHandleForWriting.close()
    }

    /// Waits until the standard output so far satisfies `condition`, for at most `seconds`.
    func waitForOutput(within seconds: Double = 10, _ condition: (String) -> Bool) async -> Bool {
        await eventually(within: seconds) { condition(standardOutput) }
    }

    /// Sends `signal` to the product.
    func send(_ signal: Int32) {
        kill(process.processIdentifier, signal)
    }

    /// Waits for the product to exit, for at most `seconds`; its status, or nil (then it is killed).
    func waitForExit(within seconds: Double = 10) async -> Int32? {
        guard await eventually(within: seconds, { !process.isRunning }) else {
            send(SIGKILL)
            return nil
        }
        process.waitUntilExit()
        drained.wait()
        return process.terminationStatus
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}
