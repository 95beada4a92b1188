import Foundation
import LiveDefaults

/// What to run: full sizes, or `--quick` for CI's smoke test; `--json` for machine-readable output.
struct BenchmarkOptions {
    var quick = false
    var json = false
    /// Leave dconf out even when it is installed (`--no-dconf`).
    var noDconf = false
    /// Run only these groups (`--only codec,read`); all when empty. `etcd` names every etcd group.
    var only: Set<String> = []
    /// The `defaults` binary the command rows measure (`--command PATH`; CommandBenchmark.swift).
    var commandBinary: String?

    init(_ arguments: [String]) {
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            switch argument {
            case "--only":
                only = Set((remaining.popFirst() ?? "").split(separator: ",").map(String.init))
            case "--quick": quick = true
            case "--json": json = true
            case "--no-dconf": noDconf = true
            case "--command": commandBinary = remaining.popFirst()
            case "--help", "-h":
                Swift.print(
                    "usage: livedefaults-bench [--quick] [--json] [--no-dconf] [--only group,…] [--command PATH]")
                Swift.print(
                    "groups: read, write, flush, cold, codec, external, fanout, memory, command, console, history,")
                Swift.print(
                    "        etcd (= etcd-latency, etcd-cold, etcd-fanout, etcd-resume, etcd-stall, etcd-scale, etcd-thousand,"
                )
                Swift.print("        etcd-json)")
                exit(0)
            default:
                FileHandle.standardError.write(Data("livedefaults-bench: unknown option \(argument)\n".utf8))
                exit(2)
            }
        }
    }

    /// Whether a group runs in this run.
    func runs(_ group: String) -> Bool {
        only.isEmpty || only.contains(group) || (group.hasPrefix("etcd-") && only.contains("etcd"))
    }

    /// Suite sizes measured for flush, cold load and the codec.
    var sizes: [Int] { quick ? [10, 100] : [10, 1_000, 10_000] }
    /// Repetitions for per-call measurements.
    var calls: Int { quick ? 2_000 : 200_000 }
    /// External changes measured for latency.
    var externalChanges: Int { quick ? 20 : 500 }
    /// Observers of other keys in the fan-out measurement.
    var manyObservers: Int { quick ? 1_000 : 100_000 }
}

/// The scratch directory of the run's suite files (the parent process removes it).
struct Workspace {
    let directory: URL

    /// A new, empty directory inside the workspace (a process's cache, an etcd member's data).
    func scratch() -> URL {
        let url = directory.appendingPathComponent("scratch-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Writes a suite of `count` keys with Foundation's codec (so both libraries start from the same file).
    func makeSuite(_ name: String, keys count: Int, format: PropertyListSerialization.PropertyListFormat = .xml) throws
    {
        var values: [String: Any] = [:]
        for index in 0..<count { values["key-\(index)"] = Self.sampleValue(index) }
        let data = try PropertyListSerialization.data(fromPropertyList: values, format: format, options: 0)
        try data.write(to: directory.appendingPathComponent(name + ".plist"))
    }

    /// A mix of the value types real suites hold.
    static func sampleValue(_ index: Int) -> Any {
        switch index % 5 {
        case 0: "value number \(index)"
        case 1: index
        case 2: index % 2 == 0
        case 3: Double(index) / 3
        default: ["item \(index)", index] as [Any]
        }
    }

    static func sampleDictionary(keys count: Int) -> [String: PropertyListValue] {
        var values: [String: PropertyListValue] = [:]
        for index in 0..<count { values["key-\(index)"] = try? PropertyListValue(foundationObject: sampleValue(index)) }
        return values
    }
}

/// Runs `body` on a new thread and waits for its result. Another library's work run this way
/// allocates from that thread's malloc arena (glibc gives threads arenas of their own), so what it
/// leaves there is not paid for by the next allocations of the measured thread.
func onThreadOfItsOwn<Result>(_ body: @escaping () -> Result) -> Result {
    // The calling thread waits while the new one runs `body`: the two never touch it at once.
    let handoff = ThreadHandoff<Result>(body)
    let thread = Thread { handoff.run() }
    thread.start()
    handoff.finished.wait()
    guard let result = handoff.result else { stop("a benchmark thread ended without a result") }
    return result
}

/// ``onThreadOfItsOwn(_:)``'s work and result, passed between two threads that take turns.
private final class ThreadHandoff<Result>: @unchecked Sendable {
    let body: () -> Result
    var result: Result?
    let finished = DispatchSemaphore(value: 0)

    init(_ body: @escaping () -> Result) { self.body = body }

    func run() {
        result = body()
        finished.signal()
    }
}

/// Monotonic nanoseconds, comparable across processes on this machine.
func monotonicNanoseconds() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

// MARK: Stopping clearly

/// Stops the benchmark with a message on standard error: a step it cannot go on without failed.
func stop(_ message: String) -> Never {
    FileHandle.standardError.write(Data("livedefaults-bench: \(message)\n".utf8))
    exit(1)
}

/// `value`, which the benchmark cannot go on without; stops, naming `what`, when it is nil.
func required<Value>(_ value: Value?, _ what: @autoclosure () -> String) -> Value {
    guard let value else { stop("\(what()) is missing") }
    return value
}

/// Runs a step the benchmark cannot go on without; stops, naming `what` and the error, when it throws.
func must<Value>(_ what: @autoclosure () -> String, _ body: () throws -> Value) -> Value {
    do {
        return try body()
    } catch {
        stop("\(what()) failed: \(error)")
    }
}

/// Keeps a value alive so the optimiser cannot drop the work that made it.
@inline(never)
func blackHole<T>(_ value: T) {
    withExtendedLifetime(value) {}
}

/// Nanoseconds per call of `body`, over `count` calls (after a warm-up), the best of three rounds.
func nanosecondsPerCall(_ count: Int, _ body: () -> Void) -> Double {
    for _ in 0..<min(count, 1_000) { body() }
    var best = Double.infinity
    for _ in 0..<3 {
        let start = monotonicNanoseconds()
        for _ in 0..<count { body() }
        best = min(best, Double(monotonicNanoseconds() - start) / Double(count))
    }
    return best
}

/// The median of `count` timed runs of `body`, in nanoseconds.
func medianNanoseconds(_ count: Int, _ body: () throws -> Void) rethrows -> Double {
    var samples: [Double] = []
    for _ in 0..<count {
        let start = monotonicNanoseconds()
        try body()
        samples.append(Double(monotonicNanoseconds() - start))
    }
    return samples.sorted()[samples.count / 2]
}

/// The medians of `first` and `second` measured in turn, one of each per round (the order flipped
/// every round), so that what the machine does meanwhile falls on both alike.
func alternatingMedianNanoseconds(_ count: Int, _ first: () throws -> Void, _ second: () throws -> Void) rethrows
    -> (first: Double, second: Double)
{
    var firstSamples: [Double] = []
    var secondSamples: [Double] = []
    for round in 0..<count {
        for isFirst in round.isMultiple(of: 2) ? [true, false] : [false, true] {
            let start = monotonicNanoseconds()
            if isFirst { try first() } else { try second() }
            let elapsed = Double(monotonicNanoseconds() - start)
            if isFirst { firstSamples.append(elapsed) } else { secondSamples.append(elapsed) }
        }
    }
    return (firstSamples.sorted()[firstSamples.count / 2], secondSamples.sorted()[secondSamples.count / 2])
}

/// The sample at `fraction` of the sorted samples.
func percentile(_ samples: [Double], _ fraction: Double) -> Double {
    let sorted = samples.sorted()
    return sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]
}

/// The resident set size of this process, in bytes.
func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    return (fields.count > 1 ? Int(fields[1]) ?? 0 : 0) * Int(sysconf(Int32(_SC_PAGESIZE)))
}

/// The floor of decoding a suite: building the same `[String: PropertyListValue]` from its parts
/// already in memory — making the key and value strings from their bytes, the values, hashing and
/// inserting into a dictionary reserved to size — and freeing it again. A reader cannot do less.
struct DecodeFloor {
    private enum Part {
        case string(Range<Int>)
        case integer(Int64)
        case real(Double)
        case bool(Bool)
        case array([Part])
    }

    /// Every string's UTF-8, back to back.
    private var bytes: [UInt8] = []
    private var entries: [(key: Range<Int>, value: Part)] = []

    init(_ values: [String: PropertyListValue]) {
        for (key, value) in values { entries.append((append(key), part(value))) }
    }

    private mutating func append(_ string: String) -> Range<Int> {
        let start = bytes.count
        bytes.append(contentsOf: string.utf8)
        return start..<bytes.count
    }

    private mutating func part(_ value: PropertyListValue) -> Part {
        switch value {
        case .string(let string): .string(append(string))
        case .integer(let integer): .integer(integer)
        case .real(let real): .real(real)
        case .bool(let bool): .bool(bool)
        case .array(let elements): .array(elements.map { part($0) })
        default: fatalError("the benchmark's suites hold no \(value.typeName)")
        }
    }

    /// Builds the dictionary (the caller drops it, which frees it).
    func build() -> [String: PropertyListValue] {
        bytes.withUnsafeBufferPointer { buffer in
            // The cheapest String from bytes known to be text: one copy into its storage.
            func string(_ range: Range<Int>) -> String {
                if range.isEmpty { return "" }
                return String(unsafeUninitializedCapacity: range.count) { target in
                    // Both are non-empty here (the range is), so both have an address.
                    guard let start = target.baseAddress, let source = buffer.baseAddress else {
                        preconditionFailure("a non-empty buffer without an address")
                    }
                    start.initialize(from: source + range.lowerBound, count: range.count)
                    return range.count
                }
            }
            func value(_ part: Part) -> PropertyListValue {
                switch part {
                case .string(let range): .string(string(range))
                case .integer(let integer): .integer(integer)
                case .real(let real): .real(real)
                case .bool(let bool): .bool(bool)
                case .array(let parts): .array(parts.map(value))
                }
            }
            var result: [String: PropertyListValue] = [:]
            result.reserveCapacity(entries.count)
            for (key, part) in entries { result[string(key)] = value(part) }
            return result
        }
    }
}
