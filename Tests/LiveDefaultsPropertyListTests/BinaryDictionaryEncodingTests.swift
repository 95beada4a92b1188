import Foundation
import TestSupport
import Testing

@testable import LiveDefaults
@testable import LiveDefaultsPropertyList

/// The encoding a file backend keeps between writes: after any changes, its file reads back, by
/// us and by Foundation, as exactly the dictionary with those changes applied.
@Suite struct BinaryDictionaryEncodingTests {
    typealias Change = (key: String, value: PropertyListValue?)

    /// Decodes `data` with our reader and Foundation's and checks both give `expected`.
    static func expectFile(
        _ data: Data, holds expected: [String: PropertyListValue], _ comment: Comment? = nil,
        foundation: Bool = true, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        #expect(
            try BinaryPropertyListReader.decode(data) == .dictionary(expected), comment,
            sourceLocation: sourceLocation)
        if foundation {
            #expect(
                try PropertyListCodecTests.foundationDecode(data) == .dictionary(expected), comment,
                sourceLocation: sourceLocation)
        }
    }

    /// The bytes of an ASCII string object (shorter than 256 bytes).
    static func asciiObject(_ text: String) -> [UInt8] {
        let count = UInt8(text.utf8.count)
        return (count < 15 ? [0x50 | count] : [0x5F, 0x10, count]) + Array(text.utf8)
    }

    /// Random batches of sets, type changes, removals and new keys, on a dictionary that crosses
    /// 255 objects (one-byte references to two) and back.
    @Test func reencodingAfterRandomChangesReadsBackAsTheChangedDictionary() throws {
        var generator = SeededGenerator(state: 17)
        var expected: [String: PropertyListValue] = [:]
        for index in 0..<60 {
            expected["key \(index)"] = RandomPropertyList.value(&generator, wholeSecondDates: false)
        }
        var encoding = BinaryDictionaryEncoding(expected)
        try Self.expectFile(encoding.data, holds: expected, "the whole encode")
        for round in 0..<120 {
            var batch: [Change] = []
            for _ in 0..<Int.random(in: 1...6, using: &generator) {
                let existing = expected.keys.randomElement(using: &generator)
                let key: String =
                    switch Int.random(in: 0...3, using: &generator) {
                    case 0: "new \(round) " + RandomPropertyList.string(&generator)
                    case 1: String(repeating: "long key ", count: Int.random(in: 1...5, using: &generator))
                    default: existing ?? "first"
                    }
                // Growing in the first half, shrinking in the second.
                let removes = Int.random(in: 0...9, using: &generator) < (round < 60 ? 1 : 6)
                let value = removes ? nil : RandomPropertyList.value(&generator, wholeSecondDates: false)
                batch.removeAll { $0.key == key }  // one change a key, as a store's pending changes are
                batch.append((key, value))
                expected[key] = value
            }
            let data = encoding.applying(batch)
            #expect(data == encoding.data)
            #expect(encoding.values == expected)
            #expect(encoding.count == expected.count)
            try Self.expectFile(data, holds: expected, "round \(round)", foundation: round.isMultiple(of: 4))
        }
    }

    /// 1, true, 1.0, a Float 1 and "1" are equal in some languages, not in a property list: each
    /// change of type is written, though the value "looks" the same.
    @Test func equalValuesOfDifferentTypesAreEachWritten() throws {
        var encoding = BinaryDictionaryEncoding(["n": .integer(1), "other": "unchanged"])
        let steps: [PropertyListValue] = [
            .bool(true), .real(1.0), .float(1), .string("1"), .integer(1), .unsignedInteger(UInt64.max),
            .array([.integer(1)]), .dictionary(["1": .integer(1)]), .data(Data([1])), .integer(1),
        ]
        for step in steps {
            let data = encoding.applying([(key: "n", value: step)])
            let expected: [String: PropertyListValue] = ["n": step, "other": "unchanged"]
            // Foundation reads a 4-byte real as a Double: our reader alone tells .float apart.
            try Self.expectFile(data, holds: expected, "\(step)", foundation: step != .float(1))
        }
    }

    /// Changes to values of the same encoded size (a counter, a flag, a real for a date) overwrite
    /// their bytes in the last file: the result is the file the copying encode writes (forced here
    /// by a removal of an absent key, which cannot be patched), and reads back as the changes made.
    @Test func sameSizeChangesWriteTheSameFileAsACopyingEncode() throws {
        var values: [String: PropertyListValue] = [:]
        for index in 0..<40 {
            values["key \(index)"] =
                switch index % 4 {
                case 0: .integer(Int64(index))
                case 1: .bool(true)
                case 2: .real(Double(index) / 3)
                default: ["item", .integer(Int64(index))]
                }
        }
        var patching = BinaryDictionaryEncoding(values)
        var copying = BinaryDictionaryEncoding(values)
        let steps: [[Change]] = [
            [("key 0", .integer(200))], [("key 1", .bool(false)), ("key 4", .integer(7))],
            [("key 2", .date(Date(timeIntervalSinceReferenceDate: 5)))], [("key 2", .real(-1))],
            [("key 0", .string("x"))], [("key 0", .integer(9))], [("key 5", .bool(true)), ("key 5", .bool(false))],
        ]
        for changes in steps {
            let patched = patching.applying(changes)
            let copied = copying.applying(changes + [("absent", nil)])
            for (key, value) in changes { values[key] = value }
            #expect(patched == copied, "\(changes)")
            try Self.expectFile(patched, holds: values, "\(changes)")
            #expect(patching.values == values)
        }
    }

    /// Removing the entry kept last, one in the middle, all of them, and adding one back.
    @Test func removedKeysAreGoneAndCanComeBack() throws {
        var values: [String: PropertyListValue] = [:]
        for index in 0..<20 {
            values["k\(index)"] = index.isMultiple(of: 3) ? ["item", .integer(Int64(index))] : .string("v\(index)")
        }
        var encoding = BinaryDictionaryEncoding(values)
        for key in values.keys.sorted() {
            values[key] = nil
            try Self.expectFile(encoding.applying([(key: key, value: nil)]), holds: values, "without \(key)")
        }
        #expect(encoding.count == 0)
        try Self.expectFile(encoding.applying([(key: "k3", value: "back")]), holds: ["k3": "back"])
        // Removing a key that is not there changes nothing.
        try Self.expectFile(encoding.applying([(key: "absent", value: nil)]), holds: ["k3": "back"])
    }

    /// Unchanged entries are copied: a change to one key leaves the bytes of the others' objects
    /// as they were (the file only moves them).
    @Test func unchangedEntriesKeepTheirBytes() throws {
        var values: [String: PropertyListValue] = [:]
        for index in 0..<100 { values["key-\(index)"] = .string("value number \(index)") }
        var encoding = BinaryDictionaryEncoding(values)
        let before = encoding.data
        let after = encoding.applying([(key: "key-7", value: .integer(7))])
        values["key-7"] = .integer(7)
        try Self.expectFile(after, holds: values)
        for (key, value) in values where key != "key-7" {
            guard case .string(let text) = value else { continue }
            let object = Data(Self.asciiObject(key) + Self.asciiObject(text))
            #expect(before.range(of: object) != nil && after.range(of: object) != nil, "\(key)")
        }
    }

    /// A same-size change is made in the encoding's own bytes when nothing else holds them (a
    /// flush then touches the changed object only), and in a copy when something does: a `Data`
    /// taken from the last file keeps its bytes.
    @Test func sameSizeChangesPatchTheBytesInPlaceOnlyWhenNoOneElseHoldsThem() throws {
        var values: [String: PropertyListValue] = [:]
        for index in 0..<100 { values["key-\(index)"] = .integer(Int64(index)) }
        var encoding = BinaryDictionaryEncoding(values)
        func address(_ data: Data) -> Int { data.withUnsafeBytes { Int(bitPattern: $0.baseAddress) } }
        let first = address(encoding.data)
        _ = encoding.applying([(key: "key-1", value: .integer(2))])
        values["key-1"] = .integer(2)
        #expect(address(encoding.data) == first, "patched in place")
        try Self.expectFile(encoding.data, holds: values)

        let held = encoding.data
        let heldBytes = [UInt8](held)
        let changed = encoding.applying([(key: "key-1", value: .integer(3))])
        values["key-1"] = .integer(3)
        #expect(address(changed) != address(held), "patched in a copy")
        #expect([UInt8](held) == heldBytes, "the held file is as it was")
        try Self.expectFile(changed, holds: values)
    }
}
