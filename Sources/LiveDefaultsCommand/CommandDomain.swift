import Foundation
import LiveDefaults

/// What the `defaults` command needs of an open domain — the store's API, behind a seam so the command's
/// logic is tested without caring how the store is built.
package protocol CommandDomain: AnyObject, Sendable {
    /// A problem found with the domain's file (corrupt at load), if any.
    var lastError: DefaultsError? { get }
    /// The domain's own values (its file), without the search list.
    func persistentValues() -> [String: PropertyListValue]
    /// Sets or (with nil) removes one key.
    func set(_ value: PropertyListValue?, forKey key: String)
    /// Replaces the whole domain; nil deletes it.
    func replacePersistentValues(_ values: [String: PropertyListValue]?)
    /// Gets what `access` needs before the domain is read or changed: a remote domain reads etcd
    /// here, so that a failure names the operation ("cannot write key …"); a local one read its file
    /// at open, and does nothing.
    ///
    /// - Throws: ``DefaultsError`` (`readFailed` for a read, `writeFailed` for a change).
    func prepare(for access: CommandDomainAccess) throws
    /// Keys whose stored value is not a property list, with what is wrong with each: a remote
    /// domain keeps one document per key, and reads such a key as absent so that the others can be
    /// read and the bad one repaired (a local file is one document: a corrupt one is ``lastError``).
    var unreadableValues: [String: String] { get }
    /// Writes pending changes now (lock, re-read, merge, atomic replace).
    func synchronize() throws
    /// Calls `handler` on `queue` for every change of an effective value of the domain, until the returned
    /// token is released.
    func watchChanges(queue: DispatchQueue, _ handler: @escaping @Sendable (WatchedChange) -> Void)
        -> any AnyObject & Sendable
    /// The managed file (or managed fleet suite) that forces `key`, nil when nothing does.
    func forcingSource(ofKey key: String) -> String?
    /// Every layer of the search list that holds `key`, the winner first (`defaults explain`).
    func sources(forKey key: String) -> [ValueSource]
    /// The values of the domain's system-wide files (`defaults read --system`).
    func systemWideValues() -> [String: PropertyListValue]
    /// Rolls `key` (every key when nil) back to `point` (``Defaults/rollBack(_:to:schema:)``).
    ///
    /// - Returns: The keys changed.
    func rollBack(_ key: String?, to point: DefaultsHistoryPoint, schema: DefaultsSchema?) throws -> [String]
}

extension CommandDomain {
    /// Nothing forces keys of a domain that has no administered layers.
    package func forcingSource(ofKey key: String) -> String? { nil }
    /// A domain with no search list: nothing to explain.
    package func sources(forKey key: String) -> [ValueSource] { [] }
    /// A domain with no system-wide files.
    package func systemWideValues() -> [String: PropertyListValue] { [:] }
    /// A domain with no history here (a fleet suite: its audit keys come next).
    package func rollBack(_ key: String?, to point: DefaultsHistoryPoint, schema: DefaultsSchema?) throws -> [String] {
        throw DefaultsError(.historyUnavailable, "This domain keeps no history that can be rolled back.")
    }
}

extension CommandDomain {
    package func prepare(for access: CommandDomainAccess) throws {}
    package var unreadableValues: [String: String] { [:] }
}

/// What the command is about to do with a domain, so that a failure names it.
package enum CommandDomainAccess: Sendable, Equatable {
    /// Reading it (`read`, `read-type`, `export`, `find`, `watch`).
    case read
    /// Changing it: the verb ("write", "delete", "rename", "import") and the keys it changes (nil:
    /// the whole domain).
    case change(verb: String, keys: [String]?)
}

/// One change seen by ``CommandDomain/watchChanges(queue:_:)``.
package struct WatchedChange: Sendable {
    package var key: String
    package var oldValue: PropertyListValue?
    package var newValue: PropertyListValue?
    package var isExternal: Bool

    package init(key: String, oldValue: PropertyListValue?, newValue: PropertyListValue?, isExternal: Bool) {
        self.key = key
        self.oldValue = oldValue
        self.newValue = newValue
        self.isExternal = isExternal
    }
}

/// Where the command's domains are, and how one is opened.
///
/// The directories are kept as paths: the reading verbs use them as they are, since `URL`'s `path` costs a
/// one-shot command a first generic instantiation inside Foundation (docs/design.md, "The `defaults`
/// command's start-up").
package struct CommandDomains: Sendable {
    /// The path of the directory of named domains: `$XDG_CONFIG_HOME`, else `~/.config`, unless given.
    package var directoryPath: String
    /// The paths where installed schemas are looked for, in order (``DefaultsSchema/searchDirectories``),
    /// unless given.
    package var schemaDirectoryPaths: [String]
    /// The directories of system-wide and managed files, whose files given by path are layers of suites
    /// and so take their schemas (``layerSuite(ofPath:)``); nil for ``AdministeredSettings/fromEnvironment()``,
    /// read only when a domain is given by path.
    package var administeredSettings: AdministeredSettings?
    /// Opens a domain, from the path of the directory of named domains; `watching` asks for live reload (for
    /// `watch`).
    package var open:
        @Sendable (_ domain: DomainReference, _ directoryPath: String, _ watching: Bool) throws -> any CommandDomain
    /// Opens a local domain only to read it (``SuiteFileSnapshot``), from the path of the directory of named
    /// domains, or nil to use ``open``: set when ``open`` is the store's.
    package var openForReading:
        (@Sendable (_ domain: DomainReference, _ directoryPath: String) throws -> (any CommandDomain)?)?

    /// - Parameters:
    ///   - directory: the directory of named domains; when not given, `$XDG_CONFIG_HOME` when it is an absolute
    ///     path, else `~/.config` (where Foundation's UserDefaults keeps suites on Linux): the library's one
    ///     rule, ``SuiteLocation/defaultDirectory()``, which reads the two variables with getenv.
    ///   - schemaDirectories: where installed schemas are looked for, in order; ``defaultSchemaDirectoryPaths()``
    ///     when not given.
    ///   - administeredSettings: the directories of system-wide and managed files; the environment's
    ///     (``AdministeredSettings/fromEnvironment()``) when not given.
    ///   - open: how a domain is opened; the store (``openStore``) and, for the reading verbs, the suite file
    ///     alone (``SuiteFileSnapshot``) when not given.
    package init(
        directory: URL? = nil, schemaDirectories: [URL]? = nil, administeredSettings: AdministeredSettings? = nil,
        open: (@Sendable (DomainReference, String, Bool) throws -> any CommandDomain)? = nil
    ) {
        self.administeredSettings = administeredSettings
        self.directoryPath = directory?.path ?? SuiteLocation.defaultDirectory()
        self.schemaDirectoryPaths = schemaDirectories?.map(\.path) ?? Self.defaultSchemaDirectoryPaths()
        self.open = open ?? Self.openStore
        if open == nil {
            self.openForReading = { domain, directory in try SuiteFileSnapshot.open(domain, directory: directory) }
        } else {
            self.openForReading = nil
        }
    }

    /// The schema directories, as URLs (for messages and `install-schema`).
    package var schemaDirectories: [URL] { schemaDirectoryPaths.map { URL(fileURLWithPath: $0, isDirectory: true) } }

    /// The paths of ``DefaultsSchema/searchDirectories``, from the three variables it reads, with getenv (a
    /// dictionary of the environment costs a one-shot command a tenth of its start-up: docs/design.md, "The
    /// `defaults` command's start-up").
    package static func defaultSchemaDirectoryPaths() -> [String] {
        DefaultsSchema.searchDirectoryPaths { getenv($0).map { String(cString: $0) } }
    }

    /// The names of the domains in ``directoryPath`` (files `<name>.plist`, hidden files skipped), sorted.
    package func domainNames() -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directoryPath)) ?? []
        return
            names
            .filter { $0.hasSuffix(".plist") && !$0.hasPrefix(".") && $0.count > ".plist".count }
            .map { String($0.dropLast(".plist".count)) }
            .sorted { $0.utf16.lexicographicallyPrecedes($1.utf16) }
    }
}
