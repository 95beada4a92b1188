import Foundation
import LiveDefaults
import Synchronization
import TestSupport
import Testing

/// Watching is not held up by an observer (issue 40): while one suite's observer takes its time
/// over an outside change, another suite's outside changes still reach their observers.
@Suite struct SlowObserverWatchingTests {
    /// Writes `values` to `path` as an outside tool does: a new file renamed over the old one.
    private func replace(_ path: String, with values: [String: Any]) throws {
        let data = try PropertyListSerialization.data(fromPropertyList: values, format: .binary, options: 0)
        let temporary = path + ".outside"
        try data.write(to: URL(fileURLWithPath: temporary))
        guard rename(temporary, path) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    }

    @Test func aSlowObserverDoesNotDelayAnotherSuitesOutsideChanges() async throws {
        let directory = try TemporaryDirectory()
        let slowPath = directory.file("com.example.slow.plist").path
        let otherPath = directory.file("com.example.other.plist").path
        try replace(slowPath, with: ["stamp": 0])
        try replace(otherPath, with: ["stamp": 0])
        let slow = try Defaults(suiteName: "com.example.slow", directory: directory.url)
        let other = try Defaults(suiteName: "com.example.other", directory: directory.url)

        // The slow observer stays in its callback until the test lets it go.
        let entered = Atomic<Bool>(false)
        let release = DispatchSemaphore(value: 0)
        let slowToken = slow.observe("stamp") { _ in
            entered.store(true, ordering: .releasing)
            release.wait()
        }
        let seen = Mutex<Int64?>(nil)
        let otherToken = other.observe("stamp") { change in
            if case .integer(let stamp) = change.newValue { seen.withLock { $0 = stamp } }
        }

        try replace(slowPath, with: ["stamp": 1])
        let slowEntered = await eventually { entered.load(ordering: .acquiring) }
        #expect(slowEntered, "the slow observer was never called")
        // With the slow observer still in its callback, the other suite changes from outside.
        try replace(otherPath, with: ["stamp": 2])
        let otherDelivered = await eventually(within: 10) { seen.withLock { $0 } == 2 }
        release.signal()
        #expect(otherDelivered, "another suite's outside change waited for a slow observer")

        slowToken.cancel()
        otherToken.cancel()
    }
}
