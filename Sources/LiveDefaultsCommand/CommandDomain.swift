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
}

extension CommandDomain {
    /// Nothing forces keys of a domain that has no administered layers.
    package func forcingSource(ofKey key: String) -> String? { nil }
    /// A domain with no search list: nothing to explain.
    package func sources(forKey key: String) -> [ValueSource] { [] }
    /// A domain with no system-wide files.
    package func systemWideValues() -> [String: PropertyListValue] { [:] }
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
package struct CommandDomains: Sendable {
    /// The directory of named domains: `$XDG_CONFIG_HOME`, else `~/.config`, unless given.
    package var directory: URL
    /// Opens a domain; `watching` asks for live reload (for `watch`).
    package var open:
        @Sendable (_ domain: DomainReference, _ directory: URL, _ watching: Bool) throws -> any CommandDomain

    package init(
        directory: URL? = nil,
        open: @escaping @Sendable (DomainReference, URL, Bool) throws -> any CommandDomain = Self.openStore
    ) {
        self.directory = directory ?? Self.defaultDirectory()
        self.open = open
    }

    /// `$XDG_CONFIG_HOME` when it is an absolute path, else `~/.config` (where Foundation's UserDefaults keeps
    /// suites on Linux).
    package static func defaultDirectory() -> URL {
        let environment = ProcessInfo.processInfo.environment
        if let xdg = environment["XDG_CONFIG_HOME"], xdg.hasPrefix("/") { return URL(fileURLWithPath: xdg) }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return URL(fileURLWithPath: home).appendingPathComponent(".config")
    }

    /// The file of a named domain.
    package func fileURL(ofDomainNamed name: String) -> URL {
        directory.appendingPathComponent(name + ".plist")
    }

    /// The names of the domains in ``directory`` (files `<name>.plist`, hidden files skipped), sorted.
    package func domainNames() -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return
            names
            .filter { $0.hasSuffix(".plist") && !$0.hasPrefix(".") && $0.count > ".plist".count }
            .map { String($0.dropLast(".plist".count)) }
            .sorted { $0.utf16.lexicographicallyPrecedes($1.utf16) }
    }
}
