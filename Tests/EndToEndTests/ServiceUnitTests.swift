import Foundation
import TestSupport
import Testing

/// The systemd unit of the article "Running as a service" (docs/examples/flagsvc.service and its
/// user, flagsvc.sysusers.conf): the article shows the file that is checked, systemd's own tools
/// accept both, and the administrator's commands the article gives, run with the unit's
/// environment, reach a running store of the service's suite.
@Suite struct ServiceUnitTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let unit = repository.appendingPathComponent("docs/examples/flagsvc.service")
    static let sysusers = repository.appendingPathComponent("docs/examples/flagsvc.sysusers.conf")
    static let article = repository.appendingPathComponent(
        "Sources/LiveDefaults/LiveDefaults.docc/RunningAsAService.md")

    /// The unit's lines without its leading comment (the file's header, which the article replaces
    /// with its own prose).
    static func unitBody() throws -> String {
        let lines = try String(contentsOf: unit, encoding: .utf8).split(
            separator: "\n", omittingEmptySubsequences: false)
        return lines.drop { $0.hasPrefix("#") }.joined(separator: "\n")
    }

    /// `Environment=` assignments of the unit, in order.
    static func environment() throws -> [(name: String, value: String)] {
        try unitBody().split(separator: "\n").compactMap { line in
            guard line.hasPrefix("Environment=") else { return nil }
            let assignment = line.dropFirst("Environment=".count)
            guard let equals = assignment.firstIndex(of: "=") else { return nil }
            return (String(assignment[..<equals]), String(assignment[assignment.index(after: equals)...]))
        }
    }

    @Test func theArticleShowsTheCheckedUnit() throws {
        let text = try String(contentsOf: Self.article, encoding: .utf8)
        let shown = try #require(text.firstMatch(of: /```ini\n((?:.|\n)*?)```/)).output.1
        #expect(String(shown) == (try Self.unitBody()), "the article's unit differs from docs/examples/flagsvc.service")
        let users = try String(contentsOf: Self.sysusers, encoding: .utf8).split(separator: "\n").filter {
            !$0.hasPrefix("#")
        }
        #expect(!users.isEmpty)
        for line in users {
            #expect(text.contains("\n" + line + "\n"), "the article does not show the user's line \(line)")
        }
    }

    @Test func theUnitSetsTheDirectoriesTheLibraryReads() throws {
        let variables = Dictionary(try Self.environment().map { ($0.name, $0.value) }) { _, last in last }
        // Under the state and cache directories the unit asks systemd to make (and keep writable).
        #expect(variables["XDG_CONFIG_HOME"] == "/var/lib/flagsvc/config")
        #expect(variables["XDG_DATA_HOME"] == "/var/lib/flagsvc/data")
        #expect(variables["XDG_CACHE_HOME"] == "/var/cache/flagsvc")
        // The administrator's files stay where the library looks by default.
        #expect(variables["XDG_CONFIG_DIRS"] == nil)
        #expect(variables["LIVEDEFAULTS_MANAGED_DIR"] == nil)
        let body = try Self.unitBody()
        #expect(body.contains("\nStateDirectory=flagsvc\n"))
        #expect(body.contains("\nCacheDirectory=flagsvc\n"))
        #expect(body.contains("\nUser=flagsvc\n"))
    }

    /// `systemd-analyze verify` on the unit in a root of its own (systemd's units copied in, a stand-in
    /// for the service's executable, the user made by `systemd-sysusers` from the example): exit 0 and
    /// not a word printed — an unknown key or a bad value is only a warning to it.
    @Test(.requiresSystemdTools) func systemdAcceptsTheUnitAndItsUser() throws {
        let root = try TemporaryDirectory()
        let units = URL(fileURLWithPath: "/usr/lib/systemd/system").resolvingSymlinksInPath()
        let fileManager = FileManager.default
        for directory in ["usr/lib/systemd", "etc/systemd/system", "usr/bin"] {
            try fileManager.createDirectory(
                at: root.url.appendingPathComponent(directory), withIntermediateDirectories: true)
        }
        let copy = try run("/bin/cp", ["-a", units.path, root.path + "/usr/lib/systemd/system"])
        #expect(copy.status == 0, "\(copy)")
        let executable = root.path + "/usr/bin/flagsvc"
        try Data("#!/bin/sh\nexit 0\n".utf8).write(to: URL(fileURLWithPath: executable))
        #expect(chmod(executable, 0o755) == 0)
        try fileManager.copyItem(
            at: Self.unit, to: root.url.appendingPathComponent("etc/systemd/system/flagsvc.service"))

        let users = try run(Self.tool("systemd-sysusers"), ["--root=" + root.path, Self.sysusers.path])
        #expect(users.status == 0 && !users.standardError.contains("flagsvc.sysusers.conf"), "\(users)")
        let passwd = (try? String(contentsOfFile: root.path + "/etc/passwd", encoding: .utf8)) ?? ""
        #expect(passwd.contains("flagsvc:x:"), "systemd-sysusers made no flagsvc user: \(passwd)")
        #expect(passwd.contains(":/var/lib/flagsvc:"), "the user's home is not its state directory: \(passwd)")

        let verify = try run(
            Self.tool("systemd-analyze"), ["verify", "--root=" + root.path, "/etc/systemd/system/flagsvc.service"])
        #expect(verify.status == 0, "\(verify)")
        #expect(verify.standardError.isEmpty && verify.standardOutput.isEmpty, "\(verify)")
    }

    /// The article's administrator commands, with the unit's environment moved under a temporary
    /// root: `defaults write` of the service's suite (as the service's user runs it) and of a
    /// system-wide file reach a running `defaults watch` of the suite, which stands in for the
    /// service (the same library, opening the suite by name from the same environment).
    @Test func theAdministratorsWritesReachTheRunningService() throws {
        let root = try TemporaryDirectory()
        var environment: [String: String] = [:]
        for (name, value) in try Self.environment() { environment[name] = root.path + value }
        let system = root.path + "/etc/xdg"
        environment["XDG_CONFIG_DIRS"] = system
        environment["LIVEDEFAULTS_MANAGED_DIR"] = root.path + "/etc/livedefaults/managed"
        environment["XDG_DATA_DIRS"] = root.path + "/usr/share"
        environment["HOME"] = root.path + "/home-unused"
        try FileManager.default.createDirectory(atPath: system, withIntermediateDirectories: true)
        let suite = "com.example.flagsvc"

        let service = try ProductRunner.start("defaults", ["watch", suite, "maxConnections"], environment: environment)
        defer { service.terminate() }
        try service.waitForLine(on: .error, where: { $0.hasPrefix("Watching") }, describedAs: "the watch in place")
        let defaults = ProductRunner.runner("defaults", environment: environment)

        // A system-wide default first (the suite has no value yet), then the service's own suite.
        let systemWide = try defaults.run(["write", system + "/" + suite, "maxConnections", "-int", "50"])
        #expect(systemWide.status == 0, "\(systemWide)")
        try service.waitForLine(on: .output, where: { $0.hasPrefix("maxConnections:") && $0.contains("→ 50") })

        let write = try defaults.run(["write", suite, "maxConnections", "-int", "40"])
        #expect(write.status == 0, "\(write)")
        let file = try #require(environment["XDG_CONFIG_HOME"]) + "/\(suite).plist"
        #expect(FileManager.default.fileExists(atPath: file), "the service's suite is not at \(file)")
        try service.waitForLine(on: .output, where: { $0.hasPrefix("maxConnections:") && $0.contains("50 → 40") })
    }
}

/// Runs `executable` and collects its output.
private func run(_ executable: String, _ arguments: [String]) throws -> CommandResult {
    try CommandRunner(executable: URL(fileURLWithPath: executable)).run(arguments)
}

extension ServiceUnitTests {
    /// Where systemd's tool `name` is, if installed.
    static func tool(_ name: String) -> String {
        ["/usr/bin", "/bin", "/usr/sbin"].map { $0 + "/" + name }.first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
            ?? "/usr/bin/" + name
    }
}

extension Trait where Self == ConditionTrait {
    /// Runs where systemd's tools are installed (Debian's `systemd` package; no running systemd is
    /// needed) — or always in CI, which sets `LIVEDEFAULTS_REQUIRE_SYSTEMD=1`, so that a missing tool
    /// fails there instead of skipping.
    static var requiresSystemdTools: Self {
        .enabled(
            if: ["systemd-analyze", "systemd-sysusers"].allSatisfy {
                FileManager.default.isExecutableFile(atPath: ServiceUnitTests.tool($0))
            } || ProcessInfo.processInfo.environment["LIVEDEFAULTS_REQUIRE_SYSTEMD"] == "1",
            "systemd-analyze and systemd-sysusers are not installed (apt-get install systemd, or scripts/setup.sh)")
    }
}
