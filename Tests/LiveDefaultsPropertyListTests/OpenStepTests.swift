import Foundation
import LiveDefaultsPropertyList
import Testing

@testable import LiveDefaults

@Suite struct OpenStepParserTests {
    @Test(
        arguments: [
            ("abc", PropertyListValue.string("abc")),
            ("14", .string("14")),
            ("com.example.app", .string("com.example.app")),
            ("/usr/local/bin:$PATH-x_y+z", .string("/usr/local/bin:$PATH-x_y+z")),
            (#""hello world""#, .string("hello world")),
            ("'single quoted'", .string("single quoted")),
            (#""""#, .string("")),
            (#""a\nb\tc\"d\\e\'f""#, .string("a\nb\tc\"d\\e'f")),
            (#""\a\b\f\r\v""#, .string("\u{07}\u{08}\u{0C}\r\u{0B}")),
            (#""\U00e9\u20AC""#, .string("é€")),
            (#""\Ud83d\Ude00""#, .string("😀")),
            (#""\101\060\7""#, .string("A0\u{07}")),
            (#""\q""#, .string("q")),
            ("\"é raw UTF-8 ✓\"", .string("é raw UTF-8 ✓")),
            ("<0fbd77 1f>", .data(Data([0x0F, 0xBD, 0x77, 0x1F]))),
            ("<DEADbeef>", .data(Data([0xDE, 0xAD, 0xBE, 0xEF]))),
            ("<>", .data(Data())),
            ("()", .array([])),
            ("(a, b, )", .array(["a", "b"])),
            ("(a,(b,(c)))", .array(["a", .array(["b", .array(["c"])])])),
            ("{}", .dictionary([:])),
            ("{ k = v; }", .dictionary(["k": "v"])),
            (#"{ "a b" = (1, 2); c = { d = <00>; }; }"#, ["a b": ["1", "2"], "c": ["d": .data(Data([0]))]]),
            ("{ key; }", .dictionary(["key": "key"])),
            ("{ k = 1; k = 2; }", .dictionary(["k": "2"])),
            ("", .dictionary([:])),
            ("  // nothing but a comment\n", .dictionary([:])),
            ("a = 1; \"b\" = (x);", ["a": "1", "b": ["x"]]),
            ("<*I14>", .integer(14)),
            ("<*I-3>", .integer(-3)),
            ("<*I18446744073709551615>", .unsignedInteger(UInt64.max)),
            ("<*R1.5>", .real(1.5)),
            ("<*BY>", .bool(true)),
            ("<*BN>", .bool(false)),
            ("<*D2024-01-01 00:00:00 +0000>", .date(Date(timeIntervalSince1970: 1_704_067_200))),
        ] as [(String, PropertyListValue)])
    func parses(text: String, expected: PropertyListValue) throws {
        #expect(try OpenStepParser.parse(text) == expected)
    }

    @Test func commentsAndWhiteSpaceMayGoAnywhere() throws {
        let text = """
            /* leading */ {
                // a line comment
                a /* between */ = /* here */ (1, /* in */ 2) /* and */ ;
                b = x; // trailing
            }
            // after
            """
        #expect(try OpenStepParser.parse(text) == ["a": ["1", "2"], "b": "x"])
    }

    @Test(
        arguments: [
            ("{ a = b;", 1, 1, "never closed with '}'"),
            ("(a, b", 1, 1, "never closed with ')'"),
            ("{\n  a = (1,\n  2;\n}", 3, 4, "expected ',' or ')'"),
            ("{\n  a = b\n}", 3, 1, "expected ';'"),
            ("{ a b; }", 1, 5, "expected '='"),
            ("\"abc", 1, 1, "never closed"),
            ("<0fb>", 1, 1, "odd number of hex digits"),
            ("<0fzz>", 1, 4, "only hex digits"),
            ("(a) b", 1, 5, "after the end of the property list"),
            ("{ a = ; }", 1, 7, "where a value was expected"),
            ("{ (a) = b; }", 1, 3, "key must be a string"),
            ("/* open", 1, 1, "comment opened here is never closed"),
            ("(a,\r\n b,\r\n @)", 3, 2, "unexpected '@'"),
            ("<*D2024-02-30 00:00:00 +0000>", 1, 1, "is not a date"),
            ("(<*D2024-02-31 00:00:00 +0000>)", 1, 2, "is not a date"),
            ("<*D2024-02-29 23:59:60 +0000>", 1, 1, "is not a date"),
            ("<*Ixyz>", 1, 1, "is not an integer"),
            ("<*Q1>", 1, 1, "unknown typed value"),
            (#""\Uzz""#, 1, 2, "hex digits"),
            (")", 1, 1, "unexpected ')'"),
            ("a = 1; }", 1, 8, "unexpected '}'"),
        ] as [(String, Int, Int, String)])
    func reportsTheProblemWithItsLineAndColumn(text: String, line: Int, column: Int, problem: String) throws {
        let error = try #require(throws: PropertyListError.self) { try OpenStepParser.parse(text) }
        #expect(DefaultsError(error).code == .malformedPropertyList)
        #expect(error.message.contains("line \(line), column \(column)"), "\(error.message)")
        #expect(error.message.contains(problem), "\(error.message)")
    }

    @Test func deepNestingIsAnErrorNotACrash() throws {
        let depth = 100_000
        let text = String(repeating: "(", count: depth) + String(repeating: ")", count: depth)
        let error = try #require(throws: PropertyListError.self) { try OpenStepParser.parse(text) }
        #expect(error.message.contains("nest more than 512 deep"))
        #expect(error.message.contains("column 513"))
    }

    @Test func nestingUpToTheLimitIsAccepted() throws {
        let depth = OpenStepParser.maximumDepth
        let text = String(repeating: "(", count: depth) + String(repeating: ")", count: depth)
        var value = try OpenStepParser.parse(text)
        var levels = 0
        while case .array(let elements) = value {
            levels += 1
            value = elements.first ?? .string("end")
        }
        #expect(levels == depth)
    }
}

@Suite struct OpenStepWriterTests {
    @Test func printsNestedContainersAsDefaultsReadDoes() {
        let value: PropertyListValue = [
            "persistent-apps": [
                [
                    "GUID": 1_644_535_571,
                    "tile-data": [
                        "file-data": ["_CFURLString": "file:///Applications/Safari.app/"], "file-label": "Safari",
                    ],
                ],
                [],
            ],
            "autohide": true,
            "empty": [:],
        ]
        let expected = """
            {
                autohide = 1;
                empty =     {
                };
                "persistent-apps" =     (
                            {
                        GUID = 1644535571;
                        "tile-data" =             {
                            "file-data" =                 {
                                "_CFURLString" = "file:///Applications/Safari.app/";
                            };
                            "file-label" = Safari;
                        };
                    },
                            (
                    )
                );
            }
            """
        #expect(OpenStepWriter.string(for: value) == expected)
    }

    @Test(arguments: [
        ("plain", "plain"),
        ("CamelCase42", "CamelCase42"),
        ("", #""""#),
        ("two words", #""two words""#),
        ("tile-data", #""tile-data""#),
        ("_private", #""_private""#),
        ("com.apple.dock", #""com.apple.dock""#),
        ("a/b:c$d", #""a/b:c$d""#),
        ("say \"hi\"", #""say \"hi\"""#),
        ("back\\slash", #""back\\slash""#),
        ("line\nbreak\ttab\rcr", #""line\nbreak\ttab\rcr""#),
        ("café", #""caf\U00e9""#),
        ("😀", #""\Ud83d\Ude00""#),
        ("bell\u{07}", #""bell\U0007""#),
    ])
    func quotesStringsInsideContainersOnlyWhenNeeded(string: String, printed: String) {
        #expect(OpenStepWriter.string(for: ["k": .string(string)]) == "{\n    k = \(printed);\n}")
        #expect(OpenStepWriter.string(for: [.string(string)]) == "(\n    \(printed)\n)")
    }

    @Test(
        arguments: [
            (PropertyListValue.integer(14), "14", "14"),
            (.integer(-3), "-3", #""-3""#),
            (.unsignedInteger(UInt64.max), "18446744073709551615", "18446744073709551615"),
            (.real(1), "1", "1"),
            (.real(0.5), "0.5", #""0.5""#),
            (.real(0.1), "0.1", #""0.1""#),
            (.real(1e100), "1e+100", #""1e+100""#),
            (.bool(true), "1", "1"),
            (.bool(false), "0", "0"),
            (
                .date(Date(timeIntervalSince1970: 1_704_110_400.75)), "2024-01-01 12:00:00 +0000",
                #""2024-01-01 12:00:00 +0000""#
            ),
            (.date(Date(timeIntervalSince1970: -1)), "1969-12-31 23:59:59 +0000", #""1969-12-31 23:59:59 +0000""#),
            (
                .data(Data([0xDE, 0xAD, 0xBE, 0xEF])), "{length = 4, bytes = 0xdeadbeef}",
                "{length = 4, bytes = 0xdeadbeef}"
            ),
            (.data(Data()), "{length = 0, bytes = 0x}", "{length = 0, bytes = 0x}"),
            (
                .data(Data(0..<24)), "{length = 24, bytes = 0x000102030405060708090a0b0c0d0e0f1011121314151617}",
                "{length = 24, bytes = 0x000102030405060708090a0b0c0d0e0f1011121314151617}"
            ),
            (
                .data(Data(0..<55)),
                "{length = 55, bytes = 0x00010203 04050607 08090a0b 0c0d0e0f ... 2f303132 33343536 }",
                "{length = 55, bytes = 0x00010203 04050607 08090a0b 0c0d0e0f ... 2f303132 33343536 }"
            ),
            (.string("two words"), "two words", #""two words""#),
            (.string(""), "", #""""#),
        ] as [(PropertyListValue, String, String)])
    func printsScalarsOnTheirOwnAndInsideContainers(value: PropertyListValue, alone: String, inside: String) {
        #expect(OpenStepWriter.string(for: value) == alone)
        #expect(OpenStepWriter.string(for: ["k": value]) == "{\n    k = \(inside);\n}")
    }

    @Test func sortsKeysByUTF16CodeUnitsLikeCompare() {
        let value: PropertyListValue = ["b": 1, "B": 2, "a": 3, "_": 4, "Z": 5, "é": 6]
        let keys = OpenStepWriter.string(for: value).split(separator: "\n").dropFirst().dropLast()
            .map { $0.trimmingCharacters(in: .whitespaces).components(separatedBy: " = ")[0] }
        #expect(keys == ["B", "Z", "\"_\"", "a", "b", "\"\\U00e9\""])
    }

    @Test func emptyContainersAtTheTopLevel() {
        #expect(OpenStepWriter.string(for: [:]) == "{\n}")
        #expect(OpenStepWriter.string(for: []) == "(\n)")
    }
}

@Suite struct OpenStepRoundTripTests {
    static let values: [PropertyListValue] = [
        "plain",
        "",
        "needs \"quotes\" and \\ and\nnew lines\tand tabs",
        "unicode é € 😀 and a bell \u{07}",
        .data(Data([0, 1, 2, 0xFF, 0x10, 0x20])),
        .data(Data(repeating: 0xAB, count: 100)),
        ["a", ["b", ["c", [:]]], []],
        [
            "string": "value", "quoted key": "x", "": "empty key", "int": 14, "negative": -3,
            "huge": .unsignedInteger(UInt64.max), "real": 0.1, "tiny": .real(.leastNonzeroMagnitude), "yes": true,
            "no": false,
            "date": .date(Date(timeIntervalSince1970: 1_704_110_400)),
            "nested": ["list": [1, 2.5, "three", ["four": 4]], "dict": ["deeper": ["deepest": "x"]]],
        ],
    ]

    @Test(arguments: values)
    func typedStyleReadsBackToTheSameValue(value: PropertyListValue) throws {
        let text = OpenStepWriter.string(for: value, style: .typed)
        #expect(try OpenStepParser.parse(text) == value, "\(text)")
    }

    @Test func defaultsReadStyleReadsBackAsStrings() throws {
        let value: PropertyListValue = [
            "name": "two words", "count": 14, "ratio": 0.5, "on": true, "list": ["a b", "c"], "key-\"q\"": "é\n",
        ]
        let expected: PropertyListValue = [
            "name": "two words", "count": "14", "ratio": "0.5", "on": "1", "list": ["a b", "c"], "key-\"q\"": "é\n",
        ]
        #expect(try OpenStepParser.parse(OpenStepWriter.string(for: value)) == expected)
    }
}

@Suite struct PropertyListDateFormatTests {
    @Test(arguments: [
        ("2024-01-01 12:00:00 +0000", 1_704_110_400.0),
        ("2024-01-01 14:00:00 +0200", 1_704_110_400.0),
        ("2024-01-01T12:00:00Z", 1_704_110_400.0),
        ("2024-01-01T13:30:00+01:30", 1_704_110_400.0),
        ("2024-01-01", 1_704_067_200.0),
        ("2024-02-29 00:00:00 +0000", 1_709_164_800.0),
        ("1969-12-31 23:59:59 +0000", -1.0),
    ])
    func parses(text: String, seconds: Double) {
        #expect(PropertyListDateFormat.date(from: text) == Date(timeIntervalSince1970: seconds))
    }

    @Test(arguments: [
        "2023-02-29", "2024-02-30 00:00:00 +0000", "2024-02-31T00:00:00Z", "2024-12-31 23:59:60 +0000",
        "2024-13-01", "2024-01-01 24:00:00 +0000",
        "2024-01-01 12:60:00 +0000", "yesterday", "2024-1-1", "2024-01-01 12:00:00 +0000 extra", "",
    ])
    func rejectsImpossibleOrUnknownDates(text: String) {
        #expect(PropertyListDateFormat.date(from: text) == nil)
    }
}
