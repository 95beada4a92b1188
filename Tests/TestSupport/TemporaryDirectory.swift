import Foundation

/// A fresh directory for one test, removed when the test is done with it.
///
/// Each lies in a directory of the test process's own, `$TMPDIR/LiveDefaultsTests/run-<pid>-<random>`,
/// which is removed when the process exits: a suite's store writes its pending changes when its
/// last user lets go of it, and a write makes the suite's directory again, so a store that outlives
/// its test's directory (a background flush running as the test ends) would otherwise leave that
/// directory behind. A run that crashed leaves its own; the next run removes it.
public struct TemporaryDirectory: ~Copyable {
    public let url: URL
    public var path: String { url.path }

    /// This process's directory of test directories, made (and its removal at exit arranged) on
    /// first use, after removing those of test processes that are gone.
    static let runDirectory: URL = {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("LiveDefaultsTests", isDirectory: true)
        for name in (try? FileManager.default.contentsOfDirectory(atPath: base.path)) ?? [] {
            let parts = name.split(separator: "-", maxSplits: 2)
            guard parts.count == 3, parts[0] == "run", let pid = pid_t(parts[1]), kill(pid, 0) != 0, errno == ESRCH
            else { continue }
            try? FileManager.default.removeItem(at: base.appendingPathComponent(name))
        }
        let run = base.appendingPathComponent("run-\(getpid())-\(UUID().uuidString.prefix(8))", isDirectory: true)
        // Registered before the library's exit flush (the first store is opened in a directory made
        // here), so it runs after that flush.
        atexit { try? FileManager.default.removeItem(at: TemporaryDirectory.runDirectory) }
        return run
    }()

    public init() throws {
        url = Self.runDirectory.appendingPathComponent(UUID().uuidString, isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    public func file(_ name: String) -> URL { url.appendingPathComponent(name) }

    deinit { try? FileManager.default.removeItem(at: url) }
}

/// Waits until `condition` holds, for at most `seconds`: checked at once, then after 1 ms, and
/// at intervals doubling up to 10 ms. Returns whether it held: use with `#expect` so a missed
/// event fails the test.
///
/// The intervals grow so that a long wait (an etcd member's start, whose every check is an HTTP
/// request) does not wake a thousand times a second while dozens of tests wait at once; a quick
/// event is still seen within a millisecond or two.
///
/// The default, 30 s, is a bound on a hang, not a speed target: a wait returns as soon as the
/// event has happened, so only a failing test waits it out. CI runs the suites under the thread
/// sanitizer on a loaded 2-core machine, in parallel, where an event of a few milliseconds can
/// take seconds (a test blocking both threads of the cooperative pool, spinning threads of a
/// load test, a store's Dispatch worker waiting for a core).
public func eventually(within seconds: Double = 30, _ condition: () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    var interval = 1
    while Date() < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(interval))
        interval = min(2 * interval, 10)
    }
    return condition()
}

/// Waits up to `seconds` for `group`, on a thread of its own (``onAThreadOfItsOwn(_:)``), not on a
/// thread of Swift's cooperative pool. On Linux that pool is the workers of Dispatch's global
/// queue: two on a 2-core machine, and one more a second while they all wait. A test blocking one
/// in `DispatchGroup.wait` while its own threads ran for minutes (the sanitizer's stress tests)
/// held up every other test's tasks and every piece of work given to that queue (the library's
/// change notifications among them), the more so with several such tests at once; handing the
/// wait to `DispatchQueue.global()`, as this did, blocked the same threads.
public func wait(for group: DispatchGroup, within seconds: Double) async -> Bool {
    (try? await onAThreadOfItsOwn { group.wait(timeout: .now() + seconds) == .success }) ?? false
}
