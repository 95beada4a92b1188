import Foundation
import TestSupport
import Testing

@testable import LiveDefaults

/// The key type of the effective-value table: `String` equality, with a hash that agrees with it.
@Suite struct HashedKeyTests {
    /// Pairs that are equal as Swift strings but made differently: built at run time against a
    /// literal (a different representation), short and long, and canonically equivalent forms.
    static let equalPairs: [(String, String)] = [
        ("flag", String("fl") + String("ag")),
        (
            "has_seen_onboarding_and_more_than_fifteen_bytes",
            ["has_seen_onboarding", "and_more_than_fifteen_bytes"].joined(separator: "_")
        ),
        ("K", "\u{212A}"),  // KELVIN SIGN
        ("a;b", "a\u{037E}b"),  // GREEK QUESTION MARK
        ("`x", "\u{1FEF}x"),  // GREEK VARIA
        ("caf\u{E9}", "cafe\u{301}"),
        ("\u{212A}\u{301}", "K\u{301}"),
        ("\u{1E30}", "K\u{301}"),
        ("", String()),
    ]

    @Test(arguments: 0..<equalPairs.count)
    func equalStringsAreEqualKeysWithEqualHashes(_ index: Int) {
        let (left, right) = Self.equalPairs[index]
        #expect(left == right)
        #expect(HashedKey(left) == HashedKey(right))
        #expect(HashedKey(left).hashValue == HashedKey(right).hashValue)
        var table: [HashedKey: Int] = [HashedKey(left): 1]
        #expect(table[HashedKey(right)] == 1)
        table[HashedKey(right)] = 2
        #expect(table.count == 1)
    }

    @Test func differentStringsAreDifferentKeys() {
        let names = [
            "a", "b", "ab", "ba", "key-1", "key-10", "key-01", "K", "k", "e\u{301}", "e", "12345678", "123456789",
        ]
        var table: [HashedKey: String] = [:]
        for name in names { table[HashedKey(name)] = name }
        #expect(table.count == names.count)
        for name in names { #expect(table[HashedKey(name)] == name) }
    }

    /// `string` in a representation other than the small one: its bytes in an allocated buffer.
    static func large(_ string: String) -> String {
        var copy = String()
        copy.reserveCapacity(64)
        copy.append(contentsOf: string)
        return copy
    }

    /// A small string (up to 15 ASCII bytes, hashed from its own words) and the same bytes held in
    /// an allocated buffer (hashed from there) are the same key, at every length.
    @Test func smallAndLargeRepresentationsHashAlike() {
        let characters = Array("abcdefghijklmnopqrstuvwxyz0123456789")
        for length in 0...20 {
            let small = String(characters.prefix(length))
            let large = Self.large(small)
            #expect(
                unsafeBitCast(small, to: (UInt, UInt).self) != unsafeBitCast(large, to: (UInt, UInt).self),
                "length \(length): the two are one representation")
            #expect(HashedKey(small).hashValue == HashedKey(large).hashValue, "length \(length)")
            #expect(HashedKey(small) == HashedKey(large))
        }
    }

    /// Changing any one byte of a key, at any length up to 40, changes its hash, in both the small
    /// and the allocated representation: no byte is left out of the hash (the words a small string
    /// holds its bytes in, and the tail after the last full word).
    @Test func everyPositionOfEveryLengthIsHashed() {
        var collisions: [String] = []
        for length in 1...40 {
            let base = [UInt8](repeating: UInt8(ascii: "a"), count: length)
            let baseHash = HashedKey(String(decoding: base, as: UTF8.self)).hashValue
            for position in 0..<length {
                var changed = base
                changed[position] = UInt8(ascii: "b")
                let string = String(decoding: changed, as: UTF8.self)
                for key in [string, Self.large(string)] where HashedKey(key).hashValue == baseHash {
                    collisions.append("length \(length), position \(position)")
                }
            }
            // One byte longer or shorter is another hash too.
            let longer = String(decoding: base + [UInt8(ascii: "a")], as: UTF8.self)
            if HashedKey(longer).hashValue == baseHash { collisions.append("length \(length) and \(length + 1)") }
        }
        #expect(collisions.isEmpty, "hashed alike: \(collisions.prefix(5))")
    }

    @Test func manyKeysSpreadAndAreAllFound() {
        var table: [HashedKey: Int] = [:]
        for index in 0..<20_000 { table[HashedKey("key-\(index)")] = index }
        #expect(table.count == 20_000)
        var missing: [Int] = []
        for index in 0..<20_000 where table[HashedKey("key-\(index)")] != index { missing.append(index) }
        #expect(missing.isEmpty, "not found: \(missing.count) keys, the first \(missing.prefix(5))")
    }

    @Test func readsFindValuesWrittenUnderAnEquivalentName() throws {
        let directory = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: "hashed", directory: directory.url, watchesFiles: false)
        for (left, right) in Self.equalPairs where !left.isEmpty {
            defaults.set(left, forKey: left)
            #expect(defaults.string(forKey: right) == left, "key \(right.debugDescription)")
        }
        // Writing under one form and then the other is one key, as the suite's file sees it.
        defaults.set(1, forKey: "K")
        defaults.set(2, forKey: "\u{212A}")
        #expect(defaults.integer(forKey: "K") == 2)
        #expect(defaults.persistentValues()["K"] == .integer(2))
    }
}
