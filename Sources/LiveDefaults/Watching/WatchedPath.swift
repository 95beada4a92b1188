import Foundation

/// A directory entry the watcher listens for: a name inside a directory.
struct WatchedEntry: Hashable, Sendable {
    /// The directory, as an absolute path without a trailing slash (`/` for the root).
    var directory: String
    /// The file's name inside `directory`.
    var name: String
}

/// Where events for one watched path can show up.
///
/// A plain file shows up only as its name in its parent directory. A symbolic link also shows
/// up as the name of its final target in the target's directory: an atomic replace of the
/// target gives no event in the link's directory, so both directories are watched.
struct WatchedPath: Equatable, Sendable {
    /// The path as given, made absolute and lexically normalised.
    var path: String
    /// The path's own name in its parent directory.
    var link: WatchedEntry
    /// The final target of the symbolic link at `path`, when `path` is one (it may not exist yet).
    var target: WatchedEntry?

    /// Every entry whose events concern this path.
    var entries: [WatchedEntry] { target.map { [link, $0] } ?? [link] }

    /// Every directory that has to be watched.
    var directories: Set<String> { Set(entries.map(\.directory)) }

    /// How many symbolic links are followed before giving up (the kernel's own limit).
    static let maximumLinkHops = 40

    /// Describes `path` as it is on disk now.
    ///
    /// A relative path is taken relative to the current directory. Symbolic links are followed
    /// to their final target even when that target does not exist (a dangling link).
    static func resolve(_ path: String) -> WatchedPath {
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        let normalised = normalise(absolute)
        let link = entry(for: normalised)
        guard let final = finalTarget(of: normalised), final != normalised else {
            return WatchedPath(path: normalised, link: link, target: nil)
        }
        let target = entry(for: final)
        return WatchedPath(path: normalised, link: link, target: target == link ? nil : target)
    }

    /// Splits an absolute, normalised path into its directory and name.
    static func entry(for path: String) -> WatchedEntry {
        guard let slash = path.lastIndex(of: "/") else { return WatchedEntry(directory: "/", name: path) }
        let directory = String(path[..<slash])
        return WatchedEntry(
            directory: directory.isEmpty ? "/" : directory, name: String(path[path.index(after: slash)...]))
    }

    /// Removes empty and `.` components and resolves `..` lexically.
    static func normalise(_ path: String) -> String {
        var components: [Substring] = []
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            switch component {
            case ".": continue
            case "..": _ = components.popLast()
            default: components.append(component)
            }
        }
        return "/" + components.joined(separator: "/")
    }

    /// Follows the chain of symbolic links starting at `path`; `nil` when `path` is not a link.
    private static func finalTarget(of path: String) -> String? {
        var current = path
        var followed = false
        for _ in 0..<maximumLinkHops {
            var info = stat()
            guard lstat(current, &info) == 0, info.st_mode & S_IFMT == S_IFLNK else { break }
            guard let destination = readLink(current) else { break }
            followed = true
            if destination.hasPrefix("/") {
                current = normalise(destination)
            } else {
                // Resolve relative to the link's real directory, so a `..` in the link is right
                // even when the link's directory is itself reached through a symbolic link.
                let directory = entry(for: current).directory
                current = normalise((realPath(directory) ?? directory) + "/" + destination)
            }
        }
        return followed ? current : nil
    }

    private static func readLink(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink(path, &buffer, buffer.count - 1)
        guard count >= 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
