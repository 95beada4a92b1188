import Foundation
import LiveDefaults
import LiveDefaultsPropertyList

/// A domain's schema as the `defaults` command uses it: where it came from, the check of a value to be
/// written (with macOS's conversions), and the redaction of secret values.
///
/// The check is here, in the command, never on the library's read path (docs/design.md, "Schemas").
package struct CommandSchema: Sendable {
    /// What secret values are printed as.
    package static let redaction = PropertyListValue.string("<secret>")

    package var schema: DefaultsSchema
    /// The file, or the etcd key, it was read from.
    package var source: String

    package init(schema: DefaultsSchema, source: String) {
        self.schema = schema
        self.source = source
    }

    /// The value to store for `key`, given `value` as the command line gave it: converted where macOS users
    /// expect it (`-int 14` or a bare `14` for a `real` key, a bare `14` for an `integer` key, a bare `yes` for a
    /// `boolean` one), never from a `-string`, and checked to any depth (a dictionary's fields, an array's
    /// elements: ``DefaultsSchema/Entry/admit(_:textIsUntyped:)``); as it is when the schema does not name the key.
    ///
    /// - Parameters:
    ///   - value: The parsed value.
    ///   - key: The key written.
    ///   - isBare: Whether the value's text was given without a type (a bare value, old-style text: macOS stores
    ///     each scalar as a string).
    /// - Returns: The value to store, or the reason it is refused.
    package func admit(_ value: PropertyListValue, forKey key: String, isBare: Bool) -> Result<
        PropertyListValue, Refusal
    > {
        guard let entry = schema[key] else { return .success(value) }
        let (converted, mismatches) = entry.admit(value, textIsUntyped: isBare)
        guard mismatches.isEmpty else {
            return .failure(Refusal(key: key, mismatches: mismatches, source: source))
        }
        return .success(converted)
    }

    /// A value the schema does not allow, with everything the message names.
    package struct Refusal: Error, Sendable {
        package var key: String
        /// Each way the value does not fit, with its path (``DefaultsSchema/Entry/Mismatch``).
        package var mismatches: [DefaultsSchema.Entry.Mismatch]
        package var source: String

        /// `defaults: key fontSize of <domain> expects an integer, not a string (big), by the schema at …` for the
        /// key's own value; for values inside it, one line per path:
        ///
        /// ```text
        /// defaults: key rateLimit of <domain> does not fit the schema at …:
        ///   rateLimit.burst: missing
        ///   rateLimit.perSecond: expects an integer, not a string (oops)
        /// ```
        ///
        /// A secret value is not quoted.
        package func message(domain: String) -> String {
            if mismatches.count == 1, let only = mismatches.first, only.path == key {
                return "defaults: key \(key) of \(domain) \(only.reason), by the schema at \(source).\n"
                    + "Defaults have not been changed.\n"
            }
            return "defaults: key \(key) of \(domain) does not fit the schema at \(source):\n"
                + mismatches.map { "  \($0.path): \($0.reason)\n" }.joined() + "Defaults have not been changed.\n"
        }
    }

    // MARK: Secrets

    /// Whether `key` is secret.
    package func isSecret(_ key: String) -> Bool { schema[key]?.isSecret == true }

    /// `value` as printed: the redaction for a secret key.
    package func shown(_ value: PropertyListValue?, forKey key: String) -> PropertyListValue? {
        guard value != nil, isSecret(key) else { return value }
        return Self.redaction
    }

    /// The values as printed: each secret key's value redacted.
    package func shown(_ values: [String: PropertyListValue]) -> [String: PropertyListValue] {
        var shown = values
        for entry in schema.entries where entry.isSecret && shown[entry.name] != nil {
            shown[entry.name] = Self.redaction
        }
        return shown
    }
}

extension CommandDomains {
    /// The schema of a domain: for an `etcd://` suite, the one stored under its prefix
    /// (`ReservedKeys.schema`, the key under an `etcd://` suite's prefix); for a named domain (the global one included), the file installed for
    /// it in ``schemaDirectoryPaths``; for a file given by path that is a layer of a suite
    /// (``layerSuite(ofPath:)``), that suite's; nil for any other file given by path (as macOS, which has no
    /// schemas), and when there is none.
    ///
    /// - Throws: ``DefaultsError`` (`invalidSchema`) when the schema found cannot be read.
    package func schema(of domain: DomainReference, values: @autoclosure () -> [String: PropertyListValue]) throws
        -> CommandSchema?
    {
        switch domain {
        case .remote(let address):
            guard let stored = values()[ReservedKeys.schema] else { return nil }
            let source = "etcd key \(address.root)\(address.suite)/\(ReservedKeys.schema)"
            return CommandSchema(schema: try DefaultsSchema(propertyList: stored, source: source), source: source)
        case .named(let name):
            return try installedSchema(suite: name)
        case .global:
            return try installedSchema(suite: DomainReference.globalDomainName)
        case .path(let path):
            guard let suite = layerSuite(ofPath: path) else { return nil }
            return try installedSchema(suite: suite)
        }
    }

    /// The suite whose layer the file at `path` (as typed, without `.plist`) is, nil for none: a file
    /// `<suite>.plist` in a directory of system-wide defaults (`$XDG_CONFIG_DIRS`), in the managed directory,
    /// or in the directory of named domains (`$XDG_CONFIG_HOME`), and a file `<suite>.<host>.plist` in its
    /// `ByHost` directory. `NSGlobalDomain.plist` there is the global domain's layer, as `-g` is. Directories
    /// are compared with symbolic links resolved, so `/etc/xdg` reached through a link is still the system's
    /// (docs/design.md, "Schemas": a file given by path).
    package func layerSuite(ofPath path: String) -> String? {
        let file = URL(fileURLWithPath: path + ".plist").standardizedFileURL
        let name = String(file.lastPathComponent.dropLast(".plist".count))
        let directory = Self.resolved(file.deletingLastPathComponent())
        let settings = administeredSettings ?? AdministeredSettings.fromEnvironment()
        let suiteDirectories =
            settings.systemDirectories + [settings.managedDirectory].compactMap { $0 }
            + [URL(fileURLWithPath: directoryPath, isDirectory: true)]
        if suiteDirectories.contains(where: { Self.resolved($0) == directory }) {
            return Self.isSuiteName(name) ? name : nil
        }
        let byHost = URL(fileURLWithPath: SuiteLocation.byHostDirectory(in: directoryPath), isDirectory: true)
        guard Self.resolved(byHost) == directory else { return nil }
        // `<suite>.<this machine's ID>.plist`, else `<suite>.<host>.plist` for a host named without dots
        // (`defaults -host <name>`).
        let machine = "." + Defaults.Host.current.identifier
        let suite =
            name.hasSuffix(machine)
            ? String(name.dropLast(machine.count)) : String(name[..<(name.lastIndex(of: ".") ?? name.startIndex)])
        return Self.isSuiteName(suite) ? suite : nil
    }

    private static func resolved(_ directory: URL) -> String {
        directory.standardizedFileURL.resolvingSymlinksInPath().path
    }

    private static func isSuiteName(_ name: String) -> Bool {
        !name.isEmpty && (try? SuiteLocation.validate(suiteName: name)) != nil
    }

    private func installedSchema(suite: String) throws -> CommandSchema? {
        guard let (schema, file) = try DefaultsSchema.find(suite: suite, inDirectoryPaths: schemaDirectoryPaths)
        else { return nil }
        return CommandSchema(schema: schema, source: file)
    }
}
