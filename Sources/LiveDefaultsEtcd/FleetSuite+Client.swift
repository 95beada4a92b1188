import Foundation
import LiveDefaults
import LiveDefaultsEtcdClient

extension FleetSuite {
    /// The one place an etcd client is made from a suite's description (docs/design.md, "Fleet
    /// settings: the remote store"): its endpoints, credentials, certificate authorities, client
    /// certificate and request timeout. The suite's store, its migrations and the `defaults`
    /// command (``EtcdRemoteSuite``) all take theirs from here, so that none connects otherwise
    /// than the others (a migration once went without the client certificate, and a member
    /// started with `--client-cert-auth` refused it).
    func makeClient() -> EtcdClient {
        EtcdClient(
            endpoints: endpoints, credentials: credentials.map { ($0.user, $0.password) },
            requestTimeout: requestTimeout.timeInterval, certificateAuthorities: certificateAuthorities?.path,
            clientCertificate: clientCertificate.flatMap { certificate in clientKey.map { (certificate.path, $0.path) }
            })
    }
}

/// One write of a suite's keys to etcd, as every writer builds it (the suite's store, a migration,
/// the `defaults` command): each defaults key becomes the etcd key `<prefix><key>` (the key in
/// NFC), each value a property-list document of that one value; a migration adds what each key
/// must still be (its modification revision when read).
struct EtcdSuiteWrite {
    /// A value that cannot be encoded, and its key.
    struct EncodingFailure: Error, Sendable, CustomStringConvertible {
        var key: String
        var problem: SendableDescription
        var description: String { "the value of \"\(key)\" cannot be encoded: \(problem)" }
    }

    let prefix: Data
    private(set) var puts: [(key: Data, value: Data)] = []
    private(set) var deletes: [Data] = []
    /// The keys that must be as they were read: each etcd key's modification revision (0: absent).
    private(set) var unchanged: [(key: Data, modRevision: Int64)] = []

    init(prefix: Data) { self.prefix = prefix }

    /// Whether the write changes nothing.
    var isEmpty: Bool { puts.isEmpty && deletes.isEmpty }

    /// Sets `key` to `value`; nil removes it.
    mutating func set(_ key: String, to value: PropertyListValue?) throws(EncodingFailure) {
        let etcdKey = EtcdMirror.etcdKey(key, prefix: prefix)
        guard let value else {
            deletes.append(etcdKey)
            return
        }
        do {
            puts.append((etcdKey, try EtcdMirror.encode(value)))
        } catch {
            throw EncodingFailure(key: key, problem: SendableDescription(error))
        }
    }

    /// Commits only if `key` still has the modification revision `modRevision` (0: still absent).
    mutating func expect(_ key: String, modRevision: Int64) {
        unchanged.append((EtcdMirror.etcdKey(key, prefix: prefix), modRevision))
    }

    /// Sends the write in one transaction (several past etcd's 128 operations), no compare: per
    /// key the last commit wins.
    ///
    /// - Returns: The revision of the (last) transaction.
    func commit(with client: EtcdClient) throws -> Int64 {
        try client.commit(puts: puts, deletes: deletes)
    }

    /// Sends the write in one transaction that applies only if every expected key is as it was
    /// read.
    ///
    /// - Returns: Whether it applied, and etcd's revision.
    func commitIfUnchanged(with client: EtcdClient) throws -> (succeeded: Bool, revision: Int64) {
        try client.commit(puts: puts, deletes: deletes, unchanged: unchanged)
    }
}
