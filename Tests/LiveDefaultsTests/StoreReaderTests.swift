import Foundation
import LiveDefaultsTestHelpers
import TestSupport
import Testing

@testable import LiveDefaults

/// A store tells each `Defaults` that searches it of every change, reading its readers where they
/// are stored (`SuiteStore.set`): a reader whose `Defaults` is gone is passed over, and the others
/// still see every change, in order.
@Suite struct StoreReaderTests {
    @Test func aSetReachesEveryReaderLeftAfterAnEarlierOneIsGone() throws {
        let directory = try TemporaryDirectory()
        let suite = "com.example.readers"
        var first: Defaults? = try Defaults(suiteName: suite, directory: directory.url, watchesFiles: false)
        let second = try Defaults(suiteName: suite, directory: directory.url, watchesFiles: false)
        let third = try Defaults(suiteName: suite, directory: directory.url, watchesFiles: false)
        weak let gone = first
        // The store's first reader goes before any change (so no change notification holds it);
        // its entry stays in the store's readers, ahead of the two others, until a reader is added.
        first = nil
        #expect(gone == nil)
        #expect(second.primaryStore.state.withLock { $0.readers.count } == 3)
        let seenBySecond = Recorder<PropertyListValue?>()
        let seenByThird = Recorder<PropertyListValue?>()
        let tokens = [
            second.observe("k") { seenBySecond.record($0) },
            third.observe("k") { seenByThird.record($0) },
        ]
        for value in 1...3 { second.set(value, forKey: "k") }
        third.removeObject(forKey: "k")
        for token in tokens { token.cancel() }
        for seen in [seenBySecond, seenByThird] {
            #expect(seen.all.map(\.newValue) == [.integer(1), .integer(2), .integer(3), nil])
            #expect(seen.all.map(\.oldValue) == [nil, .integer(1), .integer(2), .integer(3)])
        }
        #expect(third.object(forKey: "k") == nil)
        #expect(second.integer(forKey: "k") == 0)
    }
}
