import Foundation
import LiveDefaultsPropertyList
import TestSupport
import Testing

@testable import LiveDefaults

@Suite struct SuiteFileTests {
    static let everyType: [String: PropertyListValue] = [
        "string": "héllo wörld ✓",
        "empty": "",
        "int": .integer(-42),
        "int64max": .integer(.max),
        "int64min": .integer(.min),
        "uint64max": .unsignedInteger(.max),
        "double": .real(3.141592653589793),
        "float": .real(Double(Float(1.5))),
        "true": .bool(true),
        "false": .bool(false),
        "date": .date(Date(timeIntervalSince1970: 1_700_000_000)),
        "data": .data(Data([0, 1, 2, 255])),
        "array": ["a", 1, ["nested", .bool(true)]],
        "dictionary": ["k": "v", "inner": ["deep": .real(0.5)]],
        "emptyArray": [],
        "emptyDictionary": [:],
    ]

    @Test(arguments: [PropertyListFormat.binary, .xml])
    func everyValueTypeRoundTripsThroughTheFile(format: PropertyListFormat) throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("com.example.types.plist")
        // Seed the file in the format under test (a new file would be binary).
        let seed = try PropertyListSerialization.data(
            fromPropertyList: ["seed": 1], format: format == .xml ? .xml : .binary, options: 0)
        try seed.write(to: path)
        let defaults = try Defaults(suiteName: "com.example.types", directory: directory.url, watchesFiles: false)
        for (key, value) in Self.everyType { defaults.set(value, forKey: key) }
        try defaults.synchronize()

        let bytes = try Data(contentsOf: path)
        #expect(PropertyListCodec.detectFormat(of: bytes) == format, "the existing format is kept")
        var expected = Self.everyType
        expected["seed"] = 1
        #expect(try PropertyListCodec.decode(bytes).value == .dictionary(expected))
        // Foundation reads what was written, to equal values.
        let foundation = try #require(
            PropertyListSerialization.propertyList(from: bytes, format: nil) as? [String: Any])
        #expect(try PropertyListValue(foundationObject: foundation) == .dictionary(expected))
    }

    @Test func pathsSplitIntoDirectoryAndName() {
        #expect(SuiteFile.directory(of: "/home/u/.config/app.plist") == "/home/u/.config")
        #expect(SuiteFile.name(of: "/home/u/.config/app.plist") == "app.plist")
        #expect(SuiteFile.directory(of: "/app.plist") == "/")
        #expect(SuiteFile.name(of: "/app.plist") == "app.plist")
        #expect(SuiteFile.directory(of: "/d\u{E9}j\u{E0}/vu.plist") == "/d\u{E9}j\u{E0}")
        #expect(SuiteFile.name(of: "/d\u{E9}j\u{E0}/v\u{FC}.plist") == "v\u{FC}.plist")
        #expect(SuiteFile.directory(of: "app.plist") == ".")
    }

    @Test func newFilesAreBinaryWithPrivateModes() throws {
        let directory = try TemporaryDirectory()
        let nested = directory.url.appendingPathComponent("config/sub")
        let defaults = try Defaults(suiteName: "com.example.modes", directory: nested, watchesFiles: false)
        defaults.set(1, forKey: "a")
        try defaults.synchronize()
        let path = nested.appendingPathComponent("com.example.modes.plist").path
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let lock = try FileManager.default.attributesOfItem(atPath: path + ".lock")
        #expect((lock[.posixPermissions] as? Int) == 0o600)
        let directoryAttributes = try FileManager.default.attributesOfItem(atPath: nested.path)
        #expect((directoryAttributes[.posixPermissions] as? Int) == 0o700)
        #expect(PropertyListCodec.detectFormat(of: try Data(contentsOf: URL(fileURLWithPath: path))) == .binary)
    }

    @Test(arguments: [
        ("", "is empty"),
        (".", "names a directory"),
        ("..", "names a directory"),
        ("a/b", "contains \"/\""),
        ("../escape", "contains \"/\""),
        ("nul\0byte", "NUL"),
        (String(repeating: "x", count: 250), "at most 249 bytes"),
    ])
    func invalidSuiteNamesAreRejected(name: String, problem: String) throws {
        let directory = try TemporaryDirectory()
        let error = try #require(throws: DefaultsError.self) {
            _ = try Defaults(suiteName: name, directory: directory.url, watchesFiles: false)
        }
        #expect(error.code == .invalidSuiteName)
        #expect(error.message.contains(problem))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty, "no file was made")
    }

    @Test func longestValidNameIsAccepted() throws {
        let directory = try TemporaryDirectory()
        let name = String(repeating: "x", count: 249)
        let defaults = try Defaults(suiteName: name, directory: directory.url, watchesFiles: false)
        defaults.set(1, forKey: "a")
        try defaults.synchronize()
        #expect(FileManager.default.fileExists(atPath: directory.file(name + ".plist").path))
    }

    /// Each bad file's name and how to make its bytes (Foundation writes the non-dictionary roots).
    static let badFiles: [(String, @Sendable () throws -> Data)] = [
        ("garbage", { Data("this is not a plist {{{".utf8) }),
        ("zero bytes", { Data() }),
        ("truncated binary", { Data("bplist00\u{d1}\u{01}\u{02}".utf8) }),
        ("truncated XML", { Data("<?xml version=\"1.0\"?><plist version=\"1.0\"><dict><key>a</key>".utf8) }),
        (
            "root is an array",
            { try PropertyListSerialization.data(fromPropertyList: [1, 2], format: .binary, options: 0) }
        ),
        ("root is a string", { try PropertyListSerialization.data(fromPropertyList: "s", format: .xml, options: 0) }),
    ]

    @Test(arguments: badFiles)
    func corruptFileIsKeptAsideWithAClearError(name: String, bytes: @Sendable () throws -> Data) throws {
        try Self.expectKeptAsideWithAClearError(try bytes())
    }

    /// Opens a suite whose file holds `bytes`, which do not parse: a clear error, the store usable,
    /// the bytes kept aside by the first write. Returns how long opening took.
    @discardableResult
    static func expectKeptAsideWithAClearError(
        _ bytes: Data, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> Duration {
        let directory = try TemporaryDirectory()
        let path = directory.file("com.example.corrupt.plist")
        try bytes.write(to: path)
        let clock = ContinuousClock()
        let start = clock.now
        let defaults = try Defaults(suiteName: "com.example.corrupt", directory: directory.url, watchesFiles: false)
        let opening = clock.now - start
        let error = try #require(defaults.lastError, sourceLocation: sourceLocation)
        #expect(error.code == .corruptFile, sourceLocation: sourceLocation)
        #expect(error.path == path.path, sourceLocation: sourceLocation)
        #expect(
            error.message.contains(path.path) && error.message.contains("com.example.corrupt"),
            sourceLocation: sourceLocation)
        #expect(
            try Data(contentsOf: path) == bytes, "opening does not touch the bad file", sourceLocation: sourceLocation)

        // The store keeps working; the first write keeps the bad file aside before replacing it.
        defaults.set("works", forKey: "k")
        #expect(defaults.string(forKey: "k") == "works", sourceLocation: sourceLocation)
        try defaults.synchronize()
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        let kept = try #require(
            names.first { $0.hasPrefix("com.example.corrupt.plist.corrupt-") }, sourceLocation: sourceLocation)
        #expect(
            try Data(contentsOf: directory.file(kept)) == bytes, "the original bytes are kept",
            sourceLocation: sourceLocation)
        #expect(
            try PropertyListCodec.decode(Data(contentsOf: path)).value == ["k": "works"], sourceLocation: sourceLocation
        )
        #expect(defaults.lastError == nil, sourceLocation: sourceLocation)
        return opening
    }

    @Test func unwritableDirectoryMakesSynchronizeThrowAndKeepsValues() throws {
        // Root ignores permission bits, so use a directory path that cannot be created instead.
        let directory = try TemporaryDirectory()
        let blocker = directory.file("not-a-directory")
        try Data("x".utf8).write(to: blocker)
        let defaults = try Defaults(suiteName: "com.example.blocked", directory: blocker, watchesFiles: false)
        defaults.set("kept", forKey: "k")
        let error = try #require(throws: DefaultsError.self) { try defaults.synchronize() }
        #expect([.writeFailed, .lockFailed].contains(error.code))
        #expect(error.message.contains("com.example.blocked"))
        #expect(defaults.string(forKey: "k") == "kept")
        // Once the path is usable again, the kept value is written.
        try FileManager.default.removeItem(at: blocker)
        try defaults.synchronize()
        let written = try Data(contentsOf: blocker.appendingPathComponent("com.example.blocked.plist"))
        #expect(try PropertyListCodec.decode(written).value == ["k": "kept"])
    }

    @Test func flushMergesChangesMadeByOthers() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("com.example.merge.plist")
        let defaults = try Defaults(suiteName: "com.example.merge", directory: directory.url, watchesFiles: false)
        defaults.set("mine", forKey: "mine")
        defaults.set("doomed", forKey: "theirsRemoved")
        try defaults.synchronize()
        // Another writer adds a key and removes one behind our back.
        let theirs = try PropertyListSerialization.data(
            fromPropertyList: ["mine": "mine", "theirs": "added"], format: .binary, options: 0)
        try theirs.write(to: path, options: .atomic)
        defaults.set("changed", forKey: "mine")
        try defaults.synchronize()
        #expect(try PropertyListCodec.decode(Data(contentsOf: path)).value == ["mine": "changed", "theirs": "added"])
        #expect(defaults.string(forKey: "theirs") == "added", "the flush brought the other writer's key in")
        #expect(defaults.object(forKey: "theirsRemoved") == nil)
    }

    @Test func symlinkedSuiteFileIsReplacedAtItsTarget() throws {
        let directory = try TemporaryDirectory()
        let dotfiles = directory.url.appendingPathComponent("dotfiles")
        try FileManager.default.createDirectory(at: dotfiles, withIntermediateDirectories: true)
        let target = dotfiles.appendingPathComponent("real.plist")
        try PropertyListSerialization.data(fromPropertyList: ["a": 1], format: .xml, options: 0).write(to: target)
        let link = directory.file("com.example.link.plist")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: target)
        let defaults = try Defaults(suiteName: "com.example.link", directory: directory.url, watchesFiles: false)
        #expect(defaults.integer(forKey: "a") == 1)
        defaults.set(2, forKey: "a")
        try defaults.synchronize()
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link.path) == target.path)
        #expect(try PropertyListCodec.decode(Data(contentsOf: target)).value == ["a": 2])
    }
}
