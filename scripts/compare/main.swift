// One program, built against two versions of LiveDefaults, measuring both the same way through the
// public API only (scripts/compare-versions.sh builds and runs it; docs/performance.md, "Checking a
// change against an earlier commit").
//
//   compare run DIR                 every measurement, one "name<TAB>value" line each
//   compare count DIR WHAT N        repeats one operation N times and nothing else (for callgrind):
//                                   WHAT is read, set, setobs (set with one observer) or flush
//   compare writer DIR SUITE N MS   the outside process of the "external" rows
import Foundation
import LiveDefaults
import Synchronization

func now() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("compare: \(message)\n".utf8))
    exit(2)
}

/// The new value of a change as an optional: `PropertyListValue?` in later versions and
/// `PropertyListValue` in earlier ones; this compiles against both.
func stamp(of value: PropertyListValue?) -> Int64? {
    if case .integer(let stamp)? = value { return stamp }
    return nil
}

let arguments = CommandLine.arguments
guard arguments.count >= 3 else { fail("usage: compare run|count|writer DIR …") }
let directory = URL(fileURLWithPath: arguments[2])
nonisolated(unsafe) var sink = 0

switch arguments[1] {
case "writer":
    // Replaces the suite file atomically, as an outside tool does (Foundation's atomic write),
    // stamped with the monotonic time before the write; the next after a line on standard input.
    guard arguments.count == 6, let count = Int(arguments[4]), let spacing = UInt32(arguments[5]) else {
        fail("usage: compare writer DIR SUITE N MS")
    }
    let suite = arguments[3]
    let path = directory.appendingPathComponent(suite + ".plist").path
    let temporary = directory.appendingPathComponent(".\(suite).outside").path
    for index in 0..<count {
        let values: [String: Any] = [
            "stamp": Int(now()), "index": index, "padding": String(repeating: "p", count: 200),
        ]
        guard let data = try? PropertyListSerialization.data(fromPropertyList: values, format: .binary, options: 0),
            FileManager.default.createFile(atPath: temporary, contents: data), rename(temporary, path) == 0
        else { fail("could not replace \(path)") }
        guard readLine() != nil else { exit(0) }
        if spacing > 0 { usleep(spacing * 1000) }  // pacing the changes, not synchronisation
    }
    exit(0)

case "count":
    guard arguments.count == 5, let count = Int(arguments[4]) else { fail("usage: compare count DIR WHAT N") }
    let what = arguments[3]
    // A flush's suite is written by Foundation first and flushed once (its first-time work), so
    // that no set-up flush of ours is counted: 1,000 `set`s and a `synchronize()` flushed once or
    // twice, as the delayed flush fell, and moved a count per flush by up to a quarter
    // (docs/performance.md, "Checking a change against an earlier commit").
    if what == "flush" {
        var values: [String: Any] = [:]
        for index in 0..<1000 { values["key.\(index)"] = "value \(index)" }
        let data = try PropertyListSerialization.data(fromPropertyList: values, format: .binary, options: 0)
        try data.write(to: directory.appendingPathComponent("compare.count.flush.plist"))
    }
    let defaults = try Defaults(suiteName: "compare.count.\(what)", directory: directory)
    if what == "flush" {
        defaults.set(-1, forKey: "key.0")
        try defaults.synchronize()
    }
    let token = what == "setobs" ? defaults.observe("k") { _ in } : nil
    for index in 0..<count {
        switch what {
        case "read":
            if defaults.bool(forKey: "flag") { sink &+= 1 }
        case "flush":
            defaults.set(index, forKey: "key.0")
            try defaults.synchronize()
        case "set", "setobs":
            defaults.set(index, forKey: "k")
        default:
            fail("unknown operation \(what)")
        }
    }
    token?.cancel()
    exit(0)

case "run":
    var results: [(String, Double)] = []

    // Reads of a boolean.
    do {
        let defaults = try Defaults(suiteName: "compare.read", directory: directory)
        defaults.set(true, forKey: "flag")
        let count = 5_000_000
        let start = now()
        for _ in 0..<count where defaults.bool(forKey: "flag") { sink &+= 1 }
        results.append(("read: bool (ns)", Double(now() - start) / Double(count)))
    }

    // `set` of an integer, with no observer and with one observer of the key.
    for observed in [false, true] {
        let defaults = try Defaults(suiteName: "compare.set.\(observed)", directory: directory)
        let seen = Mutex(0)
        let token = observed ? defaults.observe("k") { _ in seen.withLock { $0 += 1 } } : nil
        let count = 200_000
        let start = now()
        for index in 0..<count { defaults.set(index, forKey: "k") }
        let elapsed = now() - start
        try defaults.synchronize()
        token?.cancel()
        if observed && seen.withLock({ $0 }) != count { fail("the observer missed changes") }
        results.append((observed ? "set: one observer (ns)" : "set: no observer (ns)", Double(elapsed) / Double(count)))
    }

    // A durable flush of a 1,000-key suite with one key changed.
    do {
        let defaults = try Defaults(suiteName: "compare.flush", directory: directory)
        for index in 0..<1000 { defaults.set("value \(index)", forKey: "key.\(index)") }
        try defaults.synchronize()
        var samples: [UInt64] = []
        for index in 0..<200 {
            defaults.set(index, forKey: "key.0")
            let start = now()
            try defaults.synchronize()
            samples.append(now() - start)
        }
        samples.sort()
        results.append(("flush: 1000 keys, one changed, median (µs)", Double(samples[samples.count / 2]) / 1000))
    }

    // Another process replaces the file → the observer: 20 ms apart, and back to back.
    for spacing in [20, 0] {
        let name = "compare.external.\(spacing)"
        let count = spacing > 0 ? 400 : 1000
        let initial: [String: Any] = ["stamp": 0, "index": -1, "padding": ""]
        try PropertyListSerialization.data(fromPropertyList: initial, format: .binary, options: 0)
            .write(to: directory.appendingPathComponent(name + ".plist"))
        let defaults = try Defaults(suiteName: name, directory: directory)
        // The latencies, and whether the pipe to the child is still open: a callback still running
        // when the measurement ends must not write to the closed pipe (Foundation's FileHandle
        // stops the process on that), so the two go under one lock.
        let state = Mutex<(latencies: [UInt64], pipeOpen: Bool)>(([], true))
        let child = Process()
        child.executableURL = URL(fileURLWithPath: arguments[0])
        child.arguments = ["writer", directory.path, name, String(count), String(spacing)]
        let toChild = Pipe()
        child.standardInput = toChild
        let token = defaults.observe("stamp") { change in
            guard let stamp = stamp(of: change.newValue) else { return }
            let arrived = now()
            state.withLock { state in
                state.latencies.append(arrived - UInt64(stamp))
                // The next change may go.
                if state.pipeOpen { try? toChild.fileHandleForWriting.write(contentsOf: Data([0x0A])) }
            }
        }
        try child.run()
        let deadline = Date().addingTimeInterval(120)
        while state.withLock({ $0.latencies.count }) < count && Date() < deadline && child.isRunning {
            usleep(1000)  // the main thread idles while the watcher delivers; this is not synchronisation
        }
        token.cancel()
        state.withLock { state in
            state.pipeOpen = false
            try? toChild.fileHandleForWriting.close()
        }
        child.waitUntilExit()
        let sorted = state.withLock { $0.latencies }.sorted()
        if sorted.count != count { fail("only \(sorted.count) of \(count) outside changes arrived") }
        func percentile(_ fraction: Double) -> Double {
            Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]) / 1000
        }
        let label = spacing > 0 ? "\(spacing) ms apart" : "back to back"
        results.append(("outside change, \(label): p50 (µs)", percentile(0.5)))
        results.append(("outside change, \(label): p99 (µs)", percentile(0.99)))
    }
    print(results.map { "\($0.0)\t\($0.1)" }.joined(separator: "\n"))

default:
    fail("unknown mode \(arguments[1])")
}
