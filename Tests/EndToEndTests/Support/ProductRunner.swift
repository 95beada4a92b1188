import Foundation
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

    /// A runner of `product` with `environment` on top of this process's.
    static func runner(_ product: String, environment: [String: String] = [:]) -> CommandRunner {
        CommandRunner(executable: productsDirectory.appendingPathComponent(product), environment: environment)
    }

    /// Runs `product` to completion and collects its output.
    static func run(
        _ product: String, _ arguments: [String], environment: [String: String] = [:], input: Data? = nil
    ) throws -> CommandResult {
        try runner(product, environment: environment).run(arguments, standardInput: input)
    }

    /// Starts `product` without waiting for it; its output is collected as it arrives.
    static func start(
        _ product: String, _ arguments: [String], environment: [String: String] = [:], keepingInputOpen: Bool = false
    ) throws -> RunningCommand {
        try runner(product, environment: environment).start(arguments, keepingInputOpen: keepingInputOpen)
    }
}
