import Foundation
import LiveDefaults
import LiveDefaultsCommand
import LiveDefaultsPropertyList
import TestSupport
import Testing

private struct PathRateLimit: Codable, Sendable, Equatable {
    var perSecond: Int
    var burst: Int
}

extension Defaults.Keys {
    fileprivate static let pathMaxConnections = Defaults.Key<Int>("maxConnections", default: 8)
    fileprivate static let pathRateLimit = Defaults.Key<PathRateLimit>(
        "rateLimit", default: PathRateLimit(perSecond: 10, burst: 1))
}

/// The `defaults` command run in process with every directory in a temporary one: the user's domains
/// (`config`), the system-wide (`xdg`) and managed (`managed`) directories, and the user's schemas.
private struct PathFixture: ~Copyable {
    static let suite = "com.example.flagsvc"
    static let schema = DefaultsSchema(
        suite: suite,
        entries: [
            .init(name: "maxConnections", type: .integer, defaultValue: 8, range: 1...1000),
            .init(.pathRateLimit),
        ])
    let directory: TemporaryDirectory

    init() throws {
        let directory = try TemporaryDirectory()
        for name in ["config", "config/ByHost", "xdg", "managed", "elsewhere"] {
            try FileManager.default.createDirectory(at: directory.file(name), withIntermediateDirectories: true)
        }
        try Self.schema.install(into: directory.file("schemas"))
        self.directory = directory
    }

    var schemas: URL { directory.file("schemas") }

    func run(_ arguments: [String], input: Data = Data()) -> CommandResult {
        let domains = CommandDomains(
            directory: directory.file("config"), schemaDirectories: [schemas],
            administeredSettings: AdministeredSettings(
                systemDirectories: [directory.file("xdg")], managedDirectory: directory.file("managed")))
        return runInProcess(arguments, domains: domains, standardInput: input)
            ?? CommandResult(status: -1, standardOutput: "", standardError: "")
    }

    func succeed(_ arguments: String...) {
        let result = run(arguments)
        #expect(result.status == 0 && result.standardError.isEmpty, "\(arguments): \(result)")
    }

    /// The domain as an administrator types it: `<directory>/<suite>`.
    func domain(_ place: String, _ name: String = PathFixture.suite) -> String {
        directory.file(place).path + "/" + name
    }

    func values(_ domain: String) throws -> [String: PropertyListValue] {
        let data = try Data(contentsOf: URL(fileURLWithPath: domain + ".plist"))
        return try #require(try PropertyListCodec.decode(data).value.dictionaryValue)
    }

    /// Runs `arguments`, expects exit 1 with `facts` in the message, and the file at `domain` byte for byte as before.
    func refused(_ arguments: [String], in domain: String, input: Data = Data(), naming facts: [String]) throws {
        let file = URL(fileURLWithPath: domain + ".plist")
        let before = try Data(contentsOf: file)
        let result = run(arguments, input: input)
        #expect(result.status == 1, "\(arguments): \(result)")
        for fact in facts { #expect(result.standardError.contains(fact), "\(arguments) names \(fact): \(result)") }
        #expect(result.standardError.contains(schemas.path), "the message names the schema: \(result)")
        #expect(result.standardError.hasSuffix("Defaults have not been changed.\n"), "\(result)")
        #expect(try Data(contentsOf: file) == before, "\(arguments): the file is byte for byte as it was")
    }
}

/// A file given by path that is a layer of a suite — a system-wide or managed file, the user's own
/// file, a ByHost file — is checked against the suite's installed schema, as the named domain is;
/// any other path has no schema, as on macOS.
@Suite struct PathSchemaCommandTests {
    static let suite = PathFixture.suite

    @Test(arguments: ["xdg", "managed", "config"])
    func aWrongTypeAndAnOutOfRangeValueAreRefusedForAFileOfTheSuitesLayers(place: String) throws {
        let fixture = try PathFixture()
        let domain = fixture.domain(place)
        fixture.succeed("write", domain, "maxConnections", "-int", "50")
        try fixture.refused(
            ["write", domain, "maxConnections", "-string", "big"], in: domain,
            naming: ["key maxConnections of \(domain) expects an integer, not a string (\"big\")"])
        try fixture.refused(
            ["write", domain, "maxConnections", "big"], in: domain,
            naming: ["key maxConnections of \(domain) expects an integer", "big"])
        try fixture.refused(
            ["write", domain, "maxConnections", "2000"], in: domain,
            naming: ["key maxConnections of \(domain) allows only 1 to 1000", "2000"])
        try fixture.refused(
            ["write", domain + ".plist", "maxConnections", "-int", "2000"], in: domain,
            naming: ["key maxConnections", "allows only 1 to 1000", "2000"])
        #expect(try fixture.values(domain) == ["maxConnections": 50])
    }

    @Test(arguments: ["xdg", "managed"])
    func aValidValueIsAcceptedAndStoredWithTheSchemasType(place: String) throws {
        let fixture = try PathFixture()
        let domain = fixture.domain(place)
        fixture.succeed("write", domain, "maxConnections", "20")
        #expect(try fixture.values(domain) == ["maxConnections": 20], "a bare number is stored as an integer")
        fixture.succeed("write", domain, "maxConnections", "-int", "1000")
        #expect(try fixture.values(domain) == ["maxConnections": 1000])
        // The suite reads it as a system-wide (or managed) value: what was accepted is what the app can use.
        let defaults = try Defaults(
            suiteName: Self.suite, directory: fixture.directory.file("config"), watchesFiles: false,
            administeredSettings: AdministeredSettings(
                systemDirectories: [fixture.directory.file("xdg")], managedDirectory: nil))
        if place == "xdg" { #expect(defaults[.pathMaxConnections] == 1000) }
    }

    @Test func aPathOutsideTheSuitesLocationsHasNoSchemaAsOnMacOS() throws {
        let fixture = try PathFixture()
        try FileManager.default.createDirectory(
            at: fixture.directory.file("xdg/sub"), withIntermediateDirectories: true)
        for domain in [fixture.domain("elsewhere"), fixture.domain("xdg/sub")] {
            fixture.succeed("write", domain, "maxConnections", "-string", "big")
            fixture.succeed("write", domain, "maxConnections", "2000")
            #expect(try fixture.values(domain) == ["maxConnections": "2000"], "\(domain): stored as typed, as macOS")
        }
    }

    @Test func aFileOfAnotherNameInASuiteDirectoryTakesThatSuitesSchemaOrNone() throws {
        let fixture = try PathFixture()
        let other = fixture.domain("xdg", "com.example.other")
        fixture.succeed("write", other, "maxConnections", "-string", "big")
        #expect(try fixture.values(other) == ["maxConnections": "big"], "no schema is installed for that suite")
    }

    @Test func aByHostFileOfTheSuiteIsChecked() throws {
        let fixture = try PathFixture()
        let domain = fixture.domain("config/ByHost", Self.suite + ".laptop")
        fixture.succeed("write", domain, "maxConnections", "-int", "5")
        try fixture.refused(
            ["write", domain, "maxConnections", "-string", "big"], in: domain,
            naming: ["key maxConnections of \(domain) expects an integer, not a string (\"big\")"])
    }

    @Test func aSuiteDirectoryReachedThroughASymbolicLinkIsStillTheSuites() throws {
        let fixture = try PathFixture()
        let link = fixture.directory.file("etc-xdg")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: fixture.directory.file("xdg"))
        let domain = link.path + "/" + Self.suite
        fixture.succeed("write", domain, "maxConnections", "-int", "50")
        try fixture.refused(
            ["write", domain, "maxConnections", "-int", "2000"], in: domain, naming: ["allows only 1 to 1000"])
    }

    @Test func theGlobalDomainsFileInASystemDirectoryTakesTheGlobalDomainsSchema() throws {
        let fixture = try PathFixture()
        try DefaultsSchema(
            suite: DomainReference.globalDomainName,
            entries: [.init(name: "AppleLocale", type: .string, choices: ["en_GB", "de_DE"])]
        ).install(into: fixture.schemas)
        let domain = fixture.domain("xdg", DomainReference.globalDomainName)
        fixture.succeed("write", domain, "AppleLocale", "en_GB")
        try fixture.refused(["write", domain, "AppleLocale", "xx"], in: domain, naming: ["key AppleLocale", "xx"])
        // As `-g` is checked against the same schema.
        let named = fixture.run(["write", "-g", "AppleLocale", "xx"])
        #expect(named.status == 1 && named.standardError.contains("allows only"), "\(named)")
    }

    @Test func aSecretInAManagedFileIsRedactedByReadAsTheNamedDomainsIs() throws {
        let fixture = try PathFixture()
        try DefaultsSchema(suite: Self.suite, entries: [.init(name: "apiToken", type: .string, isSecret: true)])
            .install(into: fixture.schemas)
        let domain = fixture.domain("managed")
        fixture.succeed("write", domain, "apiToken", "s3cret")
        let read = fixture.run(["read", domain, "apiToken"])
        #expect(read.status == 0 && read.standardOutput == "<secret>\n", "\(read)")
        let shown = fixture.run(["read", domain, "apiToken", "--show-secrets"])
        #expect(shown.standardOutput == "s3cret\n", "\(shown)")
    }

    // MARK: Every verb that writes, with a field inside a value

    @Test func everyVerbThatWritesChecksFieldsInsideAValueOfAManagedFile() throws {
        let fixture = try PathFixture()
        let domain = fixture.domain("managed")
        fixture.succeed("write", domain, "rateLimit", "{ perSecond = 40; burst = 3; }")
        fixture.succeed("write", domain, "spare", "{ perSecond = 40; }")
        let missing = "  rateLimit.burst: missing\n"
        let wrong = "  rateLimit.burst: expects an integer, not a string (\"lots\")\n"
        try fixture.refused(["write", domain, "rateLimit", "{ perSecond = 40; }"], in: domain, naming: [missing])
        try fixture.refused(
            ["write", domain, "{ rateLimit = { perSecond = 40; burst = lots; }; }"], in: domain, naming: [wrong])
        try fixture.refused(["write", domain, "rateLimit", "-dict-add", "burst", "lots"], in: domain, naming: [wrong])
        try fixture.refused(["rename", domain, "spare", "rateLimit"], in: domain, naming: [missing])
        try fixture.refused(
            ["import", domain, "-"], in: domain, input: Data("{ rateLimit = { perSecond = 40; burst = lots; }; }".utf8),
            naming: [wrong])
        try fixture.refused(
            ["write", domain, "maxConnections", "-array-add", "1"], in: domain,
            naming: ["key maxConnections of \(domain) expects an integer"])
        fixture.succeed("write", domain, "rateLimit", "-dict-add", "burst", "7")
        #expect(
            try fixture.values(domain) == [
                "rateLimit": ["perSecond": 40, "burst": 7], "spare": ["perSecond": "40"],
            ])
        // Deleting a key is allowed, as for a named domain: the suite reads its default.
        fixture.succeed("delete", domain, "rateLimit")
    }
}
