import Foundation

/// The `defaults` command as scripts use it, one whole process per command, against dconf's own command
/// line (`dconf read`, `dconf write`, Debian's dconf-cli) in the benchmark's private session bus
/// (`DconfPeer`): the target is that the command's read and write of a small suite take no longer than
/// dconf's (docs/performance.md, "The `defaults` command").
///
/// The four commands run in turn, the order rotating each round, so that both sides meet the same machine
/// (paired); each time is from the spawn to the end of the wait, and the rows give the median, the notes
/// the range. The binary measured is `--command PATH`, else the packaged build of scripts/package-deb.sh
/// (`.build/release-static/release/defaults`), else the `defaults` built beside the benchmark.
extension BenchmarkRunner {
    func measureCommand(into report: inout Report) {
        guard let command = Self.commandBinary(options) else {
            report.notes.append(
                "command: rows skipped: no defaults binary (scripts/package-deb.sh builds the packaged one, "
                    + "or give --command PATH).")
            return
        }
        guard let dconf else {
            report.notes.append("command: rows skipped: dconf is not measured in this run.")
            return
        }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/dconf") else {
            report.notes.append(
                "command: rows skipped: /usr/bin/dconf is missing (dconf-cli; scripts/setup.sh --bench).")
            return
        }
        guard let bus = dconf.busAddress(), !bus.isEmpty else {
            report.notes.append("command: rows skipped: the dconf session gave no bus address.")
            return
        }
        // Both sides get the session's scratch environment: the suite is a file in its XDG_CONFIG_HOME,
        // dconf's database is under it too, and dconf reaches dconf-service on the private bus.
        var environment = dconf.environment
        environment["DBUS_SESSION_BUS_ADDRESS"] = bus
        environment["PATH"] = "/usr/bin:/bin"
        let path = command.path
        // A small suite: ten keys, as a settings file of one application.
        for index in 0..<10 {
            let ours = [path, "write", "com.example.t", "key\(index)", "value \(index)"]
            let theirs = ["/usr/bin/dconf", "write", "/com/example/t/key\(index)", "'value \(index)'"]
            _ = Self.spawnAndWait(ours, environment)
            _ = Self.spawnAndWait(theirs, environment)
        }
        var commands: [(String, [String])] = [
            ("defaults read", [path, "read", "com.example.t", "theme"]),
            ("dconf read", ["/usr/bin/dconf", "read", "/com/example/t/theme"]),
            ("defaults write", [path, "write", "com.example.t", "theme", "light"]),
            ("dconf write", ["/usr/bin/dconf", "write", "/com/example/t/theme", "'light'"]),
        ]
        // Both sides make the write durable before they return: `defaults write` fsyncs the temporary file and,
        // after the rename, the directory (the store's guarantee), and dconf-service does the same before it
        // answers `dconf write` (`strace -f` of the session: fsync, rename, fsync of the directory). With
        // eatmydata's library (fsync does nothing) the write is measured again, for what the two fsyncs cost.
        let eatMyData = "/usr/lib/x86_64-linux-gnu/libeatmydata.so"
        let withoutFsync = FileManager.default.fileExists(atPath: eatMyData)
        if withoutFsync {
            commands.append(("defaults write-nofsync", ["/usr/bin/env", "LD_PRELOAD=\(eatMyData)"] + commands[2].1))
        }
        for (name, arguments) in commands where name.contains("write") {
            guard Self.spawnAndWait(arguments, environment).status == 0 else {
                report.notes.append("command: rows skipped: \(arguments.joined(separator: " ")) failed.")
                return
            }
        }
        let rounds = options.quick ? 5 : 30
        var samples = [String: [Double]]()
        // The CPU time of each command's own process (user and system, from wait4): unlike the wall time, it
        // hardly moves with the machine's load. dconf's figure leaves out dconf-service and the bus.
        var cpu = [String: [Double]]()
        for round in 0..<rounds {
            for offset in 0..<commands.count {
                let (name, arguments) = commands[(round + offset) % commands.count]
                let start = monotonicNanoseconds()
                let (status, cpuNanoseconds) = Self.spawnAndWait(arguments, environment)
                let elapsed = Double(monotonicNanoseconds() - start)
                guard status == 0 else {
                    report.notes.append("command: rows skipped: \(name) exited with \(status).")
                    return
                }
                samples[name, default: []].append(elapsed)
                cpu[name, default: []].append(cpuNanoseconds)
            }
        }
        let label = command.label
        for operation in ["read", "write"] {
            let ours = samples["defaults \(operation)"] ?? []
            let theirs = samples["dconf \(operation)"] ?? []
            let oursMedian = percentile(ours, 0.5)
            report.add(
                "command", "defaults \(operation) one key, whole process (\(label))", oursMedian, unit: "ns",
                dconf: percentile(theirs, 0.5), dconfTarget: "≤ dconf", dconfMet: { oursMedian <= $0 })
            report.notes.append(
                "command: \(operation), \(rounds) paired runs each: defaults "
                    + Self.range(ours) + "; dconf " + Self.range(theirs) + " (\(path)).")
            report.notes.append(
                "command: \(operation), CPU time of the process: defaults "
                    + Self.range(cpu["defaults \(operation)"] ?? []) + "; dconf's client "
                    + Self.range(cpu["dconf \(operation)"] ?? []) + ".")
        }
        if withoutFsync, let ours = samples["defaults write-nofsync"] {
            // For information: what the two fsyncs cost (dconf's write keeps its own, so no target).
            report.add(
                "command", "defaults write one key without fsync (eatmydata), whole process", percentile(ours, 0.5),
                unit: "ns")
            report.notes.append(
                "command: write without fsync (eatmydata; both sides' writes fsync the file and the directory): "
                    + Self.range(ours) + ".")
        } else {
            report.notes.append("command: the write without fsync was not measured (eatmydata is not installed).")
        }
    }

    private static func range(_ samples: [Double]) -> String {
        let sorted = samples.sorted()
        return String(
            format: "median %.2f ms (%.2f–%.2f)", percentile(samples, 0.5) / 1e6, (sorted.first ?? 0) / 1e6,
            (sorted.last ?? 0) / 1e6)
    }

    /// The binary to measure and how the rows name it.
    private static func commandBinary(_ options: BenchmarkOptions) -> (path: String, label: String)? {
        if let given = options.commandBinary { return (given, "given") }
        let packaged = FileManager.default.currentDirectoryPath + "/.build/release-static/release/defaults"
        if FileManager.default.isExecutableFile(atPath: packaged) { return (packaged, "packaged build") }
        let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("defaults").path
        if FileManager.default.isExecutableFile(atPath: beside) { return (beside, "development build") }
        return nil
    }

    /// Starts a program with this environment, its output discarded, and returns its exit status and the CPU
    /// time (user and system) it used.
    static func spawnAndWait(_ arguments: [String], _ environment: [String: String]) -> (
        status: Int32, cpuNanoseconds: Double
    ) {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        guard posix_spawn(&pid, arguments[0], &actions, nil, argv, envp) == 0 else { return (127, 0) }
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) == -1 && errno == EINTR {}
        func nanoseconds(_ time: timeval) -> Double { Double(time.tv_sec) * 1e9 + Double(time.tv_usec) * 1e3 }
        let cpu = nanoseconds(usage.ru_utime) + nanoseconds(usage.ru_stime)
        return ((status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f), cpu)
    }
}
