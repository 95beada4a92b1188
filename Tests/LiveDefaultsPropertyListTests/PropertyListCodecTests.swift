import Foundation
import TestSupport
import Testing

@testable import LiveDefaults
@testable import LiveDefaultsPropertyList

/// A small deterministic generator (SplitMix64), so a failing random case can be replayed.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

enum RandomPropertyList {
    static let alphabets: [[Character]] = [
        Array("abcXYZ019 _-./"), Array("<>&\"'\n\t;={}()"), Array("éüßñø"), Array("日本語中文"), Array("😀🎉👍🏽"),
    ]

    static func string(_ generator: inout SeededGenerator) -> String {
        let length = Int.random(in: 0...12, using: &generator)
        // An index drawn as randomElement(using:) draws it (the same sequence for a seed), without its Optional.
        let alphabet = alphabets[Int.random(in: alphabets.indices, using: &generator)]
        return String((0..<length).map { _ in alphabet[Int.random(in: alphabet.indices, using: &generator)] })
    }

    /// A random value; `wholeSecondDates` for XML, which stores dates to the second.
    static func value(_ generator: inout SeededGenerator, depth: Int = 0, wholeSecondDates: Bool) -> PropertyListValue {
        let kind = Int.random(in: 0...(depth < 3 ? 11 : 9), using: &generator)
        switch kind {
        case 0: return .string(string(&generator))
        case 1: return .integer(Int64.random(in: -1000...1000, using: &generator))
        case 2: return .integer(Int64.random(in: .min ... .max, using: &generator))
        case 3: return PropertyListValue(integer: UInt64.random(in: UInt64(Int64.max)...UInt64.max, using: &generator))
        case 4: return .real(Double.random(in: -1e12...1e12, using: &generator))
        case 5: return .real(Double(Float.random(in: -100...100, using: &generator)))
        case 6: return .bool(Bool.random(using: &generator))
        case 7:
            let seconds = Double.random(in: -1e9...2e9, using: &generator)
            return .date(Date(timeIntervalSince1970: wholeSecondDates ? seconds.rounded(.down) : seconds))
        case 8:
            return .data(
                Data(
                    (0..<Int.random(in: 0...40, using: &generator)).map { _ in
                        UInt8.random(in: 0...255, using: &generator)
                    }))
        case 9: return .string("")
        case 10:
            return .array(
                (0..<Int.random(in: 0...5, using: &generator)).map { _ in
                    value(&generator, depth: depth + 1, wholeSecondDates: wholeSecondDates)
                })
        default:
            var entries: [String: PropertyListValue] = [:]
            for _ in 0..<Int.random(in: 0...5, using: &generator) {
                entries[string(&generator)] = value(&generator, depth: depth + 1, wholeSecondDates: wholeSecondDates)
            }
            return .dictionary(entries)
        }
    }
}

@Suite struct PropertyListCodecTests {
    static func foundationDecode(_ data: Data) throws -> PropertyListValue {
        try PropertyListValue(foundationObject: PropertyListSerialization.propertyList(from: data, format: nil))
    }

    static func foundationEncode(_ value: PropertyListValue, _ format: PropertyListFormat) throws -> Data {
        try PropertyListSerialization.data(
            fromPropertyList: value.foundationObject, format: format == .xml ? .xml : .binary, options: 0)
    }

    @Test(arguments: [PropertyListFormat.binary, .xml])
    func differentialAgainstFoundation(format: PropertyListFormat) throws {
        let cases = Int(ProcessInfo.processInfo.environment["LIVEDEFAULTS_CODEC_CASES"] ?? "") ?? 300
        var generator = SeededGenerator(state: format == .xml ? 8 : 2)
        for index in 0..<cases {
            var entries: [String: PropertyListValue] = [:]
            for _ in 0..<Int.random(in: 0...8, using: &generator) {
                entries[RandomPropertyList.string(&generator)] = RandomPropertyList.value(
                    &generator, wholeSecondDates: format == .xml)
            }
            let value = PropertyListValue.dictionary(entries)
            // Ours → Foundation.
            let ours = try PropertyListCodec.encode(value, format: format)
            #expect(PropertyListCodec.detectFormat(of: ours) == format)
            #expect(try Self.foundationDecode(ours) == value, "case \(index): Foundation reads ours")
            // Foundation → ours.
            let theirs = try Self.foundationEncode(value, format)
            #expect(try PropertyListCodec.decode(theirs).value == value, "case \(index): we read Foundation's")
        }
    }

    @Test func everyIntegerWidthAndSpecialReal() throws {
        let values: [PropertyListValue] = [
            .integer(0), .integer(255), .integer(256), .integer(65_535), .integer(65_536), .integer(4_294_967_295),
            .integer(4_294_967_296), .integer(.max), .integer(-1), .integer(.min), .unsignedInteger(.max),
            .unsignedInteger(UInt64(Int64.max) + 1), .real(0), .real(-0.0), .real(1e-300),
            .real(.greatestFiniteMagnitude),
            .real(.infinity), .real(-.infinity),
        ]
        for format in [PropertyListFormat.binary, .xml] {
            let value = PropertyListValue.array(values)
            let ours = try PropertyListCodec.encode(value, format: format)
            #expect(try PropertyListCodec.decode(ours).value == value)
            #expect(try Self.foundationDecode(ours) == value)
        }
        let nan = try PropertyListCodec.decode(PropertyListCodec.encode(.array([.real(.nan)]), format: .xml)).value
        guard case .array(let elements) = nan, case .real(let number) = elements.first else {
            Issue.record("NaN did not round-trip")
            return
        }
        #expect(number.isNaN)
    }

    @Test func deepNestingRoundTripsUpToTheLimit() throws {
        var value = PropertyListValue.string("bottom")
        for _ in 0..<100 { value = .array([value]) }
        for format in [PropertyListFormat.binary, .xml] {
            #expect(try PropertyListCodec.decode(PropertyListCodec.encode(value, format: format)).value == value)
        }
    }

    @Test(arguments: [PropertyListFormat.binary, .xml])
    func plutilAcceptsWhatWeWrite(format: PropertyListFormat) throws {
        let directory = try TemporaryDirectory()
        var generator = SeededGenerator(state: 99)
        for index in 0..<5 {
            var entries: [String: PropertyListValue] = [:]
            for _ in 0..<10 {
                entries[RandomPropertyList.string(&generator)] = RandomPropertyList.value(
                    &generator, wholeSecondDates: true)
            }
            let file = directory.file("case\(index).plist")
            try PropertyListCodec.encode(.dictionary(entries), format: format).write(to: file)
            let plutil = try runToEnd("/opt/swift/usr/bin/plutil", ["-lint", file.path])
            #expect(plutil.status == 0, "plutil -lint rejected case \(index): \(plutil.output)")
        }
    }

    // MARK: Hostile input

    /// Builds a binary plist from raw objects (one-byte offsets and references).
    static func binary(_ objects: [[UInt8]], top: UInt8 = 0, count: UInt64? = nil, offsetsOverride: [UInt8]? = nil)
        -> Data
    {
        var bytes = Array("bplist00".utf8)
        var offsets: [UInt8] = []
        for object in objects {
            offsets.append(UInt8(bytes.count))
            bytes += object
        }
        let table = bytes.count
        bytes += offsetsOverride ?? offsets
        bytes += [0, 0, 0, 0, 0, 0, 1, 1]
        func be(_ value: UInt64) -> [UInt8] {
            (0..<8).reversed().map { UInt8(truncatingIfNeeded: value >> (UInt64($0) * 8)) }
        }
        bytes += be(count ?? UInt64(objects.count)) + be(UInt64(top)) + be(UInt64(table))
        return Data(bytes)
    }

    static let hostileBinary: [(String, Data, String)] = [
        ("too short", Data("bplist00".utf8), "too short"),
        ("reference outside", binary([[0xA1, 0x05]]), "outside the 1 objects"),
        ("offset outside", binary([[0x09]], offsetsOverride: [200]), "outside the object area"),
        ("cycle", binary([[0xA1, 0x00]]), "reference cycle"),
        ("two-step cycle", binary([[0xA1, 0x01], [0xA1, 0x00]]), "reference cycle"),
        ("huge count", binary([[0xAF, 0x13, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]]), "larger than the file"),
        ("count past end", binary([[0xAE, 0x00]]), "runs past"),
        ("lone surrogate", binary([[0x61, 0xD8, 0x00]]), "surrogate"),
        ("non-ASCII in ASCII string", binary([[0x51, 0xC3]]), "above 0x7F"),
        ("dictionary key not a string", binary([[0xD1, 0x01, 0x01], [0x10, 0x01]]), "key is not a string"),
        ("object count beyond the file", binary([[0x09]], count: 1 << 40), "declares"),
        ("unknown marker", binary([[0x70]]), "not a supported"),
        ("integer of 2^5 bytes", binary([[0x15]]), "2^5"),
    ]

    @Test(arguments: hostileBinary)
    func hostileBinaryIsAnErrorNamingTheOffset(name: String, data: Data, problem: String) {
        do {
            let value = try BinaryPropertyListReader.decode(data)
            Issue.record("\(name) decoded as \(value)")
        } catch {
            #expect(DefaultsError(error).code == .malformedPropertyList)
            #expect(error.message.contains("byte offset"), "\(error.message)")
            #expect(error.message.contains(problem), "\(name): \(error.message)")
        }
    }

    static let hostileXML: [(String, String, String)] = [
        ("unclosed dict", "<plist><dict><key>a</key><string>b</string>", "line 1"),
        ("key without value", "<plist>\n<dict>\n<key>a</key>\n</dict></plist>", "line 4"),
        ("unknown element", "<plist><foo/></plist>", "not a property-list element"),
        ("undefined entity", "<plist><string>&bogus;</string></plist>", "not defined"),
        (
            "internal subset", "<!DOCTYPE plist [<!ENTITY a \"aaaa\">]><plist><string>&a;</string></plist>",
            "internal DTD"
        ),
        ("bad integer", "<plist><integer>12x</integer></plist>", "not an integer"),
        ("integer too big", "<plist><integer>99999999999999999999</integer></plist>", "fits in 64 bits"),
        ("bad date", "<plist><date>2023-1-01T00:00:00Z</date></plist>", "not a date"),
        ("bad base64", "<plist><data>@@@</data></plist>", "base64"),
        ("trailing garbage", "<plist><true/></plist>junk", "after the property list"),
        ("mismatched close", "<plist><array><string>a</string></dict></plist>", "expected </array>"),
        ("empty", "", "ends where a value was expected"),
    ]

    @Test(arguments: hostileXML)
    func hostileXMLIsAnErrorNamingTheLine(name: String, text: String, problem: String) {
        do {
            let value = try XMLPropertyListReader.decode(Data(text.utf8))
            Issue.record("\(name) decoded as \(value)")
        } catch {
            #expect(error.message.contains("line "), "\(error.message)")
            #expect(error.message.contains(problem), "\(name): \(error.message)")
        }
    }

    /// A `<date>` whose fields are past their range (February 31st, a 60th second, month 13, hour
    /// 24) is read as Foundation reads it on this machine, rolled over, never refused: a suite file
    /// Foundation reads is read here too, to the same moment. A date with a field of the wrong
    /// shape is refused by both.
    @Test(arguments: [
        "2024-02-31T00:00:00Z", "2023-02-31T00:00:00Z", "2024-02-29T23:59:60Z", "2024-12-31T23:59:60Z",
        "2023-02-29T12:00:00Z", "2024-04-31T00:00:00Z", "2024-13-01T00:00:00Z", "2023-13-31T00:00:00Z",
        "2024-00-15T00:00:00Z", "2024-14-01T00:00:00Z", "2024-02-00T00:00:00Z", "2024-01-01T24:00:00Z",
        "2024-01-01T23:60:00Z", "2024-99-99T99:99:99Z", "0000-01-01T00:00:00Z", "-0001-03-01T00:00:00Z",
        "024-01-01T00:00:00Z", "02024-01-01T00:00:00Z", "1969-12-31T23:59:59Z",
        "2024-1-01T00:00:00Z", "2024-01-01T00:00:0Z", "2024-01-01T00:00:00", "+2024-01-01T00:00:00Z",
        "2024-01-01t00:00:00Z",
    ])
    func xmlDatesAreReadAsFoundationReadsThem(text: String) throws {
        let xml = Data("<plist version=\"1.0\"><dict><key>d</key><date>\(text)</date></dict></plist>".utf8)
        let foundation =
            (try? PropertyListSerialization.propertyList(from: xml, format: nil) as? [String: Any])?[
                "d"] as? Date
        let ours = try? PropertyListCodec.decode(xml).value
        #expect(ours == foundation.map { ["d": .date($0)] }, "Foundation: \(String(describing: foundation))")
    }

    /// Dates before year 1 and after 9999 are written as Foundation writes them, and read back.
    @Test(arguments: [-126_038_505_600.0, -62_198_755_200.0, -62_167_219_200.0, -62_135_683_200.0, 317_273_587_200.0])
    func xmlDatesOfAnyYearAreWrittenAsFoundationWritesThem(seconds: Double) throws {
        let value: PropertyListValue = ["d": .date(Date(timeIntervalSince1970: seconds))]
        let ours = try PropertyListCodec.encode(value, format: .xml)
        let foundation = try PropertyListSerialization.data(
            fromPropertyList: ["d": Date(timeIntervalSince1970: seconds)], format: .xml, options: 0)
        func dateText(_ data: Data) -> String? {
            String(decoding: data, as: UTF8.self).components(separatedBy: "<date>").last?.components(
                separatedBy: "</date>"
            ).first
        }
        #expect(dateText(ours) == dateText(foundation))
        #expect(try PropertyListCodec.decode(ours).value == value)
    }

    @Test func xmlWrittenByHandIsReadLikeFoundationsOwn() throws {
        // Spaces inside tags and around numbers, signs, hex, the extremes of 64 bits, entities,
        // CDATA and comments inside text, an explicitly closed <true>: none of the usual shapes.
        let xml = """
            <plist><dict><key >a</key ><integer> 12 </integer><key>b</key><integer>+5</integer>
            <key>c</key><integer>0x1F</integer><key>d</key><string>x &amp; <![CDATA[<y>]]><!-- c -->z</string >
            <key>e</key><true></true><key>f</key><integer>-9223372036854775808</integer>
            <key>g</key><integer>18446744073709551615</integer><key>h</key><real> 2.5 </real>
            <key>i</key><integer>9223372036854775808</integer></dict></plist>
            """
        let value = try XMLPropertyListReader.decode(Data(xml.utf8))
        #expect(
            value == [
                "a": 12, "b": 5, "c": 31, "d": "x & <y>z", "e": true, "f": .integer(.min), "g": .unsignedInteger(.max),
                "h": 2.5, "i": .unsignedInteger(UInt64(Int64.max) + 1),
            ])
    }

    @Test func xmlRealsReadAsDoubleReadsTheirText() throws {
        // The reader's fast path for plain decimals, at its edges (2^53, 10^±22, 19 digits, signs,
        // leading zeros, a bare point) and past them, and the texts writers give random Doubles.
        var texts = [
            "0", "-0", "+1", "0.1", "0.5", ".5", "5.", "007.250", "0.000001", "1.5E+3", "2.5e-3", "1e22", "1e23",
            "-1e-22", "1e-23", "1E0005", "9007199254740992", "9007199254740993", "-9007199254740993e-5",
            "0.30000000000000004", "1234567890123456789", "12345678901234567890", "123456789012345678901e-20",
            "1.7976931348623157e308", "4.9e-324", "1e400", "-1e-400",
        ]
        var generator = SeededGenerator(state: 17)
        for _ in 0..<3_000 {
            let number = Double(bitPattern: generator.next())
            if number.isFinite {
                texts.append(XMLPropertyListWriter.realText(number))
                texts.append(String(format: "%.17g", number))
            }
            texts.append("\(Int64(bitPattern: generator.next()) % 100_000).\(generator.next() % 10_000)")
            texts.append("\(generator.next() % 1_000_000)e-\(generator.next() % 30)")
        }
        for text in texts {
            let decoded = try XMLPropertyListReader.decode(Data("<plist><real>\(text)</real></plist>".utf8))
            let expected = try #require(Double(text), "\(text)")
            guard case .real(let number) = decoded else {
                Issue.record("\(text) decoded as \(decoded)")
                continue
            }
            #expect(number.bitPattern == expected.bitPattern, "\(text): \(number), expected \(expected)")
        }
    }

    /// The library's boundary (docs/design.md, "The codec: a module of its own"): a suite file the codec cannot
    /// read is a `corruptFile` error whose cause is the codec's message as `malformedPropertyList`.
    @Test func aCodecErrorReachesUsersAsMalformedPropertyList() throws {
        let bytes = Data("<plist><dict><key>a</key>".utf8)
        let codecError = try #require(throws: PropertyListError.self) { try PropertyListCodec.decode(bytes) }
        let mapped = DefaultsError(codecError)
        #expect(mapped.code == .malformedPropertyList)
        #expect(mapped.message == codecError.message)

        let directory = try TemporaryDirectory()
        try bytes.write(to: directory.file("com.example.bad.plist"))
        let defaults = try Defaults(suiteName: "com.example.bad", directory: directory.url, watchesFiles: false)
        let error = try #require(defaults.lastError)
        #expect(error.code == .corruptFile)
        #expect(error.message.contains(codecError.message), "\(error.message)")
        let cause = try #require(error.underlying)
        #expect("\(cause)" == "\(mapped)", "the cause is the mapped error")
    }

    @Test func invalidUTF8InXMLIsAnError() {
        var bytes = Array("<plist><string>".utf8)
        bytes += [0xC3, 0x28]
        bytes += Array("</string></plist>".utf8)
        #expect(throws: PropertyListError.self) { try XMLPropertyListReader.decode(Data(bytes)) }
    }

    @Test func nestingTenThousandDeepIsRefused() throws {
        let xml = String(repeating: "<array>", count: 10_000) + String(repeating: "</array>", count: 10_000)
        let xmlError = try #require(throws: PropertyListError.self) { try XMLPropertyListReader.decode(Data(xml.utf8)) }
        #expect(xmlError.message.contains("nesting deeper than 512"))
        let binaryError = try #require(throws: PropertyListError.self) {
            try BinaryPropertyListReader.decode(HostilePropertyLists.nestedBinaryArrays(depth: 10_000))
        }
        #expect(binaryError.message.contains("nesting deeper than 512"))
    }

    @Test func sharedContainersDecodeInLinearTime() throws {
        // Object i is the array [i+1, i+1]: 60 levels, each referring twice to the next. Decoding
        // each object once is instant; decoding every reference anew would take 2^60 steps.
        var objects: [[UInt8]] = (0..<60).map { [0xA2, UInt8($0 + 1), UInt8($0 + 1)] }
        objects.append([0x09])
        let value = try BinaryPropertyListReader.decode(Self.binary(objects))
        var depth = 0
        var current = value
        while case .array(let elements) = current {
            #expect(elements.count == 2)
            current = elements[0]
            depth += 1
        }
        #expect(depth == 60 && current == .bool(true))
    }

    @Test func objectsReferencedFromManyPlacesDecodeTheSameEverywhere() throws {
        // Object 1 is a string, 2 an array holding it and a dictionary (4) that uses it as key and
        // value, 3 a data object; the top array refers to each three times.
        let objects: [[UInt8]] = [
            [0xA9, 1, 1, 1, 2, 2, 2, 3, 3, 3], [0x56] + Array("shared".utf8), [0xA2, 1, 4], [0x43, 1, 2, 3],
            [0xD1, 1, 1],
        ]
        let string = PropertyListValue.string("shared")
        let array = PropertyListValue.array([string, .dictionary(["shared": string])])
        let data = PropertyListValue.data(Data([1, 2, 3]))
        let value = try BinaryPropertyListReader.decode(Self.binary(objects))
        #expect(value == .array([string, string, string, array, array, array, data, data, data]))
    }

    /// A strict prefix of a whole document is an error, never a value made from part of the file (XML
    /// cut only in the whitespace after `</plist>` is still the whole document, and reads as it); a
    /// flipped byte gives an error or a value, never a crash. (Every error is a `PropertyListError`:
    /// the codec throws only that type.)
    @Test(arguments: [PropertyListFormat.binary, .xml])
    func everyTruncationAndByteFlipIsHandled(format: PropertyListFormat) throws {
        var generator = SeededGenerator(state: 7)
        var entries: [String: PropertyListValue] = [:]
        for _ in 0..<6 {
            entries[RandomPropertyList.string(&generator)] = RandomPropertyList.value(
                &generator, wholeSecondDates: true)
        }
        let value = PropertyListValue.dictionary(entries)
        let bytes = Array(try PropertyListCodec.encode(value, format: format))
        var whole = bytes.count
        if format == .xml {
            let text = String(decoding: bytes, as: UTF8.self)
            let end = try #require(text.range(of: "</plist>", options: .backwards)).upperBound
            whole = text.utf8.distance(from: text.startIndex, to: end)
        }
        var readAsAValue: [Int] = []
        var checked = 0
        for length in 0..<bytes.count {
            let prefix = Data(bytes[0..<length])
            // The first bytes of a binary file ("bplist"), or the "<" of XML, are not yet that format:
            // the codec reads them as old-style text, which a bare word or nothing is.
            guard PropertyListCodec.detectFormat(of: prefix) == format else { continue }
            checked += 1
            do {
                let decoded = try PropertyListCodec.decode(prefix).value
                if length < whole || decoded != value { readAsAValue.append(length) }
            } catch {
                if length >= whole {
                    Issue.record("the whole document cut after </plist> (\(length) bytes) was refused: \(error)")
                }
            }
        }
        #expect(checked >= bytes.count - 6, "every prefix from the format's mark on was checked")
        #expect(
            readAsAValue.isEmpty, "\(format) prefixes of these lengths (of \(bytes.count)) were read: \(readAsAValue)")

        var refused = 0
        for _ in 0..<2_000 {
            var mutated = bytes
            mutated[Int.random(in: 0..<mutated.count, using: &generator)] = UInt8.random(
                in: 0...255, using: &generator)
            do {
                _ = try PropertyListCodec.decode(Data(mutated))
            } catch {
                refused += 1
            }
        }
        // The flips reach the checks: many are refused (a flip inside a string's text may still read).
        #expect(refused > 200, "\(refused) of 2,000 flipped documents refused")
    }
}
