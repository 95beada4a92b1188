import Foundation
import LiveDefaultsPropertyList
import LiveDefaultsTestHelpers
import TestSupport
import Testing

@testable import LiveDefaults

/// A file backend keeps the binary encoding of what it last wrote and re-encodes only the keys a
/// flush changes: these check that the file always holds the store's values, whatever happened
/// to the file or the store between two flushes.
@Suite struct FlushEncodingTests {
    static func fileValues(_ store: SuiteStore) throws -> [String: PropertyListValue]? {
        try StoreBackendTests.fileValues(store.location.path)
    }

    /// Changed, removed and new keys, flush after flush, including changes of type only.
    @Test func everyFlushWritesTheStoresValues() throws {
        let directory = try TemporaryDirectory()
        let (store, _, _) = try StoreBackendTests.makeStore(in: directory)
        for index in 0..<50 { store.set(.string("value \(index)"), forKey: "key \(index)") }
        try store.flush()
        #expect(try Self.fileValues(store) == store.values())
        let steps: [(key: String, value: PropertyListValue?)] = [
            ("key 3", .integer(1)), ("key 3", .bool(true)), ("key 3", .real(1)), ("key 3", nil), ("key 49", nil),
            ("new", ["a", 1]), ("new", "no longer an array"), ("key 3", "back"), ("key 0", .data(Data([1, 2]))),
        ]
        for (key, value) in steps {
            store.set(value, forKey: key)
            try store.flush()
            #expect(
                try Self.fileValues(store) == store.values(), "after setting \(key) to \(String(describing: value))")
        }
        #expect(store.values()["key 3"] == "back" && store.values()["key 49"] == nil)
    }

    /// Another process replaces the file and this store reloads it (so the next flush does not
    /// read the file again): the flush writes over the reloaded values, not the ones it wrote last.
    @Test func aFlushAfterAReloadKeepsWhatAnotherProcessWrote() throws {
        let directory = try TemporaryDirectory()
        let (store, _, _) = try StoreBackendTests.makeStore(in: directory)
        store.set(1, forKey: "a")
        store.set(2, forKey: "b")
        try store.flush()
        let theirs = try PropertyListSerialization.data(
            fromPropertyList: ["a": 1, "c": "theirs"], format: .binary, options: 0)
        try theirs.write(to: URL(fileURLWithPath: store.location.path), options: .atomic)
        store.reload()
        #expect(store.values() == ["a": 1, "c": "theirs"])
        store.set("mine", forKey: "d")
        try store.flush()
        #expect(try Self.fileValues(store) == ["a": 1, "c": "theirs", "d": "mine"])
        store.set("mine too", forKey: "e")
        try store.flush()
        #expect(try Self.fileValues(store) == ["a": 1, "c": "theirs", "d": "mine", "e": "mine too"])
    }

    /// Another process replaces the file and this store has not reloaded: the flush reads it again
    /// and merges into it.
    @Test func aFlushAfterAnotherWriterWithoutAReloadMergesIntoTheirFile() throws {
        let directory = try TemporaryDirectory()
        let (store, _, _) = try StoreBackendTests.makeStore(in: directory)
        store.set(1, forKey: "a")
        try store.flush()
        try PropertyListCodec.encode(.dictionary(["a": 1, "x": "theirs"]), format: .binary)
            .write(to: URL(fileURLWithPath: store.location.path))
        store.set(2, forKey: "b")
        try store.flush()
        #expect(try Self.fileValues(store) == ["a": 1, "x": "theirs", "b": 2])
        store.set(nil, forKey: "x")
        try store.flush()
        #expect(try Self.fileValues(store) == ["a": 1, "b": 2])
    }

    /// A write that fails after encoding leaves no trace in what the next one writes.
    @Test func aFailedWriteIsFollowedByACompleteOne() throws {
        let directory = try TemporaryDirectory()
        let (store, operations, _) = try StoreBackendTests.makeStore(in: directory)
        store.set("a", forKey: "a")
        store.set("b", forKey: "b")
        try store.flush()
        store.set("changed", forKey: "a")
        store.set(nil, forKey: "b")
        operations.fail(.write, with: ENOSPC)
        #expect(throws: DefaultsError.self) { try store.flush() }
        operations.fail(.write, with: nil)
        #expect(try Self.fileValues(store) == ["a": "a", "b": "b"])
        store.set("c", forKey: "c")
        try store.flush()
        #expect(try Self.fileValues(store) == ["a": "changed", "c": "c"])
        store.set("again", forKey: "a")
        try store.flush()
        #expect(try Self.fileValues(store) == ["a": "again", "c": "c"])
    }

    /// A same-size change is written into the kept file's own bytes: when that write fails at
    /// its fsync, the file on disk is still the last one, a reload changes nothing this store
    /// reads, and the next flushes write the store's values.
    @Test func aFailedSameSizeWriteLeavesTheFileAndTheValuesRight() throws {
        let directory = try TemporaryDirectory()
        let (store, operations, _) = try StoreBackendTests.makeStore(in: directory)
        for index in 0..<20 { store.set(.integer(Int64(index)), forKey: "key \(index)") }
        try store.flush()
        let written = try Self.fileValues(store)
        store.set(.integer(100), forKey: "key 1")
        operations.fail(.fsync, with: EIO)
        #expect(throws: DefaultsError.self) { try store.flush() }
        operations.fail(.fsync, with: nil)
        #expect(try Self.fileValues(store) == written)
        store.reload()
        #expect(store.values()["key 1"] == .integer(100))
        try store.flush()
        #expect(try Self.fileValues(store) == store.values())
        store.set(.integer(101), forKey: "key 1")
        try store.flush()
        #expect(try Self.fileValues(store) == store.values())
        #expect(store.values()["key 1"] == .integer(101))
    }

    /// Replacing every value, then single changes again.
    @Test func aWholeReplacementIsWrittenWhole() throws {
        let directory = try TemporaryDirectory()
        let (store, _, _) = try StoreBackendTests.makeStore(in: directory)
        store.set("a", forKey: "a")
        try store.flush()
        store.replaceAll(with: ["z": 26])
        try store.flush()
        #expect(try Self.fileValues(store) == ["z": 26])
        store.set("y", forKey: "y")
        try store.flush()
        #expect(try Self.fileValues(store) == ["z": 26, "y": "y"])
    }
}
