import Foundation
import LiveDefaults
import LiveDefaultsTestHelpers
import TestSupport
import Testing

@testable import LiveDefaultsEtcd
@testable import LiveDefaultsEtcdClient

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
            requestTimeout: .seconds(10))
        let defaults = try Defaults.fleet(suite)
        let connection = try #require(defaults.fleetConnection)
        // The refusal names the certificate. (On a loaded machine under the thread sanitizer a
        // handshake can time out first, which is reported too: the suite keeps retrying, so the
        // test waits for the report it is about.)
        func namesTheCertificate(_ report: DefaultsError) -> Bool {
            report.code == .remoteUnavailable && report.description.lowercased().contains("certificate")
        }
        #expect(
            await eventually { connection.backend.reported.contains(where: namesTheCertificate) },
            "\(connection.backend.reported)")
        #expect(!connection.state.isLive)
        #expect(defaults.string(forKey: "theme") == nil)  // nothing was read from an untrusted peer
    }

    /// A client certificate signed by `certificates`' authority, with the common name "service" (or none).
    static func clientCertificate(_ certificates: Certificates, commonName: Bool = true) throws -> (
        certificate: String, key: String
    ) {
        let path = certificates.directory.path
        let name = commonName ? "client" : "anonymous"
        try Certificates.openssl(
            [
                "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
                path + "/\(name).key", "-out", path + "/\(name).csr", "-subj",
                commonName ? "/CN=service" : "/O=LiveDefaults",
            ], in: path)
        try Data("extendedKeyUsage=clientAuth\n".utf8).write(to: URL(fileURLWithPath: path + "/client.cnf"))
        try Certificates.openssl(
            [
                "x509", "-req", "-in", path + "/\(name).csr", "-CA", path + "/ca.pem", "-CAkey", path + "/ca.key",
                "-CAcreateserial", "-out", path + "/\(name).pem", "-days", "1", "-extfile", path + "/client.cnf",
            ], in: path)
        return (path + "/\(name).pem", path + "/\(name).key")
    }

    /// A fleet migration reaches a member started with `--client-cert-auth` with the suite's client
    /// certificate, as the suite's store does (it built its client without one, and was refused).
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl"), "needs openssl"))
    func aFleetMigrationOnAMemberThatAsksForClientCertificatesIsCommitted() async throws {
        let certificates = try Certificates()
        let client = try Self.clientCertificate(certificates)
        let server = try EtcdServer()
        let port = try EtcdServer.freePort()
        let plain = "http://127.0.0.1:\(server.clientPort)"
        try await server.start(extraArguments: [
            "--listen-client-urls", "\(plain),https://127.0.0.1:\(port)", "--advertise-client-urls", plain,
            "--cert-file", certificates.certificate, "--key-file", certificates.key, "--client-cert-auth",
            "--trusted-ca-file", certificates.authority,
        ])
        defer { server.stop() }
        let secure = try #require(URL(string: "https://127.0.0.1:\(port)"))
        let scenario = try await FleetScenario(server: server)
        try await scenario.put(["maxConnections": 8])
        let suite = try FleetSuite(
            name: scenario.name, endpoints: [secure], cacheDirectory: scenario.scratch.url.appendingPathComponent("c"),
            requestTimeout: .seconds(5), certificateAuthorities: URL(fileURLWithPath: certificates.authority),
            clientCertificate: URL(fileURLWithPath: client.certificate), clientKey: URL(fileURLWithPath: client.key))
        let ran = try suite.migrate(to: 1) { step in step.rename("maxConnections", to: "connectionLimit") }
        #expect(ran == [1])
        var values = try await scenario.etcdValues()
        #expect(values.removeValue(forKey: DefaultsMigration.recordKey)?.dictionaryValue?["version"] == 1)
        #expect(values == ["connectionLimit": 8])
        // Done: a second run finds the record and commits nothing.
        #expect(try suite.migrate(to: 1) { step in step.rename("maxConnections", to: "connectionLimit") } == [])
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl"), "needs openssl"))
    func aMemberThatAsksForClientCertificatesTakesASuiteWithOneAndRefusesOneWithoutNamingTheCause() async throws {
        let certificates = try Certificates()
        let client = try Self.clientCertificate(certificates)
        let server = try EtcdServer()
        let port = try EtcdServer.freePort()
        let plain = "http://127.0.0.1:\(server.clientPort)"
        try await server.start(extraArguments: [
            "--listen-client-urls", "\(plain),https://127.0.0.1:\(port)", "--advertise-client-urls", plain,
            "--cert-file", certificates.certificate, "--key-file", certificates.key, "--client-cert-auth",
            "--trusted-ca-file", certificates.authority,
        ])
        defer { server.stop() }
        let secure = try #require(URL(string: "https://127.0.0.1:\(port)"))
        let scenario = try await FleetScenario(server: server)
        try await scenario.put(["theme": "dark"])
        let authority = URL(fileURLWithPath: certificates.authority)

        // Without a certificate: refused, and the report says why and what to give.
        let bare = try FleetSuite(
            name: scenario.name, endpoints: [secure], cacheDirectory: scenario.scratch.url.appendingPathComponent("a"),
            requestTimeout: .seconds(2), certificateAuthorities: authority)
        let refused = try #require(try Defaults.fleet(bare).fleetConnection)
        #expect(await eventually { refused.backend.reported.contains { $0.code == .remoteUnavailable } })
        let report = try #require(refused.backend.reported.first { $0.code == .remoteUnavailable })
        // TLS 1.3 gives the member's alert, or a connection broken while the request was sent.
        #expect(report.message.contains("asks for a client certificate (etcd's --client-cert-auth)"), "\(report)")
        #expect(!refused.state.isLive)

        // With one: live, reads and writes.
        let suite = try FleetSuite(
            name: scenario.name, endpoints: [secure], cacheDirectory: scenario.scratch.url.appendingPathComponent("b"),
            certificateAuthorities: authority, clientCertificate: URL(fileURLWithPath: client.certificate),
            clientKey: URL(fileURLWithPath: client.key))
        let defaults = try Defaults.fleet(suite)
        let connection = try #require(defaults.fleetConnection)
        #expect(await eventually(within: 30) { connection.state.isLive })
        #expect(await eventually { defaults.string(forKey: "theme") == "dark" })
        defaults.set(14, forKey: "fontSize")
        try await connection.synchronize()
        #expect(try await scenario.etcdValues()["fontSize"] == 14)

        // The command, with etcdctl's variables.
        let directory = try TemporaryDirectory()
        let address = "etcds://127.0.0.1:\(port)/\(scenario.name)"
        let trusting = ["ETCDCTL_CACERT": certificates.authority]
        let without = await EtcdDefaultsCommandTests.Command(directory: directory.url, environment: trusting).run([
            "read", address, "theme",
        ])
        #expect(without.status == 1)
        #expect(
            without.standardError.contains("asks for a client certificate (etcd's --client-cert-auth)"), "\(without)")
        var environment = trusting
        environment["ETCDCTL_CERT"] = client.certificate
        environment["ETCDCTL_KEY"] = client.key
        let command = EtcdDefaultsCommandTests.Command(directory: directory.url, environment: environment)
        let written = await command.run(["write", address, "theme", "light"])
        #expect(written.status == 0, "\(written)")
        let read = await command.run(["read", address, "theme"])
        #expect(read.status == 0 && read.standardOutput == "light\n", "\(read)")
        let halfway = await EtcdDefaultsCommandTests.Command(
            directory: directory.url, environment: ["ETCDCTL_CERT": client.certificate]
        ).run(["read", address, "theme"])
        #expect(halfway.status == 1 && halfway.standardError.contains("without ETCDCTL_KEY"), "\(halfway)")
    }

    @Test(
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl"), "needs openssl"),
        .requiresEtcdctl)
    /// etcd 3.4's JSON gateway refuses a certificate with a common name when authentication is on
    /// ("CommonName of client sending a request against gateway will be ignored"): through it, a
    /// certificate cannot name the user. A certificate without one, and an etcd user, get the
    /// user's roles.
    func aCertificateWithACommonNameIsRefusedByTheGatewayAndOneWithoutTakesTheUsersRoles() async throws {
        let certificates = try Certificates()
        let named = try Self.clientCertificate(certificates)  // CN=service
        let anonymous = try Self.clientCertificate(certificates, commonName: false)
        let server = try EtcdServer()
        let port = try EtcdServer.freePort()
        let plain = "http://127.0.0.1:\(server.clientPort)"
        try await server.start(extraArguments: [
            "--listen-client-urls", "\(plain),https://127.0.0.1:\(port)", "--advertise-client-urls", plain,
            "--cert-file", certificates.certificate, "--key-file", certificates.key, "--client-cert-auth",
            "--trusted-ca-file", certificates.authority,
        ])
        defer { server.stop() }
        try server.control(["user", "add", "root:rootpw"])
        try server.control(["role", "add", "reader"])
        try server.control(["role", "grant-permission", "reader", "read", "/livedefaults/", "--prefix=true"])
        try server.control(["user", "add", "service:servicepw"])
        try server.control(["user", "grant-role", "service", "reader"])
        try server.control(["auth", "enable"])
        let directory = try TemporaryDirectory()
        let address = "etcds://127.0.0.1:\(port)/com.example.cn"
        func command(_ user: String?, _ certificate: (certificate: String, key: String))
            -> EtcdDefaultsCommandTests
            .Command
        {
            var environment = [
                "ETCDCTL_CACERT": certificates.authority, "ETCDCTL_CERT": certificate.certificate,
                "ETCDCTL_KEY": certificate.key,
            ]
            environment["ETCDCTL_USER"] = user
            return EtcdDefaultsCommandTests.Command(directory: directory.url, environment: environment)
        }
        let byName = await command(nil, named).run(["read", address, "theme"])
        #expect(byName.status == 1 && byName.standardError.contains("CommonName"), "\(byName)")
        let written = await command("root:rootpw", anonymous).run(["write", address, "theme", "dark"])
        #expect(written.status == 0, "\(written)")
        let service = command("service:servicepw", anonymous)
        let read = await service.run(["read", address, "theme"])
        #expect(read.status == 0 && read.standardOutput == "dark\n", "\(read)")
        let refused = await service.run(["write", address, "theme", "light"])
        #expect(refused.status == 1 && refused.standardError.contains("permission denied"), "\(refused)")
    }

    @Test func aClientCertificateWithoutItsKeyIsRefusedByName() throws {
        let good = try #require(URL(string: "https://127.0.0.1:2379"))
        let directory = try TemporaryDirectory()
        let certificate = directory.url.appendingPathComponent("client.pem")
        try Data("not checked here".utf8).write(to: certificate)
        #expect {
            try FleetSuite(name: "com.example.tls", endpoints: [good], clientCertificate: certificate)
        } throws: { error in
            let error = error as? DefaultsError
            return error?.code == .invalidRemote && error?.message.contains("certificate without its key") == true
        }
        #expect {
            try FleetSuite(
                name: "com.example.tls", endpoints: [good], clientCertificate: certificate,
                clientKey: URL(fileURLWithPath: "/nonexistent/client.key"))
        } throws: { error in
            (error as? DefaultsError)?.message.contains("/nonexistent/client.key") == true
        }
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
