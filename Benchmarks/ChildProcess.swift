import Foundation
import LiveDefaults
import LiveDefaultsEtcdClient
import LiveDefaultsPropertyList
import Synchronization

/// The other process of two measurements: it replaces a suite file from outside, or opens a suite
/// cold (both libraries cache suites in-process, so a cold load needs a fresh process).
enum ChildProcess {
    static func run(_ arguments: [String]) -> Never {
        switch arguments.first {
        case "replace" where arguments.count == 5:
            replace(
                directory: URL(fileURLWithPath: arguments[1]), suite: arguments[2], count: Int(arguments[3]) ?? 0,
                spacing: UInt32(arguments[4]) ?? 0)
        case "memory" where arguments.count == 4:
            residentGrowthHere(
                library: arguments[1], suite: arguments[2], directory: URL(fileURLWithPath: arguments[3]))
        case "repeat" where arguments.count == 4 && arguments[1].hasPrefix("json"):
            readWatchLine(arguments[1], line: Int(arguments[2]) ?? 0, times: Int(arguments[3]) ?? 0)
        case "repeat" where arguments.count == 4:
            repeatWork(arguments[1], size: Int(arguments[2]) ?? 0, times: Int(arguments[3]) ?? 0)
        case "etcd-cold" where arguments.count == 4:
            etcdColdStart(side: arguments[1], port: Int(arguments[2]) ?? 0, suite: arguments[3])
        case "etcd-watch" where arguments.count == 4:
            etcdWatch(side: arguments[1], port: Int(arguments[2]) ?? 0, target: arguments[3])
        case "etcd-scale" where arguments.count == 5:
            etcdScale(
                endpoints: arguments[1], suites: Int(arguments[2]) ?? 1, base: arguments[3],
                needed: Int(arguments[4]) ?? 1)
        case "cold-load" where arguments.count == 4:
            coldLoadHere(library: arguments[1], suite: arguments[2], directory: URL(fileURLWithPath: arguments[3]))
        default:
            FileHandle.standardError.write(Data("livedefaults-bench: bad child arguments \(arguments)\n".utf8))
            exit(2)
        }
    }

    /// Replaces the suite file atomically `count` times, as an outside tool would (write a temporary
    /// file, rename it over the suite), stamping each version with the monotonic time of the
    /// replace; waits for a line on standard input (the observer saw it), then `spacing`
    /// milliseconds, before the next.
    static func replace(directory: URL, suite: String, count: Int, spacing: UInt32) -> Never {
        let path = directory.appendingPathComponent(suite + ".plist").path
        let temporary = directory.appendingPathComponent(".\(suite).outside").path
        for index in 0..<count {
            let stamp = monotonicNanoseconds()
            let values: [String: Any] = [
                "stamp": Int(stamp), "index": index, "padding": String(repeating: "p", count: 200),
            ]
            guard let data = try? PropertyListSerialization.data(fromPropertyList: values, format: .binary, options: 0),
                FileManager.default.createFile(atPath: temporary, contents: data), rename(temporary, path) == 0
            else { exit(1) }
            guard readLine() != nil else { exit(0) }
            if spacing > 0 { usleep(spacing * 1000) }  // pacing the changes, not synchronisation
        }
        exit(0)
    }

    /// Repeats one piece of work `times` times with nothing else around it, for instruction counts:
    /// `valgrind --tool=callgrind livedefaults-bench --child repeat decode-xml 1000 20`, minus the
    /// same with 0, divided by 20, is one decode's instructions (what: floor, decode-binary,
    /// decode-xml, encode-binary, encode-xml, flush: one changed key and `synchronize()`, cold: opening
    /// a suite file not opened before, in XML, and reading one key, cold-watch: the same, watching the file;
    /// read: one `bool(forKey:)` of a key the suite holds; set: one `set` of an integer; set-observed: the same with one observer of the key; set-floor:
    /// the `set` floor's (`SetFloor`); flush-cold: the flush after writing to every cache line of
    /// 64 MiB, so that it finds its code and data out of the caches).
    ///
    /// With flush-cold, `valgrind --tool=callgrind --cache-sim=yes --LL=2097152,16,64
    /// --collect-atstart=no --toggle-collect='*coldFlush*'` counts the cache lines a flush touches
    /// when it starts cold (its last-level misses), which is what it costs after other work.
    static func repeatWork(_ what: String, size: Int, times: Int) -> Never {
        let dictionary = Workspace.sampleDictionary(keys: size)
        let value = PropertyListValue.dictionary(dictionary)
        let floor = DecodeFloor(dictionary)
        let binary = must("encoding the binary sample") { try PropertyListCodec.encode(value, format: .binary) }
        let xml = must("encoding the XML sample") { try PropertyListCodec.encode(value, format: .xml) }
        // `$LIVEDEFAULTS_REPEAT_DIRECTORY` names the directory instead, so that a measurement can put
        // something beside the suite first (a directory at the history log's path: the flush without
        // its history record, docs/performance.md, "History").
        let directory =
            ProcessInfo.processInfo.environment["LIVEDEFAULTS_REPEAT_DIRECTORY"].map { URL(fileURLWithPath: $0) }
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("livedefaults-repeat-\(getpid())")
        if what == "cold" || what == "cold-watch" {
            must("creating \(directory.path)") {
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            }
            for index in 0..<times {
                let file = directory.appendingPathComponent("bench.cold.\(index).plist")
                must("writing \(file.path)") { try xml.write(to: file) }
            }
        }
        // The suite `set` and `flush` work on, filled and written once before the repetitions.
        var defaults: Defaults? = nil
        if what == "flush" || what == "read" || what == "set" || what == "set-observed" || what == "flush-cold" {
            let suite = must("opening suite bench.repeat") {
                try Defaults(suiteName: "bench.repeat", directory: directory, watchesFiles: false)
            }
            for (key, value) in dictionary { suite.set(value, forKey: key) }
            must("the first synchronize()") { try suite.synchronize() }
            if what == "flush-cold" {
                // key-0 holds a string: its first change to an integer re-encodes the file, once.
                suite.set(255, forKey: "key-0")
                must("the second synchronize()") { try suite.synchronize() }
            }
            defaults = suite
        }
        // As the write rows' observer: a count, nothing else.
        let observed = Atomic<Int>(0)
        let observation =
            what == "set-observed" ? defaults?.observe("counter") { _ in observed.add(1, ordering: .relaxed) } : nil
        var setFloor: SetFloor? = nil
        if what == "set-floor" {
            must("creating \(directory.path)") {
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            }
            // The floor's dictionary holds the keys the `set` child's suite holds.
            setFloor = SetFloor(suitePath: directory.appendingPathComponent("floor.plist").path, values: dictionary)
        }
        for index in 0..<times {
            switch (what, defaults) {
            case ("floor", _): blackHole(floor.build())
            case ("decode-binary", _): blackHole(try? PropertyListCodec.decode(binary))
            case ("decode-xml", _): blackHole(try? PropertyListCodec.decode(xml))
            case ("encode-binary", _): blackHole(try? PropertyListCodec.encode(value, format: .binary))
            case ("encode-xml", _): blackHole(try? PropertyListCodec.encode(value, format: .xml))
            case ("cold", _), ("cold-watch", _):
                let suite = try? Defaults(
                    suiteName: "bench.cold.\(index)", directory: directory, watchesFiles: what == "cold-watch")
                blackHole(suite?.string(forKey: "key-0"))
            case ("read", let defaults?):
                blackHole(defaults.bool(forKey: "key-1"))
            case ("set", let defaults?), ("set-observed", let defaults?):
                defaults.set(index, forKey: "counter")
            case ("set-floor", _):
                setFloor?.set(.integer(Int64(index)), forKey: "counter")
            case ("flush-cold", let defaults?):
                evictCaches()
                coldFlush(defaults, index)
            case ("flush", let defaults?):
                defaults.set(index, forKey: "key-0")
                must("synchronize()") { try defaults.synchronize() }
            default: exit(2)
            }
        }
        observation?.cancel()
        if defaults != nil || setFloor != nil || what.hasPrefix("cold") {
            try? FileManager.default.removeItem(at: directory)
        }
        exit(0)
    }

    /// Reads one of the `etcd-json` rows' watch lines (`line`: 0 one change, 1 ten changes, 2 a
    /// progress notification) `times` times, by the client's reader (`json`) or by json-c with the
    /// same mapping (`json-c`), for instruction counts as `repeatWork`'s: `valgrind
    /// --tool=callgrind livedefaults-bench --child repeat json 1 2000`, minus the same with 0 times.
    static func readWatchLine(_ reader: String, line: Int, times: Int) -> Never {
        guard EtcdBenchmark.watchLines.indices.contains(line) else { exit(2) }
        let data = Data(EtcdBenchmark.watchLines[line].1.utf8)
        switch reader {
        case "json":
            for _ in 0..<times { blackHole(try? EtcdWatchLineReader.read(data)) }
        case "json-c":
            guard let jsonC = JSONC.load() else { exit(3) }
            for _ in 0..<times { blackHole(jsonC.read(data)) }
        default: exit(2)
        }
        exit(0)
    }

    /// Memory written line by line between cold flushes, larger than this machine's caches.
    nonisolated(unsafe) private static var evictionBuffer = [UInt8](repeating: 0, count: 64 << 20)

    @inline(never)
    private static func evictCaches() {
        evictionBuffer.withUnsafeMutableBufferPointer { bytes in
            for line in stride(from: 0, to: bytes.count, by: 64) { bytes[line] &+= 1 }
        }
    }

    /// One flush, on its own so that callgrind can count it alone (`--toggle-collect`).
    @inline(never)
    private static func coldFlush(_ defaults: Defaults, _ index: Int) {
        defaults.set(index, forKey: "key-0")
        must("synchronize()") { try defaults.synchronize() }
    }

    /// Times opening `suite` and reading one key, in this fresh process; prints nanoseconds.
    static func coldLoadHere(library: String, suite: String, directory: URL) -> Never {
        let start = monotonicNanoseconds()
        if library == "foundation" {
            let defaults = UserDefaults(suiteName: suite)
            blackHole(defaults?.string(forKey: "key-0"))
        } else {
            let defaults = try? Defaults(suiteName: suite, directory: directory, watchesFiles: false)
            blackHole(defaults?.string(forKey: "key-0"))
        }
        print(monotonicNanoseconds() - start)
        exit(0)
    }

    /// Prints how many bytes of resident memory opening `suite` (and reading one key) added.
    static func residentGrowthHere(library: String, suite: String, directory: URL) -> Never {
        // Warm up the library code itself on another, tiny suite first.
        let warm = directory.appendingPathComponent("bench.memory.warm.plist")
        _ = FileManager.default.createFile(atPath: warm.path, contents: Data("<plist><dict/></plist>".utf8))
        if library == "foundation" {
            blackHole(UserDefaults(suiteName: "bench.memory.warm")?.string(forKey: "x"))
        } else {
            blackHole(try? Defaults(suiteName: "bench.memory.warm", directory: directory, watchesFiles: false))
        }
        let before = residentBytes()
        if library == "foundation" {
            let defaults = UserDefaults(suiteName: suite)
            blackHole(defaults?.string(forKey: "key-0"))
            print(residentBytes() - before)
            blackHole(defaults)
        } else {
            let defaults = try? Defaults(suiteName: suite, directory: directory, watchesFiles: false)
            blackHole(defaults?.string(forKey: "key-0"))
            print(residentBytes() - before)
            blackHole(defaults)
        }
        exit(0)
    }

    /// The resident-memory growth measured in a fresh process, in bytes.
    static func residentGrowth(_ library: String, _ suite: String, _ directory: URL) -> Double? {
        run(["--child", "memory", library, suite, directory.path])
    }

    /// Runs a cold load in a fresh process and returns its nanoseconds.
    static func coldLoad(_ library: String, _ suite: String, _ directory: URL) -> Double? {
        run(["--child", "cold-load", library, suite, directory.path])
    }

    /// Runs this executable with `arguments` (and `environment` added to this process's) and reads
    /// the number it prints.
    static func run(_ arguments: [String], environment: [String: String] = [:]) -> Double? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        let output = Pipe()
        process.standardOutput = output
        guard (try? process.run()) != nil else { return nil }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Double(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// Times, in this fresh process, opening the remote suite `suite` and reading one key
    /// (`livedefaults`), or ranging its prefix over a raw socket and decoding every value (`raw`);
    /// prints nanoseconds.
    static func etcdColdStart(side: String, port: Int, suite: String) -> Never {
        let start = monotonicNanoseconds()
        if side == "raw" {
            let prefix = BenchFleet.prefix(suite)
            guard let connection = try? RawEtcdConnection(port: port),
                let answer = try? connection.post(
                    "/v3/kv/range",
                    ["key": RawEtcd.base64(prefix), "range_end": RawEtcd.base64(RawEtcd.prefixEnd(prefix))]),
                let kvs = answer["kvs"] as? [[String: Any]]
            else { exit(1) }
            var values: [String: PropertyListValue] = [:]
            for kv in kvs {
                guard let key = (kv["key"] as? String).flatMap({ Data(base64Encoded: $0) }),
                    let value = (kv["value"] as? String).flatMap({ Data(base64Encoded: $0) })
                else { exit(1) }
                values[String(decoding: key.dropFirst(prefix.utf8.count), as: UTF8.self)] =
                    try? PropertyListCodec.decode(value).value
            }
            guard values["key-0"] != nil else { exit(1) }
        } else {
            guard let scratch = ProcessInfo.processInfo.environment["XDG_CACHE_HOME"],
                let fleet = try? BenchFleet(
                    endpoint: "http://127.0.0.1:\(port)", suite: suite, cache: URL(fileURLWithPath: scratch)),
                fleet.waitUntilLive(), fleet.defaults.string(forKey: "key-0") != nil
            else { exit(1) }
        }
        print(monotonicNanoseconds() - start)
        exit(0)
    }

    /// Watches the remote suite `target` (`livedefaults`) or the prefix `target` (`raw`), prints
    /// `ready` once watching, then `<value> <monotonic ns> <CPU ns>` for each integer `stamp` it
    /// sees (the CPU time this process has used so far); exits when standard input ends.
    static func etcdWatch(side: String, port: Int, target: String) -> Never {
        @Sendable func report(_ value: Int64, _ time: UInt64) {
            var cpu = timespec()
            clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu)
            let used = UInt64(cpu.tv_sec) * 1_000_000_000 + UInt64(cpu.tv_nsec)
            FileHandle.standardOutput.write(Data("\(value) \(time) \(used)\n".utf8))
        }
        var keep: [AnyObject] = []
        if side == "raw" {
            guard
                let watch = try? RawEtcd.Watch(
                    port: port, prefix: target,
                    onEvents: { values, now in
                        for data in values {
                            if case .integer(let value)? = try? PropertyListCodec.decode(data).value {
                                report(value, now)
                            }
                        }
                    })
            else { exit(1) }
            keep.append(watch)
        } else {
            guard let scratch = ProcessInfo.processInfo.environment["XDG_CACHE_HOME"],
                let fleet = try? BenchFleet(
                    endpoint: "http://127.0.0.1:\(port)", suite: target, cache: URL(fileURLWithPath: scratch))
            else { exit(1) }
            let token = fleet.defaults.observe("stamp") { change in
                let now = monotonicNanoseconds()
                if case .integer(let value)? = change.newValue { report(value, now) }
            }
            guard fleet.waitUntilLive() else { exit(1) }
            keep.append(fleet.defaults)
            keep.append(fleet.connection)
            keep.append(token as AnyObject)
        }
        FileHandle.standardOutput.write(Data("ready\n".utf8))
        while readLine() != nil {}
        withExtendedLifetime(keep) {}
        exit(0)
    }

    /// `suites` fleet suites in this one process (`<base>.0`, `<base>.1`, …, each observed on
    /// "stamp"), for the scale rows (EtcdBenchmark+Scale.swift): once all are live, a line
    /// `stats <threads before> <threads> <sockets before> <sockets> <resident kB>`, then `ready`;
    /// then a line `<value> <time> <CPU used>` for each value once `needed` suites saw it (the time
    /// of the last of them).
    static func etcdScale(endpoints: String, suites: Int, base: String, needed: Int) -> Never {
        let (threadsBefore, socketsBefore) = (ProcessCensus.threads(), ProcessCensus.sockets())
        guard let scratch = ProcessInfo.processInfo.environment["XDG_CACHE_HOME"] else { exit(1) }
        let seen = SharedMutex<[Int64: (count: Int, last: UInt64)]>([:])
        var keep: [AnyObject] = []
        var fleets: [BenchFleet] = []
        for index in 0..<suites {
            guard
                let fleet = try? BenchFleet(
                    endpoints: endpoints.split(separator: ",").map(String.init), suite: "\(base).\(index)",
                    cache: URL(fileURLWithPath: scratch).appendingPathComponent("s\(index)"))
            else { exit(1) }
            let token = fleet.defaults.observe("stamp") { change in
                let now = monotonicNanoseconds()
                guard case .integer(let value)? = change.newValue else { return }
                let complete = seen.mutex.withLock { seen -> Bool in
                    var entry = seen[value] ?? (0, 0)
                    entry.count += 1
                    entry.last = max(entry.last, now)
                    seen[value] = entry
                    return entry.count == needed
                }
                guard complete else { return }
                let last = seen.mutex.withLock { $0[value]?.last ?? now }
                var cpu = timespec()
                clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu)
                let used = UInt64(cpu.tv_sec) * 1_000_000_000 + UInt64(cpu.tv_nsec)
                FileHandle.standardOutput.write(Data("\(value) \(last) \(used)\n".utf8))
            }
            keep.append(token as AnyObject)
            fleets.append(fleet)
        }
        for (index, fleet) in fleets.enumerated() where !fleet.waitUntilLive(within: 60) {
            FileHandle.standardError.write(
                Data("etcd-scale: suite \(index) of \(suites) is \(fleet.connection.state) after 60 s\n".utf8))
            exit(1)
        }
        usleep(500_000)  // the watches open a moment before counting, not synchronisation
        FileHandle.standardOutput.write(
            Data(
                ("stats \(threadsBefore) \(ProcessCensus.threads()) \(socketsBefore) \(ProcessCensus.sockets()) "
                    + "\(ProcessCensus.residentKilobytes())\nready\n").utf8))
        while readLine() != nil {}
        withExtendedLifetime((keep, fleets)) {}
        exit(0)
    }
}

/// What this process holds, from /proc: threads, sockets, resident memory.
enum ProcessCensus {
    /// The process's threads (/proc/self/task).
    static func threads() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? 0
    }

    /// The process's open sockets (descriptors in /proc/self/fd that are sockets).
    static func sockets() -> Int {
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return descriptors.filter { descriptor in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + descriptor))?
                .hasPrefix("socket:") == true
        }.count
    }

    /// VmRSS from /proc/self/status, in kB.
    static func residentKilobytes() -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    /// The CPU time process `pid` used so far (user + system, /proc/<pid>/stat), in nanoseconds.
    static func cpuNanoseconds(of pid: Int32) -> UInt64? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the command: state is field 3; utime and stime are fields 14 and 15.
        guard fields.count > 13, let user = UInt64(fields[11]), let system = UInt64(fields[12]) else { return nil }
        let ticks = UInt64(sysconf(Int32(_SC_CLK_TCK)))
        return (user + system) * 1_000_000_000 / ticks
    }
}
