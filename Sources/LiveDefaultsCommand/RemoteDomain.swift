import Foundation
import LiveDefaults
import LiveDefaultsEtcd

/// A suite kept in etcd, as the `defaults` command names it:
/// `etcd://<host>:<port>[,<host>:<port>…]/[<root>/]<suite>` (`etcds://` for TLS).
///
/// The path's last segment is the suite; the segments before it are the root its keys live under
/// (`/livedefaults/v1/` when there are none), so `etcd://10.0.0.5:2379/com.example.app` is the suite
/// `com.example.app` under `/livedefaults/v1/`, and `etcd://h:2379/livedefaults/v1/prod/com.example.app`
/// the same suite under `/livedefaults/v1/prod/`. A port left out is 2379. With no host
/// (`etcd:///com.example.app`) the endpoints are `$ETCDCTL_ENDPOINTS`, as for `etcdctl`. Credentials
/// come from the environment only (``RemoteCommandDomain/credentials(from:)``), never from the address.
package struct RemoteSuiteAddress: Hashable, Sendable {
    /// The address as typed (how messages name the domain).
    package var text: String
    /// `http` or `https`.
    package var scheme: String
    /// `host:port` of each endpoint; empty: `$ETCDCTL_ENDPOINTS`.
    package var hosts: [String]
    /// The key prefix suites live under, with a `/` at each end.
    package var root: String
    package var suite: String

    /// Whether `argument` is meant as a remote suite (it starts with `etcd://` or `etcds://`).
    package static func isRemote(_ argument: String) -> Bool {
        argument.hasPrefix("etcd://") || argument.hasPrefix("etcds://")
    }

    /// Parses an address; the error says what is wrong with it.
    package init(_ text: String) throws(AddressError) {
        self.text = text
        let rest: Substring
        if text.hasPrefix("etcd://") {
            scheme = "http"
            rest = text.dropFirst("etcd://".count)
        } else if text.hasPrefix("etcds://") {
            scheme = "https"
            rest = text.dropFirst("etcds://".count)
        } else {
            throw AddressError("'\(text)' is not an etcd address (etcd://<host>:<port>/[<root>/]<suite>)")
        }
        guard let slash = rest.firstIndex(of: "/") else {
            throw AddressError("'\(text)' names no suite: add /<suite> after the endpoints")
        }
        let authority = rest[..<slash]
        if authority.contains("@") {
            throw AddressError(
                "'\(text)' carries credentials; give them in ETCDCTL_USER (and ETCDCTL_PASSWORD), never in the address")
        }
        hosts =
            try authority.isEmpty
            ? []
            : authority.split(separator: ",", omittingEmptySubsequences: false).map {
                (host: Substring) throws(AddressError) -> String in try Self.hostAndPort(host, in: text)
            }
        let segments = rest[slash...].split(separator: "/").map(String.init)
        guard let suite = segments.last else {
            throw AddressError("'\(text)' names no suite: add /<suite> after the endpoints")
        }
        do throws(DefaultsError) {
            try SuiteLocation.validate(suiteName: suite)
        } catch {
            throw AddressError("'\(text)': \(error.message)")
        }
        self.suite = suite
        root =
            segments.count == 1
            ? EtcdRemoteSuite.defaultRoot : "/" + segments.dropLast().joined(separator: "/") + "/"
    }

    private static func hostAndPort(_ host: Substring, in text: String) throws(AddressError) -> String {
        guard !host.isEmpty else { throw AddressError("'\(text)' has an empty endpoint between commas") }
        // `[::1]:2379`, `[::1]`, `name:2379`, `name`.
        let closing = host.lastIndex(of: "]")
        if let colon = host.lastIndex(of: ":"), closing.map({ colon > $0 }) ?? true {
            let port = host[host.index(after: colon)...]
            guard let number = Int(port), (1...65535).contains(number) else {
                throw AddressError("'\(text)': '\(port)' is not a port (1-65535) in endpoint '\(host)'")
            }
            guard colon > host.startIndex else { throw AddressError("'\(text)': endpoint '\(host)' has no host") }
            return String(host)
        }
        return host + ":2379"
    }

    /// The client URLs: from the address, else from `ETCDCTL_ENDPOINTS`.
    package func endpoints(environment: [String: String]) throws(AddressError) -> [URL] {
        if hosts.isEmpty {
            let listed = (environment["ETCDCTL_ENDPOINTS"] ?? "").split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespaces)
            }.filter { !$0.isEmpty }
            guard !listed.isEmpty else {
                throw AddressError("'\(text)' names no endpoint and ETCDCTL_ENDPOINTS is not set")
            }
            return try listed.map { (entry: String) throws(AddressError) -> URL in
                let withScheme = entry.contains("://") ? entry : "\(scheme)://\(entry)"
                guard let url = URL(string: withScheme), url.host != nil else {
                    throw AddressError("ETCDCTL_ENDPOINTS: '\(entry)' is not an endpoint URL")
                }
                return url
            }
        }
        return try hosts.map { (host: String) throws(AddressError) -> URL in
            guard let url = URL(string: "\(scheme)://\(host)") else {
                throw AddressError("'\(text)': '\(host)' is not a host name")
            }
            return url
        }
    }

    /// The suite as the library describes it, from the address and etcdctl's variables: the
    /// command reaches etcd with the client a fleet suite makes, no other.
    ///
    /// - Throws: ``AddressError`` naming what is wrong with the address or the environment.
    package func fleetSuite(environment: [String: String]) throws(AddressError) -> FleetSuite {
        let endpoints = try endpoints(environment: environment)
        let credentials = try RemoteCommandDomain.credentials(from: environment)
        let authorities = try RemoteCommandDomain.certificateAuthorities(from: environment)
        let certificate = try RemoteCommandDomain.clientCertificate(from: environment)
        do {
            return try FleetSuite(
                name: suite, endpoints: endpoints, root: root,
                credentials: credentials.map { FleetCredentials(user: $0.user, password: $0.password) },
                certificateAuthorities: authorities.map { URL(fileURLWithPath: $0) },
                clientCertificate: certificate.map { URL(fileURLWithPath: $0.certificate) },
                clientKey: certificate.map { URL(fileURLWithPath: $0.key) })
        } catch {
            throw AddressError((error as? DefaultsError)?.message ?? "\(error)")
        }
    }

    /// What is wrong with an address or its environment.
    package struct AddressError: Error, Sendable, CustomStringConvertible {
        package var description: String
        init(_ description: String) { self.description = description }
    }
}

/// A suite kept in etcd, opened by the `defaults` command: read once at open, changed in memory,
/// written by `synchronize()` in one transaction, and followed by `watch` — through
/// ``EtcdRemoteSuite``, in the library's layout, so that the remote store reads what it writes.
package final class RemoteCommandDomain: CommandDomain {
    private struct State {
        /// The suite as read by ``prepare(for:)``; nil before.
        var snapshot: EtcdRemoteSuite.Snapshot?
        /// What the command does with the domain (a failure of `synchronize()` names its verb).
        var action = EtcdRemoteSuite.Action.read
        /// Changes not yet written: nil removes.
        var pending: [String: PropertyListValue?] = [:]
    }

    private let suite: EtcdRemoteSuite
    let address: RemoteSuiteAddress
    /// The suite in etcd.
    var remoteSuite: EtcdRemoteSuite { suite }
    private let state: Locked<State>
    private let onProblem: @Sendable (String) -> Void

    /// Opens the suite; ``prepare(for:)`` reads it.
    ///
    /// - Parameters:
    ///   - address: The suite's `etcd://` address.
    ///   - environment: Where the endpoints (with no host in the address) and the credentials come from.
    ///   - onProblem: A sentence when etcd becomes unreachable while watching, and one when it
    ///     answers again.
    /// - Throws: ``DefaultsError`` (`readFailed`) naming what is wrong with the address or the
    ///   environment.
    package init(
        _ address: RemoteSuiteAddress, environment: [String: String],
        onProblem: @escaping @Sendable (String) -> Void = { _ in }
    ) throws {
        self.address = address
        self.onProblem = onProblem
        do {
            suite = EtcdRemoteSuite(try address.fleetSuite(environment: environment))
        } catch {
            throw DefaultsError(.readFailed, "\(address.text): \(error)", suite: address.suite)
        }
        state = Locked(State())
    }

    /// Reads the suite for `access`: a failure names the operation, the endpoints and the keys
    /// ("cannot write key \"theme\" of /livedefaults/v1/app/: no etcd endpoint answered (…)").
    ///
    /// - Throws: ``DefaultsError``: `readFailed` for a read, `writeFailed` for a change.
    package func prepare(for access: CommandDomainAccess) throws {
        let action: EtcdRemoteSuite.Action
        switch access {
        case .read: action = .read
        case .change(let verb, let keys): action = .change(verb: verb, keys: keys)
        }
        state.withLock { $0.action = action }
        do {
            let snapshot = try suite.read(for: action)
            state.withLock { $0.snapshot = snapshot }
        } catch {
            throw DefaultsError(access == .read ? .readFailed : .writeFailed, error.message, suite: address.suite)
        }
    }

    /// Nil: a value that is not a property list concerns its key alone (``unreadableValues``).
    package var lastError: DefaultsError? { nil }

    package var unreadableValues: [String: String] { state.withLock { $0.snapshot?.unreadable ?? [:] } }

    /// The etcd user, as `etcdctl` takes it: `ETCDCTL_USER=<name>:<password>`, or `ETCDCTL_USER=<name>`
    /// with `ETCDCTL_PASSWORD`; nil when unset.
    package static func credentials(from environment: [String: String]) throws(RemoteSuiteAddress.AddressError)
        -> (user: String, password: String)?
    {
        guard let user = environment["ETCDCTL_USER"], !user.isEmpty else { return nil }
        if let password = environment["ETCDCTL_PASSWORD"] { return (user, password) }
        guard let colon = user.firstIndex(of: ":") else {
            throw .init(
                "ETCDCTL_USER names user \"\(user)\" without a password: "
                    + "set ETCDCTL_USER=\(user):<password>, or ETCDCTL_PASSWORD")
        }
        return (String(user[..<colon]), String(user[user.index(after: colon)...]))
    }

    /// The PEM file of certificate authorities TLS trusts, as `etcdctl` takes it: `ETCDCTL_CACERT`;
    /// nil (the system's trust store) when unset.
    package static func certificateAuthorities(from environment: [String: String])
        throws(RemoteSuiteAddress.AddressError) -> String?
    {
        guard let path = environment["ETCDCTL_CACERT"], !path.isEmpty else { return nil }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw .init("ETCDCTL_CACERT names \"\(path)\", which is not a readable file")
        }
        return path
    }

    /// The client certificate and its key, as `etcdctl` takes them: `ETCDCTL_CERT` and
    /// `ETCDCTL_KEY` (PEM files); nil when neither is set.
    package static func clientCertificate(from environment: [String: String])
        throws(RemoteSuiteAddress.AddressError) -> (certificate: String, key: String)?
    {
        let certificate = environment["ETCDCTL_CERT"].flatMap { $0.isEmpty ? nil : $0 }
        let key = environment["ETCDCTL_KEY"].flatMap { $0.isEmpty ? nil : $0 }
        guard let certificate, let key else {
            if certificate == nil && key == nil { return nil }
            throw .init(
                certificate == nil
                    ? "ETCDCTL_KEY is set without ETCDCTL_CERT: set both, the client certificate and its key"
                    : "ETCDCTL_CERT is set without ETCDCTL_KEY: set both, the client certificate and its key")
        }
        for (variable, path) in [("ETCDCTL_CERT", certificate), ("ETCDCTL_KEY", key)]
        where !FileManager.default.isReadableFile(atPath: path) {
            throw .init("\(variable) names \"\(path)\", which is not a readable file")
        }
        return (certificate, key)
    }

    package func persistentValues() -> [String: PropertyListValue] {
        state.withLock { state in
            var values = state.snapshot?.values ?? [:]
            for (key, value) in state.pending { values[key] = value }
            return values
        }
    }

    package func set(_ value: PropertyListValue?, forKey key: String) {
        state.withLock { $0.pending[key] = .some(value) }
    }

    /// The suite is the domain's one layer (`defaults explain`): its value of `key` as read, where
    /// it is kept (the endpoints and the prefix, as a fleet suite names itself in a program's
    /// search list) and the etcd revision read.
    package func sources(forKey key: String) -> [ValueSource] {
        guard let snapshot = state.withLock({ $0.snapshot }), let value = snapshot.values[key] else { return [] }
        let endpoints = suite.endpoints.map(\.absoluteString).joined(separator: ", ")
        return [
            ValueSource(
                layer: .suite, domain: address.suite,
                location: "etcd \(endpoints), prefix \(String(decoding: suite.prefix, as: UTF8.self))",
                revision: snapshot.revision, value: value, wins: true)
        ]
    }

    package func replacePersistentValues(_ values: [String: PropertyListValue]?) {
        // The keys whose values are not property lists go too: the domain is replaced whole.
        let current = Set(persistentValues().keys).union(unreadableValues.keys)
        state.withLock { state in
            for key in current where values?[key] == nil { state.pending[key] = .some(nil) }
            for (key, value) in values ?? [:] { state.pending[key] = .some(value) }
        }
    }

    /// Writes the changes in one transaction (etcd's limit of 128 operations splits larger ones).
    ///
    /// - Throws: ``DefaultsError`` (`writeFailed`): unreachable, permission denied, … in a sentence.
    package func synchronize() throws {
        let (pending, action, snapshot) = state.withLock { ($0.pending, $0.action, $0.snapshot) }
        guard !pending.isEmpty else { return }
        let sets = pending.compactMapValues { $0 }
        let removals = pending.filter { $0.value == nil }.map(\.key)
        do {
            // From the suite as read: the audit keys record the values replaced.
            try suite.commit(set: sets, remove: removals, verb: action.verb, over: snapshot)
        } catch {
            throw DefaultsError(.writeFailed, error.message, suite: address.suite)
        }
        state.withLock { state in
            for (key, value) in pending { state.snapshot?.values[key] = value }
            state.pending = [:]
        }
    }

    /// Writes `changes` now, with `origin` in the history (a rollback), pending changes apart.
    ///
    /// - Throws: ``DefaultsError`` (`writeFailed`) in a sentence.
    func commit(_ changes: [(key: String, value: PropertyListValue?)], origin: DefaultsHistoryEntry.Origin) throws {
        let (action, snapshot) = state.withLock { ($0.action, $0.snapshot) }
        var sets: [String: PropertyListValue] = [:]
        var removals: [String] = []
        for (key, value) in changes {
            if let value { sets[key] = value } else { removals.append(key) }
        }
        do {
            try suite.commit(set: sets, remove: removals, verb: action.verb, origin: origin, over: snapshot)
        } catch {
            throw DefaultsError(.writeFailed, error.message, suite: address.suite)
        }
        state.withLock { state in
            for (key, value) in changes { state.snapshot?.values[key] = value }
        }
    }

    /// Follows the suite from the values read at open: every change since, per key, as etcd
    /// delivers it (one transaction together); all of them are external.
    package func watchChanges(queue: DispatchQueue, _ handler: @escaping @Sendable (WatchedChange) -> Void)
        -> any AnyObject & Sendable
    {
        let snapshot = state.withLock { $0.snapshot } ?? suite.emptySnapshot
        let prefix = String(decoding: suite.prefix, as: UTF8.self)
        return suite.follow(
            from: snapshot,
            onChange: { changes in
                queue.async {
                    for change in changes {
                        handler(
                            WatchedChange(key: change.key, oldValue: change.old, newValue: change.new, isExternal: true)
                        )
                    }
                }
            },
            onProblem: { [onProblem, prefix] problem in
                switch problem {
                case .unreachable: onProblem("etcd is not reachable: \(problem)")
                case .unreadableValue: onProblem("\(problem)")
                default: onProblem("cannot follow \(prefix): \(problem)")
                }
            },
            onRecovery: { [onProblem, prefix] outage in
                // After the changes made meanwhile, which the handler has been given already.
                queue.async {
                    onProblem(
                        "etcd answers again after an outage of \(String(format: "%.1f", outage)) s: "
                            + "following \(prefix) again (changes made meanwhile are shown above)")
                }
            })
    }
}
