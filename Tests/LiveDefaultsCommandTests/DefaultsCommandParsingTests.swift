import Foundation
import LiveDefaults
import LiveDefaultsTestHelpers
import Testing

@testable import LiveDefaultsCommand

@Suite struct DefaultsCommandParsingTests {
    @Test(
        arguments: [
            (["read"], DefaultsCommand.readAll),
            (["READ", "com.x"], .read(.named("com.x"), key: nil)),
            (["-currentHost", "read", "-g", "k"], .read(.global, key: "k")),
            (["-host", "box", "read", "NSGlobalDomain"], .read(.global, key: nil)),
            (["read", "./prefs/Info"], .read(.path("./prefs/Info"), key: nil)),
            (["read", "/etc/x.plist", "k"], .read(.path("/etc/x"), key: "k")),
            (["read-type", "com.x", "k"], .readType(.named("com.x"), key: "k")),
            (["write", "com.x", "k", "-int", "3"], .write(.named("com.x"), key: "k", .set(.integer(3)))),
            (["write", "com.x", "k", "-5"], .write(.named("com.x"), key: "k", .set("-5"))),
            (["write", "com.x", "k", "-"], .write(.named("com.x"), key: "k", .set("-"))),
            (
                ["write", "com.x", "k", "-array-add", "a", "-bool", "no"],
                .write(.named("com.x"), key: "k", .arrayAdd(["a", .bool(false)]))
            ),
            (
                ["write", "com.x", "k", "-dict-add", "a", "(1)"],
                .write(.named("com.x"), key: "k", .dictionaryAdd(["a": ["1"]]))
            ),
            (["write", "com.x", "{a = b;}"], .writeDomain(.named("com.x"), ["a": "b"])),
            (["write", "com.x", "-int", "3"], .write(.named("com.x"), key: "-int", .set("3"))),
            (["write", "com.x", "k", "<integer>3</integer>"], .write(.named("com.x"), key: "k", .set(.integer(3)))),
            (["write", "com.x", "k", " <true/>"], .write(.named("com.x"), key: "k", .set(.bool(true)))),
            (["write", "com.x", "k", "<0fbd>"], .write(.named("com.x"), key: "k", .set(.data(Data([0x0F, 0xBD]))))),
            (
                ["write", "com.x", "k", "-dict-add", "\"a (b)\"", "<string>c</string>", "-string", "d", "-int", "1"],
                .write(.named("com.x"), key: "k", .dictionaryAdd(["a (b)": "c", "d": .integer(1)]))
            ),
            (["rename", "com.x", "a", "b"], .rename(.named("com.x"), from: "a", to: "b")),
            (["remove", "com.x"], .delete(.named("com.x"), key: nil)),
            (["domains"], .domains),
            (["find", "word"], .find("word")),
            (["import", "com.x", "-"], .importDomain(.named("com.x"), source: "-")),
            (["export", "com.x", "/tmp/o.plist"], .exportDomain(.named("com.x"), destination: "/tmp/o.plist")),
            (["watch", "com.x", "a", "--json", "b"], .watch(.named("com.x"), keys: ["a", "b"], json: true)),
            (["help"], .help),
        ] as [([String], DefaultsCommand)])
    func parses(arguments: [String], expected: DefaultsCommand) throws {
        #expect(try DefaultsCommand.parse(arguments) == expected)
    }

    @Test func errorsQuoteTheUsageOfTheVerb() throws {
        let error = try #require(throws: CommandLineError.self) {
            try DefaultsCommand.parse(["rename", "com.x", "a"])
        }
        #expect(
            error.line
                == "defaults: missing new key. Usage: defaults rename <domain> <old_key> <new_key> (see 'defaults help')"
        )
    }

    @Test(
        arguments: [
            (["write", "com.x", "k", "a (b"], "Could not parse: a (b.  Try single-quoting it.\n"),
            (["write", "com.x", "k", "a", "b"], "Unexpected argument b; leaving defaults unchanged.\n"),
            (["write", "com.x", "k", "-dict", "a"], "Key a lacks a corresponding value\n"),
            (["write", "com.x", "k", "-dict", "(a)", "b"], "Dictionary keys must be strings\n"),
            (
                ["write", "com.x", "k", "-array", "-dict"],
                "Cannot nest composite types (arrays and dictionaries); exiting\n"
            ),
            (["write", "com.x", "k"], "\nRep argument is not a dictionary\nDefaults have not been changed.\n"),
            (["read", "-app", "Mail"], "Couldn't find an application named \"Mail\"; defaults unchanged\n"),
        ] as [([String], String)])
    func mistakesMacOSNamesCarryItsMessageAndStatusOne(arguments: [String], message: String) throws {
        let error = try #require(throws: CommandLineError.self) { try DefaultsCommand.parse(arguments) }
        #expect(error.macOSMessage == message)
        #expect(error.status == 1)
    }

    @Test func aMalformedCommandLineHasNoMacOSMessageAndStatus255() throws {
        let error = try #require(throws: CommandLineError.self) {
            try DefaultsCommand.parse(["write", "com.x", "k", "-bool", "maybe"])
        }
        #expect(error.macOSMessage == nil)
        #expect(error.status == 255)
    }

    @Test func helpIsGeneratedFromTheVerbTable() {
        for verb in CommandVerb.all {
            for form in verb.forms {
                #expect(CommandVerb.helpText.contains(form.summary), "\(verb.name)")
            }
        }
        for flag in ValueArguments.Flag.all {
            #expect(CommandVerb.helpText.contains("  \(flag.helpName) \(flag.helpArguments)\n"))
        }
    }
}

@Suite struct WatchReportTests {
    @Test func humanLineQuotesWhatNeedsItAndMarksAbsentValues() {
        let report = WatchReport(
            domain: "d", key: "the key", oldValue: nil, newValue: ["a b": [1, true]], origin: "external")
        #expect(report.line == #""the key": (none) → {"a b" = (1, 1); } (external)"#)
    }

    @Test func jsonLineMapsEveryKindOfValue() throws {
        let report = WatchReport(
            domain: "d\"q", key: "k\n", oldValue: .data(Data([1, 2])),
            newValue: [
                "s": "x", "i": -1, "u": .unsignedInteger(.max), "r": 1.5, "b": false,
                "t": .date(Date(timeIntervalSince1970: 0)), "nan": .real(.nan), "l": ["y"],
            ], origin: "local")
        #expect(
            report.jsonLine
                == #"{"domain":"d\"q","key":"k\n","old":"AQI=","new":{"b":false,"i":-1,"l":["y"],"nan":"nan","#
                + #""r":1.5,"s":"x","t":"1970-01-01T00:00:00Z","u":18446744073709551615},"origin":"local"}"#)
        #expect(try JSONSerialization.jsonObject(with: Data(report.jsonLine.utf8)) is [String: Any])
    }
}

/// The runner against a domain whose every write fails: the messages a failed write prints.
@Suite struct DefaultsCommandWriteFailureTests {
    private final class UnwritableDomain: CommandDomain, @unchecked Sendable {
        let lastError: DefaultsError? = nil
        func persistentValues() -> [String: PropertyListValue] { ["a": "1"] }
        func set(_ value: PropertyListValue?, forKey key: String) {}
        func replacePersistentValues(_ values: [String: PropertyListValue]?) {}
        func synchronize() throws { throw DefaultsError(.writeFailed, "the disk is full") }
        func watchChanges(queue: DispatchQueue, _ handler: @escaping @Sendable (WatchedChange) -> Void)
            -> any AnyObject & Sendable
        { self }
    }

    private func run(_ arguments: [String]) -> (status: Int32?, error: String) {
        let streams = CapturedCommandIO()
        let runner = DefaultsCommandRunner(
            domains: CommandDomains(directory: URL(fileURLWithPath: "/nonexistent")) { _, _, _ in UnwritableDomain() },
            io: streams.io)
        guard case .exit(let status) = runner.run(arguments) else { return (nil, streams.standardError) }
        return (status, streams.standardError)
    }

    @Test func writeSaysCouldNotWriteAndRenameSaysFailedToWriteThenTheReason() {
        let write = run(["write", "-g", "k", "v"])
        #expect(write.status == 1)
        #expect(write.error == "Could not write domain Apple Global Domain; exiting\ndefaults: the disk is full\n")
        let rename = run(["rename", "com.x", "a", "b"])
        #expect(rename.status == 1)
        #expect(rename.error == "Failed to write domain com.x\ndefaults: the disk is full\n")
    }
}
