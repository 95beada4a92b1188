import Foundation
import Synchronization
import Testing

@testable import LiveDefaultsPropertyList

/// The XML reader's fast paths (plain `<key>`, `<string>`, `<integer>`, `<real>`, `<true/>`,
/// `<false/>`, `<array>`, `<dict>`, and reals through ``DecimalReal``) at their edges: each must
/// give what the general path gives, and leave to it whatever it does not read itself.
@Suite struct XMLReaderFastPathTests {
    /// The value of `<plist>body</plist>`.
    static func decode(_ body: String) throws(PropertyListError) -> PropertyListValue {
        try XMLPropertyListReader.decode(Data("<plist>\(body)</plist>".utf8))
    }

    /// The Double of `<real>text</real>`, failing the test when it is not a real.
    static func real(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> Double? {
        let value = try decode("<real>\(text)</real>")
        guard case .real(let number) = value else {
            Issue.record("\(text) decoded as \(value)", sourceLocation: sourceLocation)
            return nil
        }
        return number
    }

    @Test func decimalRealIsNilOrExactlyWhatDoubleReads() throws {
        // Random significands of 1 to 19 digits, at every power of ten in the table and past it:
        // `DecimalReal` may decline (nil), but what it returns is the correctly rounded Double.
        var generator = SeededGenerator(state: 53)
        var decided = 0
        var tried = 0
        for _ in 0..<40_000 {
            let digitCount = Int.random(in: 1...19, using: &generator)
            var significand: UInt64 = 0
            for _ in 0..<digitCount { significand = significand * 10 + UInt64.random(in: 0...9, using: &generator) }
            let exponent = Int.random(in: -80...80, using: &generator)
            let negative = Bool.random(using: &generator)
            let text = "\(negative ? "-" : "")\(significand)e\(exponent)"
            let expected = try #require(Double(text), "\(text)")
            let inTable = (DecimalReal.smallestExponent...DecimalReal.largestExponent).contains(exponent)
            if inTable { tried += 1 }
            guard let number = DecimalReal.double(significand: significand, exponent: exponent, negative: negative)
            else { continue }
            if inTable { decided += 1 }
            #expect(number.bitPattern == expected.bitPattern, "\(text): \(number), expected \(expected)")
        }
        // Inside the table almost every number is decided (only near-halfway products are not).
        #expect(decided > tried * 99 / 100, "decided \(decided) of \(tried)")
    }

    /// A non-negative integer as 32-bit limbs, least significant first: just enough arithmetic to
    /// recompute the powers of ten exactly.
    struct BigNumber {
        var limbs: [UInt32]

        mutating func multiply(by factor: UInt32) {
            var carry: UInt64 = 0
            for index in limbs.indices {
                let product = UInt64(limbs[index]) * UInt64(factor) + carry
                limbs[index] = UInt32(truncatingIfNeeded: product)
                carry = product >> 32
            }
            if carry != 0 { limbs.append(UInt32(carry)) }
        }

        /// Divides, rounding down (repeated, this is the floor of dividing by the product).
        mutating func divide(by divisor: UInt32) {
            var remainder: UInt64 = 0
            for index in limbs.indices.reversed() {
                let dividend = remainder << 32 | UInt64(limbs[index])
                limbs[index] = UInt32(dividend / UInt64(divisor))
                remainder = dividend % UInt64(divisor)
            }
            while limbs.last == 0 { limbs.removeLast() }
        }

        var bitWidth: Int { (limbs.count - 1) * 32 + (32 - limbs[limbs.count - 1].leadingZeroBitCount) }

        /// The top 128 bits (the rest dropped: rounded down), as upper and lower 64.
        var top128: (UInt64, UInt64) {
            var bits: [Bool] = []
            for index in stride(from: bitWidth - 1, through: max(0, bitWidth - 128), by: -1) {
                bits.append(limbs[index / 32] >> UInt32(index % 32) & 1 == 1)
            }
            while bits.count < 128 { bits.append(false) }
            var high: UInt64 = 0
            var low: UInt64 = 0
            for bit in bits[0..<64] { high = high << 1 | (bit ? 1 : 0) }
            for bit in bits[64..<128] { low = low << 1 | (bit ? 1 : 0) }
            return (high, low)
        }
    }

    @Test func everyRowOfThePowersOfTenTableIsExact() {
        let exponents = Array(DecimalReal.smallestExponent...DecimalReal.largestExponent)
        #expect(DecimalReal.powersOfTen.count == exponents.count * 2)
        for (row, exponent) in exponents.enumerated() {
            var number: BigNumber
            if exponent >= 0 {
                number = BigNumber(limbs: [1])
                for _ in 0..<exponent { number.multiply(by: 10) }
            } else {
                // floor(2^448 / 10^n): far more than 128 bits for every n in the table.
                number = BigNumber(limbs: Array(repeating: 0, count: 14) + [1])
                for _ in 0..<(-exponent) { number.divide(by: 10) }
            }
            let (high, low) = number.top128
            #expect(DecimalReal.powersOfTen[row * 2] == high, "10^\(exponent), upper 64 bits")
            #expect(DecimalReal.powersOfTen[row * 2 + 1] == low, "10^\(exponent), lower 64 bits")
        }
    }

    @Test func decimalRealAtHalfwayPointsAndTheTableEnds() throws {
        // 2^53 + 1 and 2^54 + 2 lie exactly halfway between two Doubles; 10^±64 are the table's
        // last rows; 10^23 is the first power of ten a Double does not hold.
        let cases: [(UInt64, Int)] = [
            (9_007_199_254_740_993, 0), (18_014_398_509_481_986, 0), (9_007_199_254_740_995, 0),
            (1, 64), (1, -64), (1, 65), (1, -65), (1, 23), (1, -23), (18_446_744_073_709_551_615, 0),
            (9_999_999_999_999_999_999, -64), (9_999_999_999_999_999_999, 64), (17_976_931_348_623_157, 292),
            (49_406_564_584_124_654, -341), (30_000_000_000_000_004, -17), (1_234_567_890_123_456_789, -30),
        ]
        for (significand, exponent) in cases {
            let expected = try #require(Double("\(significand)e\(exponent)"))
            if let number = DecimalReal.double(significand: significand, exponent: exponent, negative: false) {
                #expect(number.bitPattern == expected.bitPattern, "\(significand)e\(exponent)")
            }
            // The reader gives Double's answer whichever path it takes.
            #expect(try Self.real("\(significand)e\(exponent)")?.bitPattern == expected.bitPattern)
        }
        #expect(DecimalReal.double(significand: 0, exponent: 300, negative: true)?.bitPattern == (-0.0).bitPattern)
    }

    @Test func realsInEverySpelling() throws {
        let cases: [(String, Double)] = [
            ("1e5", 1e5), ("1E5", 1e5), ("1e+5", 1e5), ("1E-5", 1e-5), ("-2.5e-3", -2.5e-3), ("+1.5", 1.5),
            ("+0.25e+2", 25), ("000123.4500", 123.45), (".5", 0.5), ("5.", 5), ("0.000", 0),
            ("2.6666666666666665", 2.6666666666666665), ("332.6666666666667", 332.6666666666667),
            ("0.30000000000000004", 0.30000000000000004), ("1.7976931348623157e308", .greatestFiniteMagnitude),
            ("5e-324", .leastNonzeroMagnitude), ("1.00000000000000000000001", 1),
            ("123456789012345678901234", 1.2345678901234568e23),
            ("1e0009", 1e9), ("\n 1.5\t", 1.5),
        ]
        for (text, expected) in cases {
            #expect(try Self.real(text)?.bitPattern == expected.bitPattern, "\(text)")
        }
        // Negative zero keeps its sign, on the fast path and the general one.
        for text in ["-0", "-0.0", "-0e10", "-0.000000000000000000000000"] {
            #expect(try Self.real(text)?.bitPattern == (-0.0).bitPattern, "\(text)")
        }
        // The spellings Foundation writes (and reads) for the infinities and NaN.
        for text in ["+infinity", "infinity", "inf", "+inf", "INF", "Infinity"] {
            #expect(try Self.real(text) == .infinity, "\(text)")
        }
        for text in ["-infinity", "-inf", "-Infinity"] { #expect(try Self.real(text) == -.infinity, "\(text)") }
        for text in ["nan", "NaN", "NAN"] { #expect(try Self.real(text)?.isNaN == true, "\(text)") }
        // Not reals: each is an error naming the text.
        for text in ["1.5x", "--1", "1e", "e5", ".", "+", "1..5", "0x1p3x", ""] {
            #expect {
                try Self.decode("<real>\(text)</real>")
            } throws: { error in
                (error as? PropertyListError)?.message.contains("is not a real number") == true
            }
        }
    }

    @Test func integersAtTheFastPathsEdges() throws {
        let cases: [(String, PropertyListValue)] = [
            ("0", 0), ("-0", 0), ("+7", 7), ("007", 7), ("999999999999999999", .integer(999_999_999_999_999_999)),
            ("-999999999999999999", .integer(-999_999_999_999_999_999)),
            ("1000000000000000000", .integer(1_000_000_000_000_000_000)),
            ("9223372036854775807", .integer(.max)), ("-9223372036854775808", .integer(.min)),
            ("+9223372036854775807", .integer(.max)), ("9223372036854775808", .unsignedInteger(1 << 63)),
            ("+18446744073709551615", .unsignedInteger(.max)), ("0x10", 16), (" 12 ", 12), ("\n-3\n", -3),
        ]
        for (text, expected) in cases {
            #expect(try Self.decode("<integer>\(text)</integer>") == expected, "\(text)")
        }
        for text in ["18446744073709551616", "-9223372036854775809", "1 2", "12-", "+-1", "-", ""] {
            #expect {
                try Self.decode("<integer>\(text)</integer>")
            } throws: { error in
                (error as? PropertyListError)?.message.contains("not an integer") == true
            }
        }
    }

    @Test func whiteSpaceInsideTagsAndBetweenThemTakesTheGeneralPath() throws {
        let xml = """
            <plist version="1.0">
            <dict >
            \t<key >a</key >\r\n\t<real >1.5</real >
            \t<key>b</key>
            \t\t<integer >2</integer\t>
            \t<key>c</key> <string >x</string >
            \t<key>d</key><array >
            \t\t<true />  <false/>
            \t\t<!-- between elements -->
            \t\t<string>y</string>
            \t</array >
            \t<!-- between entries -->
            \t<key>e</key><dict><key>f</key><array/></dict >
            \t<key>g</key><array></array><key>h</key><dict></dict><key>i</key><dict/>
            \t<key>j</key><real>2.5<!-- inside --></real><key>k</key><integer>3<!-- inside --></integer>
            </dict >
            </plist>
            """
        let value = try XMLPropertyListReader.decode(Data(xml.utf8))
        #expect(
            value == [
                "a": 1.5, "b": 2, "c": "x", "d": [true, false, "y"], "e": ["f": []], "g": [], "h": [:], "i": [:],
                "j": 2.5, "k": 3,
            ])
    }

    @Test func keysAndStringsBeyondPlainASCII() throws {
        // Entities, CDATA and multi-byte UTF-8 in keys and strings, and a closing tag with a space:
        // all left to the general path, which must read them the same.
        let xml = """
            <plist><dict><key>caf\u{E9}</key><string>\u{65E5}\u{672C}\u{1F600}</string>\
            <key>a&amp;b</key><string>&lt;&#x41;&#66;&gt;</string>\
            <key><![CDATA[<k>]]></key><string>x</string >\
            <key>long key past eight bytes</key><string>a string longer than sixteen bytes</string>\
            <key></key><string></string><key/><string/></dict></plist>
            """
        let value = try XMLPropertyListReader.decode(Data(xml.utf8))
        #expect(
            value == [
                "caf\u{E9}": "\u{65E5}\u{672C}\u{1F600}", "a&b": "<AB>", "<k>": "x",
                "long key past eight bytes": "a string longer than sixteen bytes", "": "",
            ])
    }

    @Test func manyEntriesAndNestedContainersReadBackAsWritten() throws {
        // More entries than the entry room first holds, and arrays inside dictionaries inside
        // arrays, so that the shared room for entries and elements is grown while in use.
        var dictionary: [String: PropertyListValue] = [:]
        for index in 0..<3_000 {
            switch index % 6 {
            case 0: dictionary["key-\(index)"] = .string("value number \(index)")
            case 1: dictionary["key-\(index)"] = .integer(Int64(index) * 1_000_003 - 1_500_000_000)
            case 2: dictionary["key-\(index)"] = .real(Double(index) / 3)
            case 3: dictionary["key-\(index)"] = .bool(index % 2 == 0)
            case 4:
                dictionary["key-\(index)"] = .array(
                    (0..<(index % 40)).map { .array([.integer(Int64($0)), .string("\($0)")]) })
            default:
                dictionary["key-\(index)"] = .dictionary(["inner": .array([.real(-Double(index) / 7), "x"])])
            }
        }
        let value = PropertyListValue.dictionary(dictionary)
        let xml = try PropertyListCodec.encode(value, format: .xml)
        #expect(try XMLPropertyListReader.decode(xml) == value)
    }

    @Test func theDeepestNestingThroughBothPathsDecodesInHalfTheDefaultStack() throws {
        // 511 levels (the deepest accepted), alternating the general path's containers (white
        // space inside the tag) and the fast path's, decoded on a thread of 4 MB, half the usual
        // 8 MB: the inlined fast paths make the reader's frames larger. (Optimised, the reader
        // needs under 384 kB for this; unoptimised builds, as tests run, several times more.)
        var xml = ""
        for level in 0..<511 { xml += level % 2 == 0 ? "<dict ><key>k</key>" : "<array>" }
        xml += "<string>bottom</string>"
        for level in (0..<511).reversed() { xml += level % 2 == 0 ? "</dict>" : "</array>" }
        let data = Data("<plist>\(xml)</plist>".utf8)
        let result = Mutex<Result<PropertyListValue, PropertyListError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            result.withLock { $0 = Result { () throws(PropertyListError) in try XMLPropertyListReader.decode(data) } }
            done.signal()
        }
        thread.stackSize = 4 * 1024 * 1024
        thread.start()
        #expect(done.wait(timeout: .now() + 60) == .success, "the decode did not finish")
        var value = try #require(try result.withLock { $0 }?.get())
        for level in 0..<511 {
            switch value {
            case .dictionary(let entries) where level % 2 == 0: value = entries["k"] ?? .string("missing")
            case .array(let elements) where level % 2 == 1: value = elements.first ?? .string("missing")
            default:
                Issue.record("level \(level) is \(value)")
                return
            }
        }
        #expect(value == "bottom")
    }

    @Test func errorsFromTheFastPathsNameWhatWasWrong() {
        let cases: [(String, String)] = [
            ("<dict><key>a</key><string>b</dict>", "expected </string>"),
            ("<dict><key>a</key></dict>", "expected a value, found </dict>"),
            ("<dict><string>a</string></dict>", "expected <key> in a dictionary"),
            ("<array><integer>1</integer></dict>", "expected </array>"),
            ("<dict><key>a</key><real>1.5</integer></dict>", "expected </real>"),
            ("<dict><key>a</key><integer>15</real></dict>", "expected </integer>"),
            ("<dict><key>a</key><true/><key>b</key>", "expected a value, found </plist>"),
            ("<array><string>a</string>", "expected </array>"),
        ]
        for (body, problem) in cases {
            do {
                let value = try Self.decode(body)
                Issue.record("\(body) decoded as \(value)")
            } catch {
                #expect(error.message.contains("line 1"), "\(error.message)")
                #expect(error.message.contains(problem), "\(body): \(error.message)")
            }
        }
    }
}
