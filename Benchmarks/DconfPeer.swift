import Foundation

/// dconf — the settings system of the Linux desktop (GSettings, `gsettings`, `dconf watch`) — as a
/// second peer, measured in the same run as LiveDefaults and Foundation.
///
/// dconf is measured through its own C client library by a small C program, `DconfPeer/dconf-peer.c`,
/// which this benchmark compiles with the system C compiler when `pkg-config dconf` finds
/// libdconf-dev, and starts inside a private `dbus-run-session`. Why a helper program and not a
/// system-library target: SwiftPM builds every target on `swift build` and `swift test`, so a
/// target that links libdconf would make libdconf-dev a build requirement of the whole package;
/// and a C program measures dconf as a C or GLib program uses it, without Swift call overhead.
///
/// The session gets a scratch `HOME`, `XDG_RUNTIME_DIR`, `XDG_CONFIG_HOME` and `DCONF_PROFILE`
/// under the run's workspace, so neither the user's session bus nor their dconf database is
/// touched. The helper stops the `dconf-service` that D-Bus activated by its PID when told to quit,
/// and `dbus-run-session` stops its own bus when the helper exits.
final class DconfPeer {
    private let session: Process
    private let commands: FileHandle
    private let answers: Int32
    /// The session's scratch environment (HOME, XDG_*, DCONF_PROFILE), without the bus address.
    let environment: [String: String]

    private init(session: Process, commands: FileHandle, answers: Int32, environment: [String: String]) {
        self.session = session
        self.commands = commands
        self.answers = answers
        self.environment = environment
    }

    /// The private session bus's address, for programs started outside the session (`dconf` itself).
    func busAddress() -> String? {
        guard (try? commands.write(contentsOf: Data("bus\n".utf8))) != nil else { return nil }
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while read(answers, &byte, 1) == 1, byte != 0x0A { line.append(byte) }
        return line.isEmpty ? nil : String(decoding: line, as: UTF8.self)
    }

    /// Sends one command and returns the numbers of its one-line answer (nil if the peer failed).
    func ask(_ command: String) -> [Double]? {
        do {
            try commands.write(contentsOf: Data((command + "\n").utf8))
        } catch {
            return nil
        }
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while read(answers, &byte, 1) == 1, byte != 0x0A { line.append(byte) }
        let numbers = String(decoding: line, as: UTF8.self).split(separator: " ").compactMap { Double($0) }
        return numbers.isEmpty ? nil : numbers
    }

    /// The first number of the answer to `command`.
    func number(_ command: String) -> Double? { ask(command)?.first }

    /// Ends the session: the helper stops dconf-service, dbus-run-session its bus.
    func stop() {
        try? commands.write(contentsOf: Data("quit\n".utf8))
        try? commands.close()
        let deadline = Date().addingTimeInterval(10)
        while session.isRunning && Date() < deadline { usleep(10_000) }
        if session.isRunning { kill(session.processIdentifier, SIGTERM) }
        session.waitUntilExit()
        close(answers)
    }

    /// Builds the helper and starts the session, or says why dconf cannot be measured here.
    static func start(in workspace: URL) -> Result<DconfPeer, Unavailable> {
        let install = "(scripts/setup.sh --bench installs it)"
        guard executable("pkg-config") != nil else {
            return .failure(Unavailable("pkg-config is not installed \(install)"))
        }
        guard run(["pkg-config", "--exists", "dconf"]).status == 0 else {
            return .failure(Unavailable("libdconf-dev (dconf's C library) is not installed \(install)"))
        }
        guard let dbusRunSession = executable("dbus-run-session") else {
            return .failure(Unavailable("dbus-run-session (package dbus-daemon) is not installed \(install)"))
        }
        guard FileManager.default.fileExists(atPath: "/usr/share/dbus-1/services/ca.desrt.dconf.service") else {
            return .failure(Unavailable("dconf-service is not installed \(install)"))
        }
        guard let compiler = ["cc", "gcc", "clang"].lazy.compactMap(executable).first else {
            return .failure(Unavailable("no C compiler (cc, gcc or clang) to build the dconf helper"))
        }
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("DconfPeer/dconf-peer.c")
        guard FileManager.default.fileExists(atPath: source.path) else {
            return .failure(Unavailable("the helper's source is not at \(source.path)"))
        }
        let directory = workspace.appendingPathComponent("dconf")
        let helper = directory.appendingPathComponent("dconf-peer")
        let flags = run(["pkg-config", "--cflags", "--libs", "dconf"]).output.split(whereSeparator: \.isWhitespace)
        var environment = ProcessInfo.processInfo.environment
        do {
            for name in ["home", "config", "cache", "data"] {
                try FileManager.default.createDirectory(
                    at: directory.appendingPathComponent(name), withIntermediateDirectories: true)
            }
            // The runtime directory must be private to its user (the XDG base directory rules).
            try FileManager.default.createDirectory(
                at: directory.appendingPathComponent("run"), withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
            // Only a user database: no system databases or locks from /etc/dconf take part.
            try Data("user-db:user\n".utf8).write(to: directory.appendingPathComponent("profile"))
        } catch {
            return .failure(Unavailable("cannot prepare its scratch directory: \(error)"))
        }
        let build = run([compiler, "-O2", "-o", helper.path, source.path] + flags.map(String.init))
        guard build.status == 0 else {
            return .failure(Unavailable("the helper did not compile: \(build.errors.suffix(500))"))
        }
        environment["DBUS_SESSION_BUS_ADDRESS"] = nil
        environment["HOME"] = directory.appendingPathComponent("home").path
        environment["XDG_RUNTIME_DIR"] = directory.appendingPathComponent("run").path
        environment["XDG_CONFIG_HOME"] = directory.appendingPathComponent("config").path
        environment["XDG_CACHE_HOME"] = directory.appendingPathComponent("cache").path
        environment["XDG_DATA_HOME"] = directory.appendingPathComponent("data").path
        environment["DCONF_PROFILE"] = directory.appendingPathComponent("profile").path

        let session = Process()
        session.executableURL = URL(fileURLWithPath: dbusRunSession)
        session.arguments = ["--", helper.path]
        session.environment = environment
        let toPeer = Pipe()
        let fromPeer = Pipe()
        session.standardInput = toPeer
        session.standardOutput = fromPeer
        // The bus daemon's own messages (activation, its file-descriptor limit) go to a log.
        let log = directory.appendingPathComponent("session.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        session.standardError = try? FileHandle(forWritingTo: log)
        // A peer that dies mid-run must make a write to it fail, not end the benchmark.
        signal(SIGPIPE, SIG_IGN)
        do {
            try session.run()
        } catch {
            return .failure(Unavailable("dbus-run-session did not start: \(error)"))
        }
        let answers = dup(fromPeer.fileHandleForReading.fileDescriptor)
        let peer = DconfPeer(
            session: session, commands: toPeer.fileHandleForWriting, answers: answers, environment: environment)
        // The first change activates dconf-service; it must answer before anything is measured.
        guard peer.ask("populate 10") != nil else {
            let reason = (try? String(contentsOf: log, encoding: .utf8))?.suffix(500) ?? ""
            peer.stop()
            return .failure(Unavailable("the dconf session did not answer: \(reason)"))
        }
        return .success(peer)
    }

    struct Unavailable: Error {
        let reason: String
        init(_ reason: String) { self.reason = reason }
    }

    /// The path of `name` on `PATH`.
    private static func executable(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/\(name)" }.first { access($0, X_OK) == 0 }
    }

    /// Runs a tool found on `PATH` and returns its status, standard output and standard error.
    private static func run(_ arguments: [String]) -> (status: Int32, output: String, errors: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        guard (try? process.run()) != nil else { return (127, "", "") }
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        let errorData = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (
            process.terminationStatus, String(decoding: outputData, as: UTF8.self),
            String(decoding: errorData, as: UTF8.self)
        )
    }
}
