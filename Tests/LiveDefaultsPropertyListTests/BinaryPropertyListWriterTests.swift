import Foundation
import LiveDefaultsPropertyList
import Testing

@testable import LiveDefaults

/// The binary writer writes the file in one walk, the containers after the other objects: these
/// pin its exact output and cover the sizes where its reference, offset and string forms change.
@Suite struct BinaryPropertyListWriterTests {
    static func hex(_ data: Data) -> String {
        data.map { String(format: "%02x", $0) }.joined()
    }

    /// Every kind of object, every integer width, a marker with an integer count, ASCII, UTF-16 and
    /// astral strings. The bytes are the one-walk writer's (the objects that hold no references in
    /// the order met, then the containers, the root first): read back by us and by Foundation.
    @Test func writesExactlyTheseBytes() throws {
        let value: PropertyListValue = .array([
            .string("a"), .string(""), .string("héllo"), .string("fifteen chars!!"), .string("😀"),
            .integer(0), .integer(255), .integer(256), .integer(70_000), .integer(5_000_000_000), .integer(-2),
            .unsignedInteger(UInt64.max), .real(1.5), .bool(true), .bool(false),
            .date(Date(timeIntervalSinceReferenceDate: 86_400.5)), .data(Data(0..<20)), .data(Data()),
            .array([.integer(1)]), .dictionary(["k": .string("v")]),
        ])
        let expected =
            "62706c697374303051615065006800e9006c006c006f5f100f6669667465656e206368617273212162d83dde00100010ff"
            + "110100120001117013000000012a05f20013fffffffffffffffe140000000000000000ffffffffffffffff233ff8000000"
            + "00000009083340f51808000000004f1014000102030405060708090a0b0c0d0e0f10111213401001516b5176af101400"
            + "0102030405060708090a0b0c0d0e0f10111617a112d11314080a0b16282d2f313439424b5c6566677087888a8c8ea5a7"
            + "00000000000001010000000000000018000000000000001500000000000000aa"
        let data = BinaryPropertyListWriter.encode(value)
        #expect(Self.hex(data) == expected)
        #expect(try BinaryPropertyListReader.decode(data) == value)
        #expect(try PropertyListCodecTests.foundationDecode(data) == value)
    }

    /// Strings of every length up to 24 with one non-ASCII scalar at every position (the ASCII
    /// check reads them a word at a time), written and read back by us and by Foundation.
    @Test func shortStringsWithNonASCIIAnywhereRoundTrip() throws {
        var strings: [PropertyListValue] = []
        for length in 0...24 {
            strings.append(.string(String(repeating: "a", count: length)))
            for position in 0..<length {
                for scalar: Character in ["é", "\u{7F}", "\u{80}", "日", "😀"] {
                    var characters = Array(repeating: Character("a"), count: length)
                    characters[position] = scalar
                    strings.append(.string(String(characters)))
                }
            }
        }
        let value = PropertyListValue.array(strings)
        let data = BinaryPropertyListWriter.encode(value)
        #expect(try BinaryPropertyListReader.decode(data) == value)
        #expect(try PropertyListCodecTests.foundationDecode(data) == value)
    }

    /// More than 65,535 objects and bytes, so references and offsets take four bytes.
    @Test func largeValueWithFourByteReferencesAndOffsetsRoundTrips() throws {
        var entries: [String: PropertyListValue] = [:]
        for index in 0..<20_000 {
            entries["key \(index)"] =
                switch index % 4 {
                case 0: .string("välue \(index)")
                case 1: .array([.integer(Int64(index) * 1_000_003), .real(Double(index) / 7)])
                case 2: .data(Data(repeating: UInt8(truncatingIfNeeded: index), count: index % 40))
                default: .dictionary(["inner": .bool(index % 8 == 3), "date": .date(Date(timeIntervalSince1970: 0))])
                }
        }
        let value = PropertyListValue.dictionary(entries)
        let data = BinaryPropertyListWriter.encode(value)
        let trailer = data.suffix(32)
        #expect(trailer[trailer.startIndex + 6] == 4, "offset size")
        #expect(trailer[trailer.startIndex + 7] == 4, "reference size")
        #expect(try BinaryPropertyListReader.decode(data) == value)
        #expect(try PropertyListCodecTests.foundationDecode(data) == value)
    }
}
