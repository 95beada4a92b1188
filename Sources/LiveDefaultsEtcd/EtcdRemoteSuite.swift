import Foundation
import LiveDefaults
import LiveDefaultsEtcdClient

/// One remote suite for tools: read it once, commit changes, follow it — the layout of the library's
/// fleet suites (`<root>/<suite>/<key>`, NFC keys, one property-list document per value), so that
/// what a tool writes the remote store reads exactly (docs/design.md, "Fleet settings: the
/// `defaults` command"). The `defaults` command is its user.
///
/// Its calls block the calling thread until etcd answers or the request timeout passes, as the
/// client's do.
package final class EtcdRemoteSuite: Sendable {
    /// A failure, in a sentence that names the endpoint or the user and what to do.
    package struct Failure: Error, Sendable, CustomStringConvertible {
        package var message: String
        /// What went wrong, classified as the fleet backend classifies it.
        package var problem: RemoteProblem
        /// etcd refused for lack of permission (a read-only role writing, a user without access).
        package var isPermissionDenied: Bool {
            switch problem {
            case .permissionDenied, .authenticationRequired, .authenticationFailed: true
            default: false
            }
        }
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
        let (header, kvs) = try attempt("read") { try client.range(prefix: prefix) }
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
                throw Failure(message: "the value of \"\(key)\" cannot be encoded: \(error)", problem: .failed(error))
            }
        }
        let deletes = remove.sorted().map { EtcdMirror.etcdKey($0, prefix: prefix) }
        return try attempt("write") { try client.commit(puts: puts, deletes: deletes) }
    }

    /// Follows the suite from `snapshot` on: `onChange` gets each burst's per-key changes since,
    /// in order; `onProblem` a sentence when etcd becomes unreachable or a value is unreadable.
    /// Following stops when the returned object is released.
    package func follow(
        from snapshot: Snapshot, onChange: @escaping @Sendable ([Change]) -> Void,
        onProblem: @escaping @Sendable (RemoteProblem) -> Void
    ) -> AnyObject & Sendable {
        let follower = EtcdSuiteFollower(
            client: client, mirror: snapshot.mirror,
            onChange: { changes, _ in onChange(changes.map { Change(key: $0.key, old: $0.old, new: $0.new) }) },
            onProblem: onProblem)
        follower.start()
        return follower
    }

    /// Runs `body`, and turns its failure into a sentence for `action` ("read", "write").
    private func attempt<T>(_ action: String, _ body: () throws -> T) throws(Failure) -> T {
        do {
            return try body()
        } catch {
            throw failure(RemoteProblem(error), doing: action)
        }
    }

    /// A sentence for a failure of `action` ("read", "write").
    private func failure(_ problem: RemoteProblem, doing action: String) -> Failure {
        let suite = String(decoding: prefix, as: UTF8.self)
        let endpoints = client.endpoints.map(\.absoluteString).joined(separator: ", ")
        let message: String
        switch problem {
        case .unreachable(let error):
            message = "cannot \(action) \(suite): no etcd endpoint answered (\(endpoints)); \(error.message)"
        case .permissionDenied:
            let who = user.map { "etcd user \"\($0)\"" } ?? "this etcd user"
            message = "permission denied: \(who) may not \(action) \(suite) (etcd at \(endpoints))"
        case .authenticationRequired:
            message =
                "etcd at \(endpoints) has authentication on: set ETCDCTL_USER=<name>:<password> "
                + "(or ETCDCTL_USER and ETCDCTL_PASSWORD) to \(action) \(suite)"
        case .authenticationFailed:
            message = "etcd at \(endpoints) refused user \"\(user ?? "")\": wrong name or password (ETCDCTL_USER)"
        case .refused, .failed, .unreadableValue:
            message = "cannot \(action) \(suite) in etcd at \(endpoints): \(problem)"
        }
        return Failure(message: message, problem: problem)
    }
}
