import Foundation
import LiveDefaults
import LiveDefaultsTestHelpers
import TestSupport
import Testing

@testable import LiveDefaultsEtcd

/// A member serving TLS with a certificate from a private authority made for the test (openssl),
/// beside its plain listener: fleet suites and the `defaults` command reach it over `https://`
/// when told to trust that authority, and say clearly why not when they are not. The system's
/// trust store is libcurl's default; tests may not add to it (a machine-wide setting).
@Suite(.requiresEtcd, .serialized)
struct EtcdTLSTests {
    /// An authority and a certificate for 127.0.0.1 it signed, in a directory of their own.
    final class Certificates {
        let directory: TemporaryDirectory
        var authority: String { directory.path + "/ca.pem" }
        var certificate: String { directory.path + "/server.pem" }
        var key: String { directory.path + "/server.key" }

        init() throws {
            directory = try TemporaryDirectory()
            let curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
            try Self.openssl(
                ["req", "-x509"] + curve + [
                    "-keyout", directory.path + "/ca.key", "-out", directory.path + "/ca.pem", "-days", "1", "-subj",
                    "/CN=LiveDefaults test authority",
                ], in: directory.path)
            try Self.openssl(
                ["req"] + curve + [
                    "-keyout", directory.path + "/server.key", "-out", directory.path + "/server.csr", "-subj",
                    "/CN=127.0.0.1",
                ], in: directory.path)
            try Data("subjectAltName=IP:127.0.0.1\n".utf8).write(to: URL(fileURLWithPath: directory.path + "/ext.cnf"))
            try Self.openssl(
                [
                    "x509", "-req", "-in", directory.path + "/server.csr", "-CA", directory.path + "/ca.pem", "-CAkey",
                    directory.path + "/ca.key", "-CAcreateserial", "-out", directory.path + "/server.pem", "-days", "1",
                    "-extfile", directory.path + "/ext.cnf",
                ], in: directory.path)
        }

        static func openssl(_ arguments: [String], in directory: String) throws {
            let (status, text) = try runToEnd(
                "/usr/bin/openssl", arguments, in: URL(fileURLWithPath: directory))
            guard status == 0 else {
                throw EtcdServerError("openssl \(arguments.prefix(2).joined(separator: " ")) failed: \(text)")
            }
        }
    }

    /// A member listening on plain HTTP (for the harness and the raw writer) and on TLS.
    static func serve(_ certificates: Certificates) async throws -> (server: EtcdServer, secure: URL) {
        let server = try EtcdServer()
        let port = try EtcdServer.freePort()
        let plain = "http://127.0.0.1:\(server.clientPort)"
        try await server.start(extraArguments: [
            "--listen-client-urls", "\(plain),https://127.0.0.1:\(port)", "--advertise-client-urls", plain,
            "--cert-file", certificates.certificate, "--key-file", certificates.key,
        ])
        let secure = try #require(URL(string: "https://127.0.0.1:\(port)"))
        return (server, secure)
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl"), "needs openssl"))
    func aFleetSuiteOverTLSReadsWritesAndWatchesWhenItTrustsTheAuthority() async throws {
        let certificates = try Certificates()
        let (server, secure) = try await Self.serve(certificates)
        defer { server.stop() }
        let scenario = try await FleetScenario(server: server)
        let suite = try FleetSuite(
            name: scenario.name, endpoints: [secure],
            cacheDirectory: scenario.scratch.url.appendingPathComponent("cache"),
            certificateAuthorities: URL(fileURLWithPath: certificates.authority))
        let defaults = try Defaults.fleet(suite)
        let connection = try #require(defaults.fleetConnection)
        #expect(await eventually(within: 30) { connection.state.isLive })
        let log = ChangeLog(defaults)
        defaults.set("dark", forKey: "theme")
        try await connection.synchronize()
        #expect(try await scenario.etcdValues()["theme"] == "dark")
        try await scenario.put(["fontSize": 14])
        #expect(await eventually { defaults.integer(forKey: "fontSize") == 14 })
        #expect(await eventually { log.of("fontSize").last?.newValue == 14 }, "the observer, after the read")
        #expect(log.brokenChains().isEmpty)
        #expect(connection.lastError == nil)
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl"), "needs openssl"))
    func aCertificateTheSystemDoesNotTrustIsRefusedNamingTheCertificate() async throws {
        let certificates = try Certificates()
        let (server, secure) = try await Self.serve(certificates)
        defer { server.stop() }
        let scenario = try await FleetScenario(server: server)
        try await scenario.put(["theme": "dark"])
        // No authorities given: the system's trust store, which does not know the test's authority.
        let suite = try FleetSuite(
            name: scenario.name, endpoints: [secure], cacheDirectory: scenario.scratch.url.appendingPathComponent("c"),
            requestTimeout: .seconds(2))
        let defaults = try Defaults.fleet(suite)
        let connection = try #require(defaults.fleetConnection)
        #expect(
            await eventually(within: 10) {
                connection.backend.reported.contains { $0.code == .remoteUnavailable }
            })
        let report = try #require(connection.backend.reported.first { $0.code == .remoteUnavailable })
        #expect(report.description.lowercased().contains("certificate"), "\(report)")
        #expect(!connection.state.isLive)
        #expect(defaults.string(forKey: "theme") == nil)  // nothing was read from an untrusted peer
    }

    @Test func anUnreadableAuthoritiesFileIsRefusedByName() throws {
        let good = try #require(URL(string: "https://127.0.0.1:2379"))
        #expect {
            try FleetSuite(
                name: "com.example.tls", endpoints: [good],
                certificateAuthorities: URL(fileURLWithPath: "/nonexistent/ca.pem"))
        } throws: { error in
            let error = error as? DefaultsError
            return error?.code == .invalidRemote && error?.description.contains("/nonexistent/ca.pem") == true
        }
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl"), "needs openssl"))
    func theCommandReachesATLSMemberWithEtcdctlsCACertVariable() async throws {
        let certificates = try Certificates()
        let (server, secure) = try await Self.serve(certificates)
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let port = try #require(secure.port)
        let address = "etcds://127.0.0.1:\(port)/com.example.tls-command"
        let trusting = EtcdDefaultsCommandTests.Command(
            directory: directory.url, environment: ["ETCDCTL_CACERT": certificates.authority])
        let written = await trusting.run(["write", address, "theme", "dark"])
        #expect(written.status == 0, "\(written)")
        let read = await trusting.run(["read", address, "theme"])
        #expect(read.status == 0 && read.standardOutput == "dark\n", "\(read)")
        let untrusting = await EtcdDefaultsCommandTests.Command(directory: directory.url).run([
            "read", address, "theme",
        ])
        #expect(untrusting.status == 1)
        #expect(untrusting.standardError.lowercased().contains("certificate"), "\(untrusting)")
    }
}
