import Foundation
import LiveDefaultsPropertyList
import TestSupport
import Testing

@testable import LiveDefaults

/// The conversions UserDefaults applies when reading, with Foundation's UserDefaults as the oracle
/// in the same test. Foundation is given the values as registered defaults, so it writes no file.
@Suite struct FoundationConversionTests {
    static var samples: [(String, Any)] {
        [
            ("true", true), ("false", false), ("float", Float(12.34)), ("floatThird", Float(1) / 3),
            ("double", 12.34), ("int", 7), ("negative", -3), ("string", "12abc"),
        ]
    }

    /// A `UserDefaults` that holds `values` in its registration domain only.
    static func foundation(_ values: [String: Any]) throws -> UserDefaults {
        let defaults = try #require(UserDefaults(suiteName: "livedefaults.oracle.\(UUID().uuidString)"))
        defaults.register(defaults: values)
        return defaults
    }

    @Test func getterConversionsMatchFoundation() throws {
        let directory = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: "com.example.conversions", directory: directory.url, watchesFiles: false)
        let oracle = try Self.foundation(Dictionary(uniqueKeysWithValues: Self.samples))
        for (key, value) in Self.samples { try defaults.set(value, forKey: key) }
        for (key, _) in Self.samples {
            #expect(defaults.string(forKey: key) == oracle.string(forKey: key), "string(forKey: \(key))")
            #expect(defaults.integer(forKey: key) == oracle.integer(forKey: key), "integer(forKey: \(key))")
            #expect(defaults.double(forKey: key) == oracle.double(forKey: key), "double(forKey: \(key))")
            #expect(defaults.float(forKey: key) == oracle.float(forKey: key), "float(forKey: \(key))")
            #expect(defaults.bool(forKey: key) == oracle.bool(forKey: key), "bool(forKey: \(key))")
        }
        // The cases the issue names, spelled out.
        #expect(defaults.string(forKey: "true") == "1")
        #expect(defaults.string(forKey: "false") == "0")
        #expect(defaults.string(forKey: "float") == "12.34")
        #expect(defaults.float(forKey: "float") == Float(12.34))
    }

    @Test func aFloatReadsBackAsItsOwnTextAfterABinaryRoundTrip() throws {
        let directory = try TemporaryDirectory()
        let name = "com.example.floatfile"
        do {
            let writer = try Defaults(suiteName: name, directory: directory.url, watchesFiles: false)
            writer.set(Float(12.34), forKey: "f")
            defaultsSetTyped(writer)
            try writer.synchronize()
        }
        // Foundation reads the file's bytes as a 4-byte real, a Float.
        let bytes = try Data(contentsOf: directory.file("\(name).plist"))
        let read = try #require(
            try PropertyListSerialization.propertyList(from: bytes, format: nil) as? [String: Any])
        let number = try #require(read["f"] as? NSNumber)
        #expect(String(cString: number.objCType) == "f")
        #expect(number.stringValue == "12.34")

        // A new process's view of the file: a store opened afresh in another directory's registry.
        let copy = try TemporaryDirectory()
        try bytes.write(to: copy.file("\(name).plist"))
        let reader = try Defaults(suiteName: name, directory: copy.url, watchesFiles: false)
        #expect(reader.string(forKey: "f") == "12.34")
        #expect(reader.float(forKey: "f") == Float(12.34))
        #expect(reader.double(forKey: "f") == Double(Float(12.34)))
        #expect(reader[Self.typedFloat] == Float(0.1))
    }

    static let typedFloat = Defaults.Key<Float>("typed", default: 0)
    func defaultsSetTyped(_ defaults: Defaults) { defaults[Self.typedFloat] = Float(0.1) }

    @Test func floatsAreEncodedAsFoundationEncodesThem() throws {
        let float = Float(12.34)
        for format in [PropertyListFormat.binary, .xml] {
            let ours = try PropertyListCodec.encode(.dictionary(["f": .float(float)]), format: format)
            let foundation = try PropertyListSerialization.data(
                fromPropertyList: ["f": NSNumber(value: float)],
                format: format == .binary ? .binary : .xml, options: 0)
            if format == .binary {
                // Both hold the number as the same object: a 4-byte real (marker 0x22), big-endian.
                let bits = float.bitPattern
                let real: [UInt8] = [0x22] + [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: bits >> $0) }
                #expect(foundation.firstRange(of: real) != nil)
                #expect(ours.firstRange(of: real) != nil)
            }
            // Each reads the other's as Foundation reads its own.
            let decoded = try PropertyListCodec.decode(foundation).value
            let oracle = try #require(
                try PropertyListSerialization.propertyList(from: ours, format: nil) as? [String: Any])
            let oracleText = try #require(oracle["f"] as? NSNumber).stringValue
            let ourText = try #require(decoded.dictionaryValue?["f"])
            let defaults = try Defaults(
                suiteName: "com.example.f\(format == .binary ? "b" : "x")", directory: TemporaryDirectory().url,
                watchesFiles: false)
            defaults.set(ourText, forKey: "f")
            #expect(defaults.string(forKey: "f") == oracleText, "\(format)")
        }
    }
}
