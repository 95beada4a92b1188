import Foundation
import LiveDefaults

/// One remote suite for tools: read it once, commit changes, follow it — the layout of the library's
/// fleet suites (`<root>/<suite>/<key>`, NFC keys, one property-list document per value), so that
/// what a tool writes the remote store reads exactly (docs/design.md, "Fleet settings: the
/// `defaults` command"). The `defaults` command is its user.
///
/// Its calls block the calling thread: they run on a thread of their own (``blocking(_:)``), not on
/// Swift's cooperative pool, so a synchronous tool can call them from anywhere.
package final class EtcdRemoteSuite: Sendable {
    /// A failure, in a sentence that names the endpoint or the user and what to do.
    package struct Failure: Error, Sendable, CustomStringConvertible {
        package var message: String
        /// etcd refused for lack of permission (a read-only role writing, a user without access).
        package var isPermissionDenied: Bool
        package var description: String { message }
    }

    /// The suite as read: its values, and the revision they are at.
    package struct Snapshot: Sendable {
        package var values: [String: PropertyListValue]
        package var revision: Int64
        /// Values that are not property lists: the sentence naming the key and revision.
        package var unreadable: [String]
        fileprivate var mirror: EtcdMirror
    }

    /// One change seen by ``follow(from:onChange:onProblem:)``.
    package struct Change: Sendable {
        package var key: String
        package var old: PropertyListValue?
        package var new: PropertyListValue?
    }

    /// The default root, under which each suite is `<root><suite>/`.
    package static let defaultRoot = "/livedefaults/v1/"

    private let client: EtcdClient
    private let user: String?
    package let prefix: Data

    /// - Parameters:
    ///   - endpoints: Client URLs of the cluster's members, tried in turn.
    ///   - root: The key prefix suites live under (`/livedefaults/v1/`); a missing trailing `/` is added.
    ///   - suite: The suite's name, the last segment of its prefix.
    ///   - credentials: An etcd user; from the environment, never from a suite file.
    ///   - requestTimeout: How long one call may wait for a member's answer.
    ///   - certificateAuthorities: A PEM file TLS trusts; nil for the system's trust store.
    package init(
        endpoints: [URL], root: String, suite: String, credentials: (user: String, password: String)?,
        requestTimeout: TimeInterval = 10, certificateAuthorities: String? = nil
    ) {
        client = EtcdClient(
            endpoints: endpoints, credentials: credentials, requestTimeout: requestTimeout,
            certificateAuthorities: certificateAuthorities)
        user = credentials?.user
        prefix = Self.prefix(root: root, suite: suite)
    }

    /// `<root>/<suite>/`, with one `/` between the parts.
    package static func prefix(root: String, suite: String) -> Data {
        let trimmed = root.hasSuffix("/") ? root : root + "/"
        return Data((trimmed + suite + "/").utf8)
    }

    /// The endpoints, as the client tries them.
    package var endpoints: [URL] { client.endpoints }

    /// Every key of the suite, at one revision.
    package func read() throws(Failure) -> Snapshot {
        let (client, prefix) = (client, prefix)
        let (header, kvs) = try blocking(doing: "read") { try await client.range(prefix: prefix) }
        var mirror = EtcdMirror(prefix: prefix)
        let result = mirror.resync(header: header, kvs: kvs)
        return Snapshot(
            values: mirror.values, revision: mirror.revision,
            unreadable: result.unreadable.map {
                "the value of \"\($0.key)\" at revision \($0.revision) is not a property list: \($0.problem)"
            }, mirror: mirror)
    }

    /// Sets and removes keys in one transaction (split past etcd's 128 operations).
    ///
    /// - Returns: The revision of the (last) transaction.
    @discardableResult
    package func commit(set: [String: PropertyListValue], remove: [String]) throws(Failure) -> Int64 {
        let prefix = prefix
        var puts: [(key: Data, value: Data)] = []
        for (key, value) in set.sorted(by: { $0.key < $1.key }) {
            do {
                puts.append((EtcdMirror.etcdKey(key, prefix: prefix), try EtcdMirror.encode(value)))
            } catch {
                throw Failure(message: "the value of \"\(key)\" cannot be encoded: \(error)", isPermissionDenied: false)
            }
        }
        let deletes = remove.sorted().map { EtcdMirror.etcdKey($0, prefix: prefix) }
        let client = client
        let sendable = puts.map { SendablePut(key: $0.key, value: $0.value) }
        return try blocking(doing: "write") {
            try await client.commit(puts: sendable.map { ($0.key, $0.value) }, deletes: deletes)
        }
    }

    private struct SendablePut: Sendable {
        var key: Data
        var value: Data
    }

    /// Follows the suite from `snapshot` on: `onChange` gets each burst's per-key changes since,
    /// in order; `onProblem` a sentence when etcd becomes unreachable or a value is unreadable.
    /// Following stops when the returned object is released.
    package func follow(
        from snapshot: Snapshot, onChange: @escaping @Sendable ([Change]) -> Void,
        onProblem: @escaping @Sendable (String) -> Void
    ) -> AnyObject & Sendable {
        let follower = EtcdSuiteFollower(
            client: client, mirror: snapshot.mirror,
            onChange: { changes, _ in onChange(changes.map { Change(key: $0.key, old: $0.old, new: $0.new) }) },
            onProblem: onProblem)
        follower.start()
        return follower
    }

    /// Runs `body` to its end outside Swift's cooperative pool (``blocking(within:_:)``), so a
    /// synchronous caller may wait for it even where every pool thread is busy.
    private func blocking<T: Sendable>(doing action: String, _ body: @escaping @Sendable () async throws -> T)
        throws(Failure) -> T
    {
        do {
            return try LiveDefaultsEtcd.blocking(body)
        } catch {
            throw failure(error, doing: action)
        }
    }

    /// A sentence for an error of `action` ("read", "write").
    private func failure(_ error: any Error, doing action: String) -> Failure {
        let suite = String(decoding: prefix, as: UTF8.self)
        let endpoints = client.endpoints.map(\.absoluteString).joined(separator: ", ")
        guard let error = error as? EtcdError else {
            return Failure(
                message: "cannot \(action) \(suite) in etcd at \(endpoints): \(error)", isPermissionDenied: false)
        }
        switch error.kind {
        case .unavailable:
            return Failure(
                message: "cannot \(action) \(suite): no etcd endpoint answered (\(endpoints)); \(error.message)",
                isPermissionDenied: false)
        case .rejected(let code)
        where code == EtcdError.permissionDenied || error.message.contains("permission denied"):
            let who = user.map { "etcd user \"\($0)\"" } ?? "this etcd user"
            return Failure(
                message: "permission denied: \(who) may not \(action) \(suite) (etcd at \(endpoints))",
                isPermissionDenied: true)
        case .rejected where error.message.contains("user name is empty"):
            return Failure(
                message:
                    "etcd at \(endpoints) has authentication on: set ETCDCTL_USER=<name>:<password> "
                    + "(or ETCDCTL_USER and ETCDCTL_PASSWORD) to \(action) \(suite)",
                isPermissionDenied: true)
        case .rejected where error.message.contains("authentication failed"):
            return Failure(
                message: "etcd at \(endpoints) refused user \"\(user ?? "")\": wrong name or password (ETCDCTL_USER)",
                isPermissionDenied: true)
        default:
            return Failure(
                message: "cannot \(action) \(suite) in etcd at \(endpoints): \(error.message)",
                isPermissionDenied: false)
        }
    }
}
