import Foundation

/// The XDG Base Directory rules, written once: the user's directory of a kind
/// (`$XDG_CONFIG_HOME`, `$XDG_DATA_HOME`, `$XDG_CACHE_HOME`) and the system's list of them
/// (`$XDG_CONFIG_DIRS`, `$XDG_DATA_DIRS`). Suite files, administered files, schemas and the fleet's
/// cache all find their directories here.
package enum BaseDirectories {
    /// Reads an environment variable with getenv: `ProcessInfo.processInfo.environment` builds a
    /// dictionary of the whole environment, about a tenth of a one-shot command's start-up
    /// (docs/design.md, "The `defaults` command's start-up").
    package static func processVariable(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// The user's directory of a kind: `variable` when it is set to an absolute path, else
    /// `fallback` under the home directory (`$HOME`, else the password database's).
    ///
    /// - Parameters:
    ///   - variable: `XDG_CONFIG_HOME`, `XDG_DATA_HOME` or `XDG_CACHE_HOME`.
    ///   - fallback: The directory under the home directory: `.config`, `.local/share`, `.cache`.
    ///   - read: Reads an environment variable.
    /// - Returns: The directory's path, without a trailing `/`.
    package static func user(
        _ variable: String, fallback: String, read: (String) -> String? = processVariable
    ) -> String {
        if let value = read(variable), value.hasPrefix("/") { return value }
        let home = read("HOME").flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return joined(home, fallback)
    }

    /// The system's directories of a kind: `variable`'s colon-separated absolute paths (relative
    /// entries are ignored, as the specification says), else `defaults` when it is unset, empty or
    /// holds none.
    ///
    /// - Parameters:
    ///   - variable: `XDG_CONFIG_DIRS` or `XDG_DATA_DIRS`.
    ///   - defaults: The specification's default list: `/etc/xdg`, or `/usr/local/share` and `/usr/share`.
    ///   - read: Reads an environment variable.
    /// - Returns: The directories' paths, most important first.
    package static func system(
        _ variable: String, defaults: [String], read: (String) -> String? = processVariable
    ) -> [String] {
        let listed = (read(variable) ?? "").split(separator: ":").map(String.init).filter { $0.hasPrefix("/") }
        return listed.isEmpty ? defaults : listed
    }

    /// `directory` + `/` + `component`, with no doubled `/` where they meet (as `appendingPathComponent`).
    package static func joined(_ directory: String, _ component: String) -> String {
        directory.hasSuffix("/") ? directory + component : directory + "/" + component
    }
}
