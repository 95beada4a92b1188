import Foundation

/// The one error type LiveDefaults throws and reports.
///
/// Every error carries a stable ``code``, a message a person can act on (which suite, which
/// path, what to do) and, where there is one, the underlying cause.
///
/// ```swift
/// do { try defaults.synchronize() } catch let error as DefaultsError where error.code == .writeFailed {
///     print(error.message)
/// }
/// ```
public struct DefaultsError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is. Extensible: new codes may be added in later versions.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let name: String
        /// The code's name, as in its constant: `corruptFile`.
        public var description: String { name }

        /// A suite name that cannot name a file (empty, `.`, `..`, `/`, NUL or over 255 bytes).
        public static let invalidSuiteName = Code(name: "invalidSuiteName")
        /// A value that is not a property list was given to the dynamic API.
        public static let notAPropertyList = Code(name: "notAPropertyList")
        /// A suite file exists but does not parse, or its root is not a dictionary.
        public static let corruptFile = Code(name: "corruptFile")
        /// Reading a suite file failed.
        public static let readFailed = Code(name: "readFailed")
        /// Writing a suite file failed (permissions, full disk, file-size limit, …).
        public static let writeFailed = Code(name: "writeFailed")
        /// The sidecar lock file could not be opened or locked.
        public static let lockFailed = Code(name: "lockFailed")
        /// Property-list text or bytes that cannot be parsed.
        public static let malformedPropertyList = Code(name: "malformedPropertyList")
        /// A stored value could not be decoded as the type a typed key asks for.
        public static let decodingFailed = Code(name: "decodingFailed")
        /// A value could not be encoded for a typed key.
        public static let encodingFailed = Code(name: "encodingFailed")
        /// File watching fell back to polling (inotify could not serve), or cannot follow a path
        /// (a chain of symbolic links longer than the kernel follows, or a loop).
        public static let watchingDegraded = Code(name: "watchingDegraded")
        /// A suite directory that other users can write to.
        public static let insecureDirectory = Code(name: "insecureDirectory")
        /// A suite kept elsewhere (a fleet suite in etcd) cannot be reached: the message names the
        /// endpoints and the reason. Its last known values stay in use, and this process's changes
        /// stay pending and are retried.
        public static let remoteUnavailable = Code(name: "remoteUnavailable")
        /// A suite kept elsewhere refused a write (a role that may only read, a value too large):
        /// the message names the keys, whose unwritten changes were dropped.
        public static let remoteRejected = Code(name: "remoteRejected")
        /// Not a failure: a suite kept elsewhere that was reported ``remoteUnavailable`` answers
        /// again. Reported once per outage, through the same channel as the loss, with how long the
        /// outage lasted and how many keys changed meanwhile.
        public static let remoteRecovered = Code(name: "remoteRecovered")
        /// A description of a suite kept elsewhere that cannot be used (no endpoint, an endpoint
        /// that is not a URL the client can call, a bad root).
        public static let invalidRemote = Code(name: "invalidRemote")
        /// A schema document that cannot be used (not a property list, a missing or unknown type, a
        /// default or choice of the wrong type): the message names the file and the key.
        public static let invalidSchema = Code(name: "invalidSchema")
        /// The keys the app declares and the schema installed for its suite disagree (a type, a
        /// default, the allowed values, a key missing on one side): reported once per difference
        /// by ``DefaultsSchema/checkInstalled()``.
        public static let schemaMismatch = Code(name: "schemaMismatch")
        /// A migration step that could not run (its code threw, or the suite cannot be migrated
        /// this way): the message names the step; the steps before it stay done.
        public static let migrationFailed = Code(name: "migrationFailed")
        /// A change to a key an administrator forces (a managed file, a managed fleet suite): the
        /// value is kept in the suite, for when the key is released, but reads give the forced
        /// value. Reported once per key and instance.
        public static let forcedKey = Code(name: "forcedKey")
        /// A managed file, or its directory, that a user other than the trusted owner (root) could
        /// change: it is ignored, and none of its keys are forced.
        public static let untrustedManagedFile = Code(name: "untrustedManagedFile")
        /// A rollback to a point of a suite's history that is no longer kept (pruned), or that the
        /// history never had: nothing was changed.
        public static let historyUnavailable = Code(name: "historyUnavailable")
    }

    /// The kind of failure.
    public var code: Code
    /// A sentence a person can act on.
    public var message: String
    /// The suite concerned, when there is one.
    public var suite: String?
    /// The file concerned, when there is one.
    public var path: String?
    /// The underlying error, when there is one.
    public var underlying: (any Error & Sendable)?

    /// Creates an error.
    public init(
        _ code: Code, _ message: String, suite: String? = nil, path: String? = nil,
        underlying: (any Error & Sendable)? = nil
    ) {
        self.code = code
        self.message = message
        self.suite = suite
        self.path = path
        self.underlying = underlying
    }

    /// The message, the code in brackets and the underlying cause: what `print(error)` shows.
    public var description: String {
        var text = "\(message) [\(code)]"
        if let underlying { text += " (cause: \(underlying))" }
        return text
    }
}

extension DefaultsError: LocalizedError {
    /// The same text as ``description``, for code that reads `localizedDescription`.
    public var errorDescription: String? { description }
}

/// An `errno` value as an error, for ``DefaultsError/underlying``.
public struct SystemError: Error, Sendable, CustomStringConvertible, Equatable {
    /// The `errno` value.
    public var errno: Int32
    /// The call that failed (`open`, `rename`, …).
    public var operation: String

    /// The call, the system's text for the error and its number: `rename: No space left on device (errno 28)`.
    public var description: String { "\(operation): \(String(cString: strerror(errno))) (errno \(errno))" }
}

extension DefaultsError {
    /// The codec's error at the library's boundary: bytes or text that do not parse
    /// (``Code/malformedPropertyList``), with the codec's message (docs/design.md, "The codec: a module of its own").
    package init(_ error: PropertyListError, suite: String? = nil, path: String? = nil) {
        self.init(.malformedPropertyList, error.message, suite: suite, path: path)
    }
}

/// A non-Sendable error kept by its description, so it can travel inside ``DefaultsError``.
package struct SendableDescription: Error, Sendable, CustomStringConvertible {
    package let description: String
    package init(_ error: any Error) { description = String(describing: error) }
}
