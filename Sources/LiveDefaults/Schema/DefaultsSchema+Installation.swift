import Foundation

extension DefaultsSchema {
    /// The directories searched for installed schemas, first match winning: the user's
    /// (`$XDG_DATA_HOME/livedefaults/schemas`, else `~/.local/share/livedefaults/schemas`), then each
    /// system directory of `$XDG_DATA_DIRS` in its order (else `/usr/local/share` and `/usr/share`),
    /// each with `livedefaults/schemas` appended. A suite's schema is the file `<suite>.plist` there.
    public static var searchDirectories: [URL] {
        searchDirectories(environment: ProcessInfo.processInfo.environment)
    }

    /// ``searchDirectories``, from the given environment; relative paths are ignored, as the XDG base
    /// directory specification asks.
    package static func searchDirectories(environment: [String: String]) -> [URL] {
        searchDirectoryPaths { environment[$0] }.map { URL(fileURLWithPath: $0, isDirectory: true) }
    }

    /// The paths of ``searchDirectories``, from the environment variables `variable` gives (the `defaults`
    /// command passes getenv, and keeps paths: a dictionary of the environment, and `URL`'s path appending
    /// and `path`, each cost a one-shot command a first generic instantiation; docs/design.md, "The
    /// `defaults` command's start-up").
    package static func searchDirectoryPaths(variable: (String) -> String?) -> [String] {
        [userDirectoryPath(variable: variable)] + systemDirectoryPaths(variable: variable)
    }

    /// Where ``install()`` writes: the user's schema directory.
    package static func userDirectory(environment: [String: String]) -> URL {
        URL(fileURLWithPath: userDirectoryPath { environment[$0] }, isDirectory: true)
    }

    /// The path of ``userDirectory(environment:)``, from the variables `variable` gives.
    package static func userDirectoryPath(variable: (String) -> String?) -> String {
        BaseDirectories.joined(
            BaseDirectories.user("XDG_DATA_HOME", fallback: ".local/share", read: variable), "livedefaults/schemas")
    }

    /// The system schema directories, in `$XDG_DATA_DIRS` order.
    package static func systemDirectories(environment: [String: String]) -> [URL] {
        systemDirectoryPaths { environment[$0] }.map { URL(fileURLWithPath: $0, isDirectory: true) }
    }

    /// The paths of ``systemDirectories(environment:)``, from the variables `variable` gives.
    package static func systemDirectoryPaths(variable: (String) -> String?) -> [String] {
        BaseDirectories.system("XDG_DATA_DIRS", defaults: ["/usr/local/share", "/usr/share"], read: variable).map {
            BaseDirectories.joined($0, "livedefaults/schemas")
        }
    }

    /// The schema installed for `suite`, from the first of ``searchDirectories`` that has one;
    /// nil when none has.
    ///
    /// - Parameter suite: The suite's name.
    /// - Returns: The schema, or nil when none is installed.
    /// - Throws: ``DefaultsError`` (`invalidSchema`) when the file found cannot be used: it is not
    ///   skipped for one further down, which would hide the mistake.
    public static func installed(forSuite suite: String) throws -> DefaultsSchema? {
        try find(suite: suite, environment: ProcessInfo.processInfo.environment)?.schema
    }

    /// The installed schema of `suite` and its file.
    package static func find(suite: String, environment: [String: String]) throws -> (
        schema: DefaultsSchema, file: URL
    )? {
        try find(suite: suite, in: searchDirectories(environment: environment))
    }

    /// The schema of `suite` in the first of `directories` that has one.
    package static func find(suite: String, in directories: [URL]) throws -> (schema: DefaultsSchema, file: URL)? {
        try find(suite: suite, inDirectoryPaths: directories.map(\.path)).map {
            ($0.schema, URL(fileURLWithPath: $0.file))
        }
    }

    /// The schema of `suite` in the first of the directories at `paths` that has one, and the path of its file.
    package static func find(suite: String, inDirectoryPaths paths: [String]) throws -> (
        schema: DefaultsSchema, file: String
    )? {
        try SuiteLocation.validate(suiteName: suite)
        for directory in paths {
            let path = BaseDirectories.joined(directory, suite + ".plist")
            guard let data = FileManager.default.contents(atPath: path) else { continue }
            return (try DefaultsSchema(propertyListData: data, source: path), path)
        }
        return nil
    }

    /// Writes the schema where the `defaults` command finds it: the user's schema directory (the
    /// first of ``searchDirectories``), replacing the file at once (a reader sees the old or the new
    /// document, never a part).
    ///
    /// - Returns: The file written.
    /// - Throws: ``DefaultsError`` (`writeFailed`) naming the file.
    @discardableResult
    public func install() throws -> URL {
        try install(into: Self.userDirectory(environment: ProcessInfo.processInfo.environment))
    }

    /// Writes the schema as `<suite>.plist` in `directory` (created if missing): for a package that
    /// installs it in a system directory (`/usr/share/livedefaults/schemas`).
    ///
    /// - Parameter directory: The schema directory.
    /// - Returns: The file written.
    /// - Throws: ``DefaultsError`` (`writeFailed`) naming the file.
    @discardableResult
    public func install(into directory: URL) throws -> URL {
        try SuiteLocation.validate(suiteName: suite)
        let file = directory.appendingPathComponent(suite + ".plist")
        let data = try propertyListData()
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try data.write(to: file, options: .atomic)
        } catch {
            throw DefaultsError(
                .writeFailed, "The schema of suite \"\(suite)\" could not be written to \(file.path): \(error)",
                suite: suite, path: file.path, underlying: SendableDescription(error))
        }
        return file
    }
}
