import Foundation
import LiveDefaults
import TestSupport
import Testing

/// `sudo defaults write` on a service's settings (docs/design.md, "Owners of the files root
/// writes"): the file stays its user's, who can still read and write it afterwards. The service's
/// user is `nobody`, run through `setpriv`; giving a file away takes root: CI runs the tests as root.
@Suite struct RootWriteOwnerProcessTests {
    /// The `defaults` binary pointed at `directory`: as this process's user (root), or as `nobody`.
    private static func runner(_ directory: NobodysDirectory, asNobody: Bool) -> Runner {
        let defaults = ProductRunner.productsDirectory.appendingPathComponent("defaults")
        let environment = ["XDG_CONFIG_HOME": directory.path, "HOME": directory.path]
        guard asNobody else { return Runner(runner: CommandRunner(executable: defaults, environment: environment)) }
        return Runner(
            runner: CommandRunner(executable: URL(fileURLWithPath: "/usr/bin/setpriv"), environment: environment),
            prefix: ["--reuid=\(directory.user)", "--regid=\(directory.group)", "--clear-groups", defaults.path])
    }

    /// A command run directly, or through `setpriv` (`prefix`: its arguments and the program).
    private struct Runner {
        var runner: CommandRunner
        var prefix: [String] = []
        func run(_ arguments: [String]) throws -> CommandResult { try runner.run(prefix + arguments) }
    }

    /// The service, as `nobody`, reads the root's value and writes one of its own.
    private static func expectTheOwnerStillReadsAndWrites(_ directory: NobodysDirectory) throws {
        let nobody = runner(directory, asNobody: true)
        let read = try nobody.run(["read", "com.example.flagsvc", "maxConnections"])
        #expect(read.status == 0 && read.standardOutput == "40\n", "\(read)")
        let write = try nobody.run(["write", "com.example.flagsvc", "maxConnections", "-int", "41"])
        #expect(write.status == 0, "\(write)")
        let back = try runner(directory, asNobody: false).run(["read", "com.example.flagsvc", "maxConnections"])
        #expect(back.standardOutput == "41\n", "\(back)")
    }

    @Test(.enabled(if: geteuid() == 0, "giving a file to another user takes root (CI runs the tests as root)"))
    func aRootWriteByTheCommandKeepsTheServicesFileItsOwn() throws {
        let directory = try NobodysDirectory()
        let file = try directory.seed("com.example.flagsvc", ["maxConnections": 10], mode: 0o640)
        let root = try Self.runner(directory, asNobody: false).run(
            ["write", "com.example.flagsvc", "maxConnections", "-int", "40"])
        #expect(root.status == 0, "\(root)")
        #expect(directory.owns(file) && directory.owns(file + ".lock"))
        #expect(NobodysDirectory.owner(of: file)?.mode == 0o640)
        try Self.expectTheOwnerStillReadsAndWrites(directory)
    }

    @Test(.enabled(if: geteuid() == 0, "giving a file to another user takes root (CI runs the tests as root)"))
    func aRootWriteThroughDefaultsKeepsTheServicesFileItsOwn() throws {
        let directory = try NobodysDirectory()
        let file = try directory.seed("com.example.flagsvc", ["maxConnections": 10], mode: 0o600)
        do {
            let defaults = try Defaults(
                suiteName: "com.example.flagsvc", directory: URL(fileURLWithPath: directory.path),
                watchesFiles: false)
            defaults.set(40, forKey: "maxConnections")
            try defaults.synchronize()
        }
        #expect(directory.owns(file) && directory.owns(file + ".lock"))
        #expect(NobodysDirectory.owner(of: file)?.mode == 0o600)
        try Self.expectTheOwnerStillReadsAndWrites(directory)
    }
}
