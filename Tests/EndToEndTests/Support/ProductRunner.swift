import Foundation

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
