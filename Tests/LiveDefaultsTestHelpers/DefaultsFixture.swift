import Foundation
import LiveDefaults
import TestSupport
import Testing

/// What runs the `defaults` command for a ``DefaultsFixture``: in this process through its seam
/// (LiveDefaultsCommandTests) or as the built binary (EndToEndTests).
public protocol DefaultsCommandRunning: Sendable {
    /// Runs the command with `arguments` to its end; `standardInput` is what it reads (nothing when nil).
    func run(_ arguments: [String], standardInput: Data?) throws -> CommandResult
}

/// One test's world for the `defaults` command: a temporary domain directory (the binary's
/// `XDG_CONFIG_HOME`) and a runner of the command against it.
public struct DefaultsFixture<Runner: DefaultsCommandRunning>: ~Copyable {
    /// The domains' directory, removed with the fixture.
    public let directory: TemporaryDirectory
    /// What runs the command against ``directory``.
    public let runner: Runner

    /// A fresh directory, and the runner `makeRunner` makes for it.
    public init(_ makeRunner: (borrowing TemporaryDirectory) throws -> Runner) throws {
        let directory = try TemporaryDirectory()
        runner = try makeRunner(directory)
        self.directory = directory
    }

    /// Runs the command, whatever its outcome.
    @discardableResult
    public func defaults(_ arguments: String..., input: Data? = nil) throws -> CommandResult {
        try runner.run(arguments, standardInput: input)
    }

    /// Runs and requires success with no error output; returns what it printed.
    @discardableResult
    public func succeed(
        _ arguments: String..., input: Data? = nil, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> String {
        let result = try runner.run(arguments, standardInput: input)
        #expect(result.status == 0, "\(arguments): \(result)", sourceLocation: sourceLocation)
        #expect(result.standardError.isEmpty, "\(arguments): \(result)", sourceLocation: sourceLocation)
        return result.standardOutput
    }

    /// The file of `domain`.
    public func file(_ domain: String) -> URL { directory.file(domain + ".plist") }

    /// The domain's file, decoded.
    public func values(_ domain: String) throws -> [String: PropertyListValue] {
        let data = try Data(contentsOf: file(domain))
        return try #require(try PropertyListCodec.decode(data).value.dictionaryValue)
    }

    /// Writes a domain file directly (binary, as the store writes new files).
    public func seed(_ domain: String, _ values: [String: PropertyListValue]) throws {
        try PropertyListCodec.encode(.dictionary(values), format: .binary).write(to: file(domain))
    }
}
