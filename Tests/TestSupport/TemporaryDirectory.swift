import Foundation

/// A fresh directory for one test, removed when the test is done with it.
public struct TemporaryDirectory: ~Copyable {
    public let url: URL
    public var path: String { url.path }

    public init() throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("LiveDefaultsTests", isDirectory: true)
        url = base.appendingPathComponent(UUID().uuidString, isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    public func file(_ name: String) -> URL { url.appendingPathComponent(name) }

    deinit { try? FileManager.default.removeItem(at: url) }
}

/// Waits until `condition` holds, checking every millisecond, for at most `seconds`.
/// Returns whether it held: use with `#expect` so a missed event fails the test.
///
/// The default, 30 s, is a bound on a hang, not a speed target: a wait returns as soon as the
/// event has happened, so only a failing test waits it out. CI runs the suites under the thread
/// sanitizer on a loaded 2-core machine, in parallel, where an event of a few milliseconds can
/// take seconds (a test blocking both threads of the cooperative pool, spinning threads of a
/// load test, a store's Dispatch worker waiting for a core).
public func eventually(within seconds: Double = 30, _ condition: () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return condition()
}

/// Waits up to `seconds` for `group`, without holding a thread of Swift's cooperative pool: on
/// a 2-core machine it has two threads, and a test blocking one in `DispatchGroup.wait` (while
/// its own threads run for seconds) starves other tests' tasks running in parallel. The wait
/// happens on a Dispatch thread instead.
public func wait(for group: DispatchGroup, within seconds: Double) async -> Bool {
    await withCheckedContinuation { continuation in
        DispatchQueue.global().async {
            continuation.resume(returning: group.wait(timeout: .now() + seconds) == .success)
        }
    }
}
