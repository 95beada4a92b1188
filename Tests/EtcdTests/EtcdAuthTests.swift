import Foundation
import TestSupport
import Testing

@testable import LiveDefaultsEtcd
@testable import LiveDefaultsEtcdClient

/// etcd's users and roles through the client, against a real member with authentication on.
@Suite(.requiresEtcd, .requiresEtcdctl, .serialized)
struct EtcdAuthTests {
    static let prefix = Data("/livedefaults/v1/com.example.secure/".utf8)

    /// A member with a root user, and a service user whose role may only read the suites.
    static func securedServer(tokenTTL: Int = 300) async throws -> EtcdServer {
        let server = try EtcdServer()
        try await server.start(extraArguments: ["--auth-token-ttl", String(tokenTTL)])
        try server.control(["user", "add", "root:rootpw"])
        try server.control(["role", "add", "reader"])
        try server.control(["role", "grant-permission", "reader", "read", "/livedefaults/", "--prefix=true"])
        try server.control(["user", "add", "service:servicepw"])
        try server.control(["user", "grant-role", "service", "reader"])
        try server.control(["auth", "enable"])
        return server
    }

    @Test func aReadOnlyRoleReadsAndIsRefusedAWriteWithPermissionDenied() async throws {
        let server = try await Self.securedServer()
        defer { server.stop() }
        let admin = EtcdClient(endpoints: [server.endpoint], credentials: ("root", "rootpw"))
        _ = try admin.commit(puts: [(Self.prefix + Data("theme".utf8), Data("dark".utf8))], deletes: [])
        let service = EtcdClient(endpoints: [server.endpoint], credentials: ("service", "servicepw"))
        #expect(try service.range(prefix: Self.prefix).kvs.count == 1)
        // etcd answers with an error and an HTTP trailer: the process must survive it.
        let refused = #expect(throws: EtcdError.self) {
            _ = try service.commit(puts: [(Self.prefix + Data("theme".utf8), Data("light".utf8))], deletes: [])
        }
        #expect(refused?.kind == .rejected(code: EtcdError.permissionDenied), "\(String(describing: refused))")
        // Without credentials etcd refuses even a read.
        let anonymous = EtcdClient(endpoints: [server.endpoint])
        let unnamed = #expect(throws: EtcdError.self) { _ = try anonymous.range(prefix: Self.prefix) }
        #expect(unnamed?.message.contains("user name is empty") == true)
    }

    @Test func anExpiredTokenIsRenewedAndTheCallGoesThrough() async throws {
        let server = try await Self.securedServer(tokenTTL: 1)
        defer { server.stop() }
        let admin = EtcdClient(endpoints: [server.endpoint], credentials: ("root", "rootpw"))
        _ = try admin.commit(puts: [(Self.prefix + Data("k".utf8), Data("1".utf8))], deletes: [])
        let first = try #require(admin.currentToken)
        // A simple token expires after its TTL (1 s) without use. Any use would extend it, so the
        // scenario is to leave it unused for three TTLs.
        try await Task.sleep(for: .seconds(3))
        let probe = EtcdClient.Request(
            url: server.endpoint.appendingPathComponent("/v3/kv/range"),
            body: Data("{\"key\":\"\(Self.prefix.base64EncodedString())\"}".utf8), headers: ["Authorization": first])
        #expect(Self.status(of: probe) != 200, "the token expired")
        _ = try admin.commit(puts: [(Self.prefix + Data("k".utf8), Data("2".utf8))], deletes: [])
        #expect(admin.currentToken != first)
        let value = try admin.range(prefix: Self.prefix + Data("k".utf8)).kvs.first?.value?.data
        #expect(value == Data("2".utf8))
    }

    /// The HTTP status of one POST.
    static func status(of request: EtcdClient.Request) -> Int {
        let post = CurlPost(
            url: request.url, body: request.body, headers: request.headers, timeout: 5, idleTimeout: nil
        ) {
            _, _ in
        }
        if case .completed(let status) = post.perform() { return status }
        return 0
    }
}
