import Foundation
import LiveDefaults
import TestSupport
import Testing

private enum Colour: String, CaseIterable, Codable { case light, dark, system }
private struct Window: Codable, Sendable, Equatable { var width = 800, height = 600 }

extension Defaults.Keys {
    fileprivate static let schemaFontSize = Defaults.Key<Int>("fontSize", default: 12)
    fileprivate static let schemaColour = Defaults.Key<Colour>("colour", default: .system)
    fileprivate static let schemaApiToken = Defaults.Key<String?>("apiToken").secret()
    fileprivate static let schemaVolume = Defaults.Key<Double>("volume", default: 0.5)
    fileprivate static let schemaAutosave = Defaults.Key<Bool>("autosave", default: true)
    fileprivate static let schemaWindow = Defaults.Key<Window>("window", default: Window())
    fileprivate static let schemaRecent = Defaults.Key<[String]>("recent", default: [])
    fileprivate static let schemaHomepage = Defaults.Key<URL?>("homepage")
}

@Suite struct DefaultsSchemaTests {
    private static func appSchema(suite: String = "com.example.schema") -> DefaultsSchema {
        DefaultsSchema(
            suite: suite,
            entries: [
                .init(.schemaFontSize, summary: "Text size in points", range: 8...72),
                .init(.schemaColour, summary: "Colour scheme"),
                .init(.schemaApiToken, summary: "Token for the sync service"),
                .init(.schemaVolume, range: 0...1),
                .init(.schemaAutosave),
                .init(.schemaWindow),
                .init(.schemaRecent),
                .init(.schemaHomepage),
            ])
    }

    @Test func entriesTakeTheirTypeDefaultChoicesAndSecrecyFromTheKeys() throws {
        let schema = Self.appSchema()
        #expect(schema.entries.map(\.name) == schema.entries.map(\.name).sorted())
        let fontSize = try #require(schema["fontSize"])
        #expect(fontSize.type == .integer && fontSize.defaultValue == 12 && fontSize.range == 8...72)
        let colour = try #require(schema["colour"])
        #expect(colour.type == .string && colour.defaultValue == "system")
        #expect(colour.choices == ["light", "dark", "system"], "a CaseIterable enum's raw values")
        let token = try #require(schema["apiToken"])
        #expect(token.type == .string && token.defaultValue == nil && token.isSecret)
        #expect(schema["volume"]?.type == .real && schema["autosave"]?.type == .boolean)
        #expect(
            schema["window"]?.type == .dictionary && schema["window"]?.defaultValue == ["width": 800, "height": 600])
        #expect(schema["recent"]?.type == .array && schema["homepage"]?.type == .string)
        #expect(schema["autosave"]?.isSecret == false)
    }

    @Test func roundTripFromKeysToFileToTheLoadedSchema() throws {
        let directory = try TemporaryDirectory()
        let schema = Self.appSchema()
        let file = try schema.install(into: directory.url.appendingPathComponent("user/livedefaults/schemas"))
        #expect(file.lastPathComponent == "com.example.schema.plist")
        let text = try String(contentsOf: file, encoding: .utf8)
        #expect(text.hasPrefix("<?xml"), "an XML property list, readable in an editor")
        let environment = ["XDG_DATA_HOME": directory.path + "/user", "XDG_DATA_DIRS": directory.path + "/none"]
        let found = try #require(try DefaultsSchema.find(suite: "com.example.schema", environment: environment))
        #expect(found.schema == schema)
        #expect(found.file.path == file.path)
        #expect(try DefaultsSchema(propertyListData: try schema.propertyListData()) == schema)
    }

    @Test func theUserDirectoryComesFirstThenTheSystemDirectoriesInOrder() throws {
        let directory = try TemporaryDirectory()
        let environment = [
            "XDG_DATA_HOME": directory.path + "/user",
            "XDG_DATA_DIRS": "relative/ignored:\(directory.path)/first:\(directory.path)/second",
        ]
        #expect(
            DefaultsSchema.searchDirectories(environment: environment).map(\.path) == [
                directory.path + "/user/livedefaults/schemas", directory.path + "/first/livedefaults/schemas",
                directory.path + "/second/livedefaults/schemas",
            ])
        #expect(
            DefaultsSchema.searchDirectories(environment: ["HOME": "/home/u"]).map(\.path) == [
                "/home/u/.local/share/livedefaults/schemas", "/usr/local/share/livedefaults/schemas",
                "/usr/share/livedefaults/schemas",
            ])
        // Joined as paths, with no doubled slash where a directory given with a trailing one meets the rest.
        #expect(
            DefaultsSchema.searchDirectories(environment: ["XDG_DATA_HOME": "/data/", "XDG_DATA_DIRS": "/a/:/"])
                .map(\.path) == ["/data/livedefaults/schemas", "/a/livedefaults/schemas", "/livedefaults/schemas"])
        #expect(
            DefaultsSchema.searchDirectories(environment: ["HOME": "/"]).first?.path
                == "/.local/share/livedefaults/schemas")
        let second = DefaultsSchema(suite: "s", entries: [.init(name: "from", type: .string, defaultValue: "second")])
        let first = DefaultsSchema(suite: "s", entries: [.init(name: "from", type: .string, defaultValue: "first")])
        try second.install(into: URL(fileURLWithPath: directory.path + "/second/livedefaults/schemas"))
        #expect(try DefaultsSchema.find(suite: "s", environment: environment)?.schema == second)
        try first.install(into: URL(fileURLWithPath: directory.path + "/first/livedefaults/schemas"))
        #expect(try DefaultsSchema.find(suite: "s", environment: environment)?.schema == first)
        let user = DefaultsSchema(suite: "s", entries: [.init(name: "from", type: .string, defaultValue: "user")])
        try user.install(into: URL(fileURLWithPath: directory.path + "/user/livedefaults/schemas"))
        #expect(try DefaultsSchema.find(suite: "s", environment: environment)?.schema == user)
    }

    @Test func oldStyleTextIsReadWithItsNumbersAndBooleans() throws {
        let text =
            "{ format = 1; suite = s; keys = { size = { type = integer; default = 12; choices = (12, 14); "
            + "range = { min = 8; max = 72; }; }; token = { type = string; secret = YES; }; }; }"
        let schema = try DefaultsSchema(propertyListData: Data(text.utf8))
        #expect(
            schema["size"] == .init(name: "size", type: .integer, defaultValue: 12, choices: [12, 14], range: 8...72))
        #expect(schema["token"]?.isSecret == true)
    }

    @Test(arguments: [
        ("<plist><string>x</string></plist>", "the root is not a dictionary"),
        ("{ keys = {}; }", "no \"suite\""),
        (
            "{ suite = s; keys = { a = { type = colour; }; }; }",
            "key \"a\" has the type \"colour\", which is not one of"
        ),
        (
            "{ suite = s; keys = { connectionLimit = { type = int; }; }; }",
            "key \"connectionLimit\" has the type \"int\""
        ),
        ("{ suite = s; keys = { a = { summary = x; }; }; }", "key \"a\" has no \"type\""),
        (
            "{ suite = s; keys = { r = { type = dictionary; fields = { burst = { type = int; }; }; }; }; }",
            "field \"burst\" of key \"r\" has the type \"int\""
        ),
        (
            "{ suite = s; keys = { r = { type = string; fields = {}; }; }; }",
            "\"fields\" of key \"r\" needs the type dictionary"
        ),
        (
            "{ suite = s; keys = { r = { type = array; elements = { type = integer; optional = maybe; }; }; }; }",
            "\"optional\" of the elements of key \"r\" is not a Boolean"
        ),
        ("{ suite = s; keys = { a = { type = integer; default = big; }; }; }", "the default of key \"a\""),
        ("{ suite = s; keys = { a = { type = string; choices = (x, <01>); }; }; }", "the choices of key \"a\""),
        (
            "{ suite = s; keys = { a = { type = integer; range = { min = 9; max = 1; }; }; }; }",
            "the range of key \"a\""
        ),
        ("{ format = 2; suite = s; keys = {}; }", "is not one this version reads"),
    ])
    func aBadDocumentIsRefusedNamingWhatIsWrong(document: String, problem: String) {
        #expect {
            _ = try DefaultsSchema(propertyListData: Data(document.utf8), source: "/x/s.plist")
        } throws: { error in
            guard let error = error as? DefaultsError else { return false }
            return error.code == .invalidSchema && error.message.contains("/x/s.plist")
                && error.message.contains(problem)
        }
    }

    @Test func theAppsKeysAndTheInstalledSchemaCannotDisagreeSilently() throws {
        let directory = try TemporaryDirectory()
        let suite = "com.example.mismatch.\(UUID().uuidString)"
        let environment = ["XDG_DATA_HOME": directory.path, "XDG_DATA_DIRS": directory.path + "/none"]
        let schemas = URL(fileURLWithPath: directory.path + "/livedefaults/schemas")
        #expect(Self.appSchema(suite: suite).checkInstalled(environment: environment).isEmpty, "nothing installed")
        // The package shipped last version's schema: fontSize was a string then, and there was no apiToken.
        var old = Self.appSchema(suite: suite)
        old = DefaultsSchema(
            suite: suite,
            entries: old.entries.filter { $0.name != "apiToken" }.map {
                $0.name == "fontSize" ? .init(name: "fontSize", type: .string, defaultValue: "12") : $0
            })
        try old.install(into: schemas)
        let reported = Locked<[DefaultsError]>([])
        let reporting = DefaultsErrorReporting.listen { error in
            if error.suite == suite { reported.withLock { $0.append(error) } }
        }
        defer { reporting.cancel() }
        let differences = Self.appSchema(suite: suite).checkInstalled(environment: environment)
        #expect(differences.contains("key \"fontSize\" is integer in the app, string installed"))
        #expect(differences.contains("key \"apiToken\" is missing from the installed schema"))
        _ = Self.appSchema(suite: suite).checkInstalled(environment: environment)
        let reports = reported.withLock { $0 }
        #expect(reports.count == 1, "reported once, however often it is checked")
        #expect(reports.first?.code == .schemaMismatch && reports.first?.message.contains("fontSize") == true)
        try Self.appSchema(suite: suite).install(into: schemas)
        #expect(Self.appSchema(suite: suite).checkInstalled(environment: environment).isEmpty)
    }

    @Test func aSecretKeysValueIsLeftOutOfTheDecodingFailure() throws {
        let directory = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: "com.example.secret", directory: directory.url)
        let token = Defaults.Key<Int>("token", default: 0).secret()
        let plain = Defaults.Key<Int>("plain", default: 0)
        defaults.set("hunter2-secret", forKey: "token")
        defaults.set("visible-value", forKey: "plain")
        let secretError = try #require(defaults.decodingError(for: token))
        #expect(!secretError.description.contains("hunter2"), "neither the message nor the cause shows it")
        #expect(secretError.message.contains("string, secret value not shown"))
        let plainError = try #require(defaults.decodingError(for: plain))
        #expect(plainError.message.contains("visible-value"), "a key that is not secret still shows its value")
        #expect(defaults[token] == 0 && token.isSecret && !plain.isSecret)
    }
}
