import Foundation
import LiveDefaults
import Testing

@testable import LiveDefaultsEtcd
@testable import LiveDefaultsEtcdClient

/// A fleet suite's description: what it accepts, and the errors that name what was wrong (no etcd
/// needed).
struct FleetSuiteDescriptionTests {
    @Test func aDescriptionHasItsPrefixAndACacheDirectoryPerClusterAndRoot() throws {
        let endpoint = try #require(URL(string: "http://127.0.0.1:2379"))
        let suite = try FleetSuite(name: "com.example.app", endpoints: [endpoint], root: "/livedefaults/v1/prod/")
        #expect(suite.root == "/livedefaults/v1/prod")
        #expect(suite.prefix == Data("/livedefaults/v1/prod/com.example.app/".utf8))
        let other = try FleetSuite(name: "com.example.app", endpoints: [endpoint], root: "/livedefaults/v1/test")
        #expect(suite.cacheLocationDirectory != other.cacheLocationDirectory)
        // Without a directory of its own: the XDG cache directory, else ~/.cache.
        let environment = ProcessInfo.processInfo.environment
        let base =
            environment["XDG_CACHE_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? ((environment["HOME"] ?? NSHomeDirectory()) + "/.cache")
        #expect(suite.cacheLocationDirectory.hasPrefix(base + "/livedefaults/etcd/"))
        // Two descriptions of one suite are one store, whether or not the cache directory exists yet.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        let before = try FleetSuite(name: "s", endpoints: [endpoint], cacheDirectory: directory)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let after = try FleetSuite(
            name: "s", endpoints: [endpoint], cacheDirectory: URL(fileURLWithPath: directory.path))
        #expect(before == after)
    }

    @Test func badDescriptionsAreRefusedNamingWhatIsWrong() throws {
        let endpoint = try #require(URL(string: "http://127.0.0.1:2379"))
        let cases: [(make: () throws -> FleetSuite, code: DefaultsError.Code, names: String)] = [
            ({ try FleetSuite(name: "a/b", endpoints: [endpoint]) }, .invalidSuiteName, "\"/\""),
            ({ try FleetSuite(name: "s", endpoints: []) }, .invalidRemote, "no etcd endpoint"),
            (
                { try FleetSuite(name: "s", endpoints: [URL(string: "ftp://etcd:2379")!]) }, .invalidRemote,
                "ftp://etcd:2379"
            ),
            ({ try FleetSuite(name: "s", endpoints: [URL(fileURLWithPath: "/tmp")]) }, .invalidRemote, "file://"),
            ({ try FleetSuite(name: "s", endpoints: [endpoint], root: "livedefaults") }, .invalidRemote, "must start"),
            (
                { try FleetSuite(name: "s", endpoints: [endpoint], requestTimeout: .zero) }, .invalidRemote,
                "more than zero"
            ),
            (
                { try FleetSuite(name: "s", endpoints: [endpoint], stallCheckInterval: .zero) }, .invalidRemote,
                "stall check interval"
            ),
            (
                { try FleetSuite(name: "s", endpoints: [endpoint], stallCheckTimeout: .seconds(-1)) }, .invalidRemote,
                "stall check timeout"
            ),
        ]
        for (make, code, names) in cases {
            let error = #expect(throws: DefaultsError.self) { _ = try make() }
            #expect(error?.code == code)
            #expect(error?.message.contains(names) == true, "\(String(describing: error))")
        }
    }

    @Test func credentialsNeverShowTheirPassword() {
        let credentials = FleetCredentials(user: "service", password: "s3cret")
        #expect(!"\(credentials)".contains("s3cret"))
        #expect("\(credentials)".contains("service"))
        #expect(
            FleetCredentials.fromEnvironment(user: "LIVEDEFAULTS_TEST_UNSET_U", password: "LIVEDEFAULTS_TEST_UNSET_P")
                == nil)
    }
}
