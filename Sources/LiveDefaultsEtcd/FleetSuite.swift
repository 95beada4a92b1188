import Foundation
import LiveDefaults

/// A suite kept in etcd and shared by every machine of a fleet: which cluster, where in it, and
/// as whom (docs/design.md, "Fleet settings: the remote store").
///
/// Each defaults key is one etcd key, `<root>/<name>/<key>` (the key in NFC), whose value is a
/// property-list document of that one value, so types stay exact.
///
/// ```swift
/// let fleet = try FleetSuite(
///     name: "com.example.service", endpoints: [URL(string: "https://etcd.internal:2379")!],
///     credentials: .fromEnvironment())
/// let defaults = try Defaults(suiteName: "com.example.service")
/// defaults.addFleetSuite(fleet)                 // fleet defaults: a local `defaults write` overrides
/// defaults.bool(forKey: "newCheckout")          // from memory, never the network
/// ```
public struct FleetSuite: Sendable, Hashable {
    /// The root every suite lives under unless told otherwise.
    public static let defaultRoot = "/livedefaults/v1"

    /// The suite's name, such as "com.example.service" (the rules of a local suite name).
    public let name: String
    /// etcd's client URLs (`http://` or `https://`).
    public let endpoints: [URL]
    /// A PEM file of the certificate authorities that `https://` endpoints' certificates must chain
    /// to (a private CA); nil for the system's trust store.
    public let certificateAuthorities: URL?
    /// Where the fleet's suites are in etcd, such as "/livedefaults/v1/prod" (no trailing "/").
    public let root: String
    /// The etcd user to authenticate as, when the cluster has authentication on. Given in code or
    /// read from the environment (``FleetCredentials/fromEnvironment(user:password:)``), never from
    /// a suite file.
    public let credentials: FleetCredentials?
    /// Where the last known values are kept for a start while etcd is unreachable; nil for
    /// `$XDG_CACHE_HOME/livedefaults/etcd` (else `~/.cache/livedefaults/etcd`).
    public let cacheDirectory: URL?
    /// How long one call to etcd may take before it counts as failed.
    public let requestTimeout: Duration
    /// A PEM file of the client certificate shown to members started with `--client-cert-auth`
    /// (with ``clientKey``); nil for none. It does not name the etcd user: with authentication on,
    /// etcd 3.4's JSON gateway refuses a certificate with a common name, so give one without, and
    /// ``credentials``.
    public let clientCertificate: URL?
    /// The PEM file of ``clientCertificate``'s private key; nil for none.
    public let clientKey: URL?
    /// How long the watch of a suite may be silent before its member is checked (2 s by default):
    /// a one-key serializable range to that member, one request per check; a change or a progress
    /// notification counts as an answer.
    public let stallCheckInterval: Duration
    /// How long that member may take to answer a check (2 s by default) before it counts as stalled
    /// (frozen, hung, cut off): the suite moves to the next member, and goes stale if none answers
    /// within that time either.
    public let stallCheckTimeout: Duration

    /// Describes a fleet suite.
    ///
    /// - Parameters:
    ///   - name: The suite's name, such as "com.example.service" (the rules of a local suite name).
    ///   - endpoints: etcd's client URLs (`http://` or `https://`), tried in turn.
    ///   - root: Where the fleet's suites are in etcd.
    ///   - credentials: The etcd user, when the cluster has authentication on.
    ///   - cacheDirectory: Where the last known values are kept; nil for the default.
    ///   - requestTimeout: How long one call to etcd may take.
    ///   - certificateAuthorities: A PEM file of the authorities `https://` endpoints chain to; nil
    ///     for the system's trust store.
    ///   - clientCertificate: A PEM file of a client certificate, for members started with
    ///     `--client-cert-auth`; give `clientKey` with it.
    ///   - clientKey: The PEM file of the client certificate's private key.
    ///   - stallCheckInterval: How long the watch may be silent before its member is checked (2 s
    ///     by default: at most 30 requests a minute per suite and process).
    ///   - stallCheckTimeout: How long it may take to answer (2 s by default). A frozen member is
    ///     left within interval + timeout, and new values come from the next member; when no member
    ///     answers, the suite goes stale within interval + timeout × (1 + the number of endpoints).
    /// - Throws: `DefaultsError.Code.invalidSuiteName` for a bad name; `DefaultsError.Code.invalidRemote`
    ///   for no endpoints, an endpoint that is not an `http`/`https` URL with a host, a root that
    ///   does not start with "/", a certificate-authorities, certificate or key file that cannot be
    ///   read, a client certificate without its key (or a key without its certificate), or a stall
    ///   check interval or timeout that is not more than zero.
    public init(
        name: String, endpoints: [URL], root: String = FleetSuite.defaultRoot, credentials: FleetCredentials? = nil,
        cacheDirectory: URL? = nil, requestTimeout: Duration = .seconds(10), certificateAuthorities: URL? = nil,
        clientCertificate: URL? = nil, clientKey: URL? = nil, stallCheckInterval: Duration = .seconds(2),
        stallCheckTimeout: Duration = .seconds(2)
    ) throws {
        try SuiteLocation.validate(suiteName: name)
        guard !endpoints.isEmpty else {
            throw DefaultsError(
                .invalidRemote, "The fleet suite \"\(name)\" has no etcd endpoint; give at least one client URL.",
                suite: name)
        }
        for endpoint in endpoints {
            guard let scheme = endpoint.scheme?.lowercased(), scheme == "http" || scheme == "https",
                endpoint.host?.isEmpty == false
            else {
                throw DefaultsError(
                    .invalidRemote,
                    "The etcd endpoint \"\(endpoint.absoluteString)\" of fleet suite \"\(name)\" is not an http:// or "
                        + "https:// URL with a host, such as http://127.0.0.1:2379.",
                    suite: name)
            }
        }
        var root = root
        while root.count > 1, root.hasSuffix("/") { root.removeLast() }
        guard root.hasPrefix("/"), !root.utf8.contains(0) else {
            throw DefaultsError(
                .invalidRemote,
                "The root \(root.debugDescription) of fleet suite \"\(name)\" must start with \"/\" (such as "
                    + "\"\(Self.defaultRoot)\") and hold no NUL character.",
                suite: name)
        }
        guard requestTimeout > .zero else {
            throw DefaultsError(
                .invalidRemote, "The request timeout of fleet suite \"\(name)\" must be more than zero.", suite: name)
        }
        guard stallCheckInterval > .zero, stallCheckTimeout > .zero else {
            throw DefaultsError(
                .invalidRemote,
                "The stall check \(stallCheckInterval > .zero ? "timeout" : "interval") of fleet suite \"\(name)\" must "
                    + "be more than zero.",
                suite: name)
        }
        if let certificateAuthorities,
            !certificateAuthorities.isFileURL
                || !FileManager.default.isReadableFile(atPath: certificateAuthorities.path)
        {
            throw DefaultsError(
                .invalidRemote,
                "The certificate authorities \"\(certificateAuthorities.path)\" of fleet suite \"\(name)\" are not a "
                    + "readable file: give a PEM file of the CAs that etcd's certificates chain to.",
                suite: name)
        }
        guard (clientCertificate == nil) == (clientKey == nil) else {
            throw DefaultsError(
                .invalidRemote,
                "The fleet suite \"\(name)\" has a client \(clientKey == nil ? "certificate without its key" : "key without its certificate"): "
                    + "give both clientCertificate and clientKey.",
                suite: name)
        }
        for (file, what) in [(clientCertificate, "client certificate"), (clientKey, "client key")] {
            guard let file else { continue }
            guard file.isFileURL, FileManager.default.isReadableFile(atPath: file.path) else {
                throw DefaultsError(
                    .invalidRemote,
                    "The \(what) \"\(file.path)\" of fleet suite \"\(name)\" is not a readable file: give a PEM file.",
                    suite: name)
            }
        }
        self.name = name
        self.endpoints = endpoints
        self.clientCertificate = clientCertificate
        self.clientKey = clientKey
        self.certificateAuthorities = certificateAuthorities
        self.root = root == "/" ? "" : root
        self.credentials = credentials
        // As a directory, whether or not it exists yet: two descriptions of one suite are equal.
        self.cacheDirectory = cacheDirectory.map {
            URL(fileURLWithPath: $0.standardizedFileURL.path, isDirectory: true)
        }
        self.requestTimeout = requestTimeout
        self.stallCheckInterval = stallCheckInterval
        self.stallCheckTimeout = stallCheckTimeout
    }

    /// The etcd prefix of the suite's keys: `<root>/<name>/`.
    var prefix: Data { Data((root + "/" + name + "/").utf8) }

    /// Where the endpoints and the prefix are, for messages.
    var whereabouts: String {
        "etcd \(endpoints.map(\.absoluteString).joined(separator: ", ")), prefix \(root)/\(name)/"
    }

    /// The directory of this cluster's (endpoints and root) cached suites.
    var cacheLocationDirectory: String {
        let base =
            cacheDirectory?.path
            ?? BaseDirectories.joined(BaseDirectories.user("XDG_CACHE_HOME", fallback: ".cache"), "livedefaults/etcd")
        // FNV-1a of the endpoints and the root: stable across processes, so a restart finds it.
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in (endpoints.map(\.absoluteString).sorted().joined(separator: "\n") + "\n" + root).utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
        }
        return base + "/" + String(hash, radix: 16)
    }
}
