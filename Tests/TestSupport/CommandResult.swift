import Testing

/// What a run of the `defaults` command printed and how it exited: in this process through its
/// seam, or as the built binary.
public struct CommandResult: Sendable, CustomStringConvertible {
    public var status: Int32
    public var standardOutput: String
    public var standardError: String

    public init(status: Int32, standardOutput: String, standardError: String) {
        self.status = status
        self.standardOutput = standardOutput
        self.standardError = standardError
    }

    public var description: String {
        "exit \(status)\n--- stdout ---\n\(standardOutput)--- stderr ---\n\(standardError)"
    }
}

extension CommandResult {
    /// Expects a run that succeeded: exit status 0 and nothing on standard error.
    public func expectSuccess(sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(status == 0, "\(self)", sourceLocation: sourceLocation)
        #expect(standardError.isEmpty, "\(self)", sourceLocation: sourceLocation)
    }
}
