import Foundation
import LiveDefaults
import LiveDefaultsCommand
import LiveDefaultsPropertyList
import LiveDefaultsTestHelpers
import TestSupport
import Testing

/// One test's world: a temporary `XDG_CONFIG_HOME` and the built `defaults` binary pointed at it.
private typealias DefaultsFixture = LiveDefaultsTestHelpers.DefaultsFixture<CommandRunner>

extension LiveDefaultsTestHelpers.DefaultsFixture where Runner == CommandRunner {
    init() throws {
        try self.init { directory in
            CommandRunner(
                executable: ProductRunner.productsDirectory.appendingPathComponent("defaults"),
                environment: ["XDG_CONFIG_HOME": directory.path, "HOME": directory.path])
        }
    }
}

/// The struct of docs/defaults-command.md's nested example.
private struct NestedRollout: Codable, Sendable, Equatable {
    var percent: Int
    var regions: [String]
}

extension Defaults.Keys {
    fileprivate static let nestedRollout = Defaults.Key<NestedRollout>(
        "rollout", default: NestedRollout(percent: 0, regions: []))
}

/// The `defaults` binary itself: what only a process shows (its exit status, its standard streams, standard
/// input, a write one process makes and another reads, `watch` running until stopped). Everything the command
/// does is tested in process through its seam, in LiveDefaultsCommandTests.
@Suite struct DefaultsBinaryTests {
    @Test func aWriteByOneProcessIsReadByTheNext() throws {
        let fixture = try DefaultsFixture()
        try fixture.runner.run(["write", "com.example.app", "count", "-int", "14"]).expectSuccess()
        try fixture.runner.run(["write", "com.example.app", "name", "hello world"]).expectSuccess()
        #expect(try fixture.values("com.example.app") == ["count": 14, "name": "hello world"])
        #expect(try fixture.succeed("read", "com.example.app", "count") == "14\n")
        #expect(try fixture.succeed("read-type", "com.example.app", "count") == "Type is integer\n")
        #expect(
            try fixture.succeed("read", "com.example.app") == "{\n    count = 14;\n    name = \"hello world\";\n}\n")
    }

    @Test func aFailureExitsOneWithTheMessageOnStandardError() throws {
        let fixture = try DefaultsFixture()
        let result = try fixture.defaults("read", "com.none")
        #expect(result.status == 1, "\(result)")
        #expect(result.standardOutput.isEmpty, "\(result)")
        #expect(result.standardError == "\nDomain com.none does not exist\n", "\(result)")
    }

    @Test func aMalformedCommandLineExits255WithTheUsageOnStandardOutputAndOneLineOnStandardError() throws {
        let fixture = try DefaultsFixture()
        let result = try fixture.defaults("write", "com.x", "k", "-int", "abc")
        #expect(result.status == 255, "\(result)")
        #expect(result.standardOutput == CommandVerb.helpText, "\(result)")
        #expect(result.standardError.hasPrefix("defaults: -int 'abc' is not an integer."), "\(result)")
        #expect(result.standardError.filter { $0 == "\n" }.count == 1, "\(result)")
        #expect(!FileManager.default.fileExists(atPath: fixture.file("com.x").path))
    }

    @Test func importReadsStandardInputAndExportWritesStandardOutput() throws {
        let fixture = try DefaultsFixture()
        let values: [String: PropertyListValue] = ["a": 1, "b": ["c", true], "d": .data(Data([1, 2]))]
        let input = try PropertyListCodec.encode(.dictionary(values), format: .binary)
        try fixture.succeed("import", "com.x", "-", input: input)
        #expect(try fixture.values("com.x") == values)
        let xml = try fixture.succeed("export", "com.x", "-")
        #expect(xml.hasPrefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>"))
        #expect(try PropertyListCodec.decode(Data(xml.utf8)).value == .dictionary(values))
    }

    // The usage text, as the binary prints it.
    @Test(arguments: [[], ["frobnicate"], ["frobnicate", "com.x"], ["-currentHost"]])
    func aBadVerbOrNoVerbPrintsTheFullUsageOnStandardOutputAndExits255(arguments: [String]) throws {
        let fixture = try DefaultsFixture()
        let help = try fixture.succeed("help")
        #expect(help.hasPrefix("Command line interface to a user's defaults.\nSyntax:\n"))
        let result = try fixture.runner.run(arguments)
        #expect(result.status == 255, "\(result)")
        #expect(result.standardOutput == help, "\(result)")
    }

    // MARK: nested values

    /// A struct with an array inside, written with `defaults write` in each form docs/defaults-command.md
    /// shows, and read back through a typed key; `-dict` cannot nest, as on macOS.
    @Test(arguments: [
        "{ percent = 40; regions = (eu, us); }",
        "<dict><key>percent</key><integer>40</integer>"
            + "<key>regions</key><array><string>eu</string><string>us</string></array></dict>",
    ])
    func aNestedValueWrittenByTheCommandDecodesThroughATypedKey(literal: String) throws {
        let fixture = try DefaultsFixture()
        try fixture.succeed("write", "com.example.app", "rollout", literal)
        let defaults = try Defaults(suiteName: "com.example.app", directory: fixture.directory.url, watchesFiles: false)
        #expect(defaults.decodingError(for: .nestedRollout) == nil)
        #expect(defaults[.nestedRollout] == NestedRollout(percent: 40, regions: ["eu", "us"]))
    }

    @Test func dictCannotNestAndSaysSo() throws {
        let fixture = try DefaultsFixture()
        let result = try fixture.defaults(
            "write", "com.example.app", "rollout", "-dict", "percent", "-int", "40", "regions", "-array", "eu", "us")
        #expect(result.status == 1, "\(result)")
        #expect(result.standardError.contains("Cannot nest composite types"), "\(result)")
        #expect(!FileManager.default.fileExists(atPath: fixture.file("com.example.app").path))
    }

    // MARK: watch

    @Test func watchJSONReportsAWriteByAnotherProcess() throws {
        let fixture = try DefaultsFixture()
        try fixture.seed("com.x", ["theme": "light"])
        let watcher = try fixture.runner.start(["watch", "com.x", "--json"])
        defer { watcher.terminate() }
        try watcher.waitForLine(
            on: .error, where: { $0.hasPrefix("Watching com.x") }, describedAs: "the watch to start")

        try fixture.succeed("write", "com.x", "theme", "dark blue")
        let line = try watcher.waitForLine(on: .output, where: { !$0.isEmpty }, describedAs: "a JSON line")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String])
        #expect(
            object == ["domain": "com.x", "key": "theme", "old": "light", "new": "dark blue", "origin": "external"])

        try fixture.succeed("write", "com.x", "size", "-int", "12")
        let second = try watcher.waitForLine(
            on: .output, where: { $0.contains("\"size\"") }, describedAs: "the size line")
        #expect(second == #"{"domain":"com.x","key":"size","old":null,"new":12,"origin":"external"}"#)
    }

    @Test func watchPrintsOneLinePerChangeOfTheKeysAskedFor() throws {
        let fixture = try DefaultsFixture()
        try fixture.seed("com.x", ["theme": "light"])
        let watcher = try fixture.runner.start(["watch", "com.x", "theme"])
        defer { watcher.terminate() }
        try watcher.waitForLine(on: .error, where: { $0.hasPrefix("Watching theme in com.x") }, describedAs: "start")

        try fixture.succeed("write", "com.x", "ignored", "-int", "1")
        try fixture.succeed("write", "com.x", "theme", "-array", "a", "b c")
        // Printed before the next change is made: a watcher that gets the CPU only after the delete
        // (a loaded machine) reads both in one reload, rightly one change, light → (none).
        try watcher.waitForLine(on: .output, where: { $0.contains("b c") }, describedAs: "the array")
        try fixture.succeed("delete", "com.x", "theme")
        try watcher.waitForLine(on: .output, where: { $0.contains("(none)") }, describedAs: "the deletion")
        let lines = watcher.text(of: .output).split(separator: "\n")
        #expect(lines == [#"theme: light → (a, "b c") (external)"#, #"theme: (a, "b c") → (none) (external)"#])
    }
}
