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
        /// Values that are not property lists, by key: what is wrong with each ("the value at
        /// revision 7 is not a property list: …"). They read as absent.
        package var unreadable: [String: String]
        fileprivate var mirror: EtcdMirror
    }

    /// One change seen by ``follow(from:onChange:onProblem:onRecovery:)``.
    package struct Change: Sendable {
        package var key: String
        package var old: PropertyListValue?
        package var new: PropertyListValue?
    }

    /// What a call is for, as its failure names it: "cannot read /livedefaults/v1/app/", "cannot
    /// delete key "theme" of /livedefaults/v1/app/".
    package enum Action: Sendable, Equatable {
        /// Reading the suite to show it.
        case read
        /// Changing it: the command's verb ("write", "delete", "rename", "import") and the keys it
        /// changes (nil: the whole suite). Reading the suite first is part of the change.
        case change(verb: String, keys: [String]?)

        package var verb: String {
            switch self {
            case .read: "read"
            case .change(let verb, _): verb
            }
        }

        /// What the action is done to: the suite, or some of its keys.
        func target(_ suite: String) -> String {
            guard case .change(_, let keys?) = self, !keys.isEmpty else { return suite }
            let sorted = keys.sorted()
            let listed =
                sorted.prefix(10).map(\.debugDescription).joined(separator: ", ") + (sorted.count > 10 ? ", …" : "")
            return "\(sorted.count == 1 ? "key" : "keys") \(listed) of \(suite)"
        }
    }

    /// The default root, under which each suite is `<root><suite>/`.
    package static let defaultRoot = "/livedefaults/v1/"

    private let client: EtcdClient
    private let user: String?
    package let prefix: Data
    /// The suite's name.
    private let name: String

    /// The suite `suite` describes, reached with the suite's own client (``FleetSuite`` makes
    /// it: endpoints, credentials, authorities, client certificate, request timeout).
    package init(_ suite: FleetSuite) {
        client = suite.makeClient()
        user = suite.credentials?.user
        prefix = suite.prefix
        name = suite.name
    }

    /// `<root>/<suite>/`, with one `/` between the parts.
    package static func prefix(root: String, suite: String) -> Data {
        let trimmed = root.hasSuffix("/") ? root : root + "/"
        return Data((trimmed + suite + "/").utf8)
    }

    /// The endpoints, as the client tries them.
    package var endpoints: [URL] { client.endpoints }

    /// Every key of the suite, at one revision.
    ///
    /// - Parameter action: What the values are read for (a change reads first); its failure says so.
    /// - Returns: The values, their revision, and the values that are not property lists.
    /// - Throws: ``Failure``, a sentence with the action's verb, the endpoints and the keys.
    package func read(for action: Action = .read) throws(Failure) -> Snapshot {
        let (header, kvs) = try attempt(action) {
            try client.range(prefix: prefix, excluding: FleetAudit.Keys(prefix: prefix).entries)
        }
        var mirror = EtcdMirror(prefix: prefix)
        let result = mirror.resync(header: header, kvs: kvs)
        return Snapshot(
            values: mirror.values, revision: mirror.revision,
            unreadable: Dictionary(
                result.unreadable.map {
                    ($0.key, "the value at revision \($0.revision) is not a property list: \($0.problem)")
                }, uniquingKeysWith: { _, last in last }), mirror: mirror)
    }

    /// No values, at no revision: where following starts when nothing was read.
    package var emptySnapshot: Snapshot {
        Snapshot(values: [:], revision: 0, unreadable: [:], mirror: EtcdMirror(prefix: prefix))
    }

    /// Sets and removes keys in one transaction (split past etcd's 128 operations), each change
    /// with its audit key (docs/design.md, "History: a fleet suite's audit keys").
    ///
    /// - Parameters:
    ///   - set: The keys to set, with their values.
    ///   - remove: The keys to remove.
    ///   - verb: The operation, as a failure names it ("write", "delete", …).
    ///   - origin: The changes' origin in the history; nil for this process's own (`command` when
    ///     it named its command).
    ///   - snapshot: The suite as read before (where the audited write starts); nil: etcd is read
    ///     by the write itself.
    /// - Returns: The revision of the (last) transaction.
    /// - Throws: ``Failure``, a sentence with the verb, the endpoints and the keys.
    @discardableResult
    package func commit(
        set: [String: PropertyListValue], remove: [String], verb: String = "write",
        origin: DefaultsHistoryEntry.Origin? = nil, over snapshot: Snapshot? = nil
    ) throws(Failure) -> Int64 {
        var write = EtcdSuiteWrite(prefix: prefix)
        do throws(EtcdSuiteWrite.EncodingFailure) {
            for (key, value) in set.sorted(by: { $0.key < $1.key }) { try write.set(key, to: value) }
            for key in remove.sorted() { try write.set(key, to: nil) }
        } catch {
            throw Failure(message: "\(error)", problem: .failed(error))
        }
        let action = Action.change(verb: verb, keys: Array(set.keys) + remove)
        let base = (snapshot?.mirror ?? EtcdMirror(prefix: prefix)).auditBase(for: Array(set.keys) + remove)
        let origin = origin ?? HistoryIdentity.defaultOrigin
        return try attempt(action) {
            try write.commitAudited(with: client, base: base, origin: { _ in origin }, writer: .current).revision
        }
    }

    /// The suite's history: its audit keys, oldest first.
    ///
    /// - Throws: ``Failure``, a sentence naming the endpoints.
    package func history() throws(Failure) -> SuiteHistory {
        try attempt(.read) { try FleetAudit.read(client: client, prefix: prefix, suite: name) }
    }

    /// Follows the suite from `snapshot` on: `onChange` gets each burst's per-key changes since,
    /// in order; `onProblem` a sentence when etcd becomes unreachable or a value is unreadable;
    /// `onRecovery` how long etcd was away, once per outage, when it answers again (after the
    /// changes made meanwhile went to `onChange`). Following stops when the returned object is
    /// released.
    package func follow(
        from snapshot: Snapshot, onChange: @escaping @Sendable ([Change]) -> Void,
        onProblem: @escaping @Sendable (RemoteProblem) -> Void,
        onRecovery: @escaping @Sendable (_ outage: TimeInterval) -> Void = { _ in }
    ) -> AnyObject & Sendable {
        let follower = EtcdSuiteFollower(
            client: client, mirror: snapshot.mirror,
            onChange: { changes, _ in onChange(changes.map { Change(key: $0.key, old: $0.old, new: $0.new) }) },
            onProblem: onProblem)
        // When the outage being reported began; the follower tells `offline` once per outage.
        let offlineSince = Locked<Date?>(nil)
        follower.onStatus { status in
            switch status {
            case .offline(let since, _):
                offlineSince.withLock { $0 = $0 ?? since }
            case .live:
                let since = offlineSince.withLock { since in
                    defer { since = nil }
                    return since
                }
                if let since { onRecovery(Date().timeIntervalSince(since)) }
            case .starting:
                break
            }
        }
        follower.start()
        return follower
    }

    /// Runs `body`, and turns its failure into a sentence for `action`.
    private func attempt<T>(_ action: Action, _ body: () throws -> T) throws(Failure) -> T {
        do {
            return try body()
        } catch {
            throw failure(RemoteProblem(error), doing: action)
        }
    }

    /// A sentence for a failure of `action`, with its verb, naming the endpoints and what it was
    /// done to.
    private func failure(_ problem: RemoteProblem, doing action: Action) -> Failure {
        let suite = String(decoding: prefix, as: UTF8.self)
        let endpoints = client.endpoints.map(\.absoluteString).joined(separator: ", ")
        let (verb, target) = (action.verb, action.target(suite))
        let message: String
        switch problem {
        case .unreachable(let error):
            message = "cannot \(verb) \(target): no etcd endpoint answered (\(endpoints)); \(error.message)"
        case .permissionDenied:
            let who = user.map { "etcd user \"\($0)\"" } ?? "this etcd user"
            message = "permission denied: \(who) may not \(verb) \(target) (etcd at \(endpoints))"
        case .authenticationRequired:
            message =
                "etcd at \(endpoints) has authentication on: set ETCDCTL_USER=<name>:<password> "
                + "(or ETCDCTL_USER and ETCDCTL_PASSWORD) to \(verb) \(target)"
        case .authenticationFailed:
            message =
                "etcd at \(endpoints) refused user \"\(user ?? "")\": wrong name or password (ETCDCTL_USER); "
                + "cannot \(verb) \(target)"
        case .refused, .failed, .unreadableValue:
            message = "cannot \(verb) \(target) in etcd at \(endpoints): \(problem)"
        }
        return Failure(message: message, problem: problem)
    }
}
