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
/// up as every further link on the way to its final target and as the final target itself, each
/// as a name in the directory it really is in: an atomic replace of the target gives no event in
/// the link's directory, and re-pointing a link in the middle of a chain (a dotfile manager's
/// `ln -sfn`) gives events only in that link's directory. So every one of those directories is
/// watched. A link met as a directory on the way (`config → dotfiles/v2`) counts as well.
struct WatchedPath: Equatable, Sendable {
    /// The path as given, made absolute and lexically normalised.
    let path: String
    /// The path's own name in its parent directory.
    let link: WatchedEntry
    /// Every symbolic link met while resolving `path`, in the order followed, each in the
    /// directory it really is in (the path's own name among them when it is a link).
    let hops: [WatchedEntry]
    /// The final target when `path` resolves through symbolic links (it may not exist yet).
    let target: WatchedEntry?
    /// Whether resolving gave up after ``maximumLinkHops`` links (a longer chain, or a loop):
    /// only the links up to there are watched.
    var isChainTooLong: Bool
    /// Every entry whose events concern this path, without repeats: `link`, `hops`, `target`.
    let entries: [WatchedEntry]
    /// Every directory that has to be watched.
    let directories: Set<String>

    init(
        path: String, link: WatchedEntry, hops: [WatchedEntry] = [], target: WatchedEntry?,
        isChainTooLong: Bool = false
    ) {
        self.path = path
        self.link = link
        self.hops = hops
        self.target = target
        self.isChainTooLong = isChainTooLong
        var entries = [link]
        for entry in hops + (target.map { [$0] } ?? []) where !entries.contains(entry) { entries.append(entry) }
        self.entries = entries
        directories = Set(entries.map(\.directory))
    }

    /// How many symbolic links one resolution follows before giving up (the kernel's own limit,
    /// past which opening the path fails with `ELOOP`).
    static let maximumLinkHops = 40

    /// Describes `path` as it is on disk now.
    ///
    /// A relative path is taken relative to the current directory. Symbolic links are followed
    /// to their final target even when that target does not exist (a dangling link).
    static func resolve(_ path: String) -> WatchedPath {
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        let normalised = normalise(absolute)
        let link = entry(for: normalised)
        let followed = follow(normalised)
        let target = followed.final == normalised ? nil : entry(for: followed.final)
        return WatchedPath(
            path: normalised, link: link, hops: followed.links, target: target == link ? nil : target,
            isChainTooLong: followed.isTooLong)
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

    /// Resolves `path` one component at a time, as the kernel does, and notes every symbolic
    /// link met — in the path, in a link's destination, or as a directory on the way — as a name
    /// in the directory it really is in (that directory has no links left in its path).
    ///
    /// A component that does not exist ends the resolution: the rest is taken as written. After
    /// ``maximumLinkHops`` links it stops too, with the rest taken as written from the last link.
    private static func follow(_ path: String) -> (links: [WatchedEntry], final: String, isTooLong: Bool) {
        // Components still to resolve, the next one last.
        var remaining = Array(path.split(separator: "/", omittingEmptySubsequences: true).reversed())
        var resolved = ""  // the real path so far; "" is the root
        var links: [WatchedEntry] = []
        var isMissing = false
        while let component = remaining.popLast() {
            if component == "." { continue }
            if component == ".." {
                resolved = String(resolved[..<(resolved.lastIndex(of: "/") ?? resolved.startIndex)])
                continue
            }
            let candidate = resolved + "/" + component
            var info = stat()
            guard !isMissing, lstat(candidate, &info) == 0 else {
                isMissing = true
                resolved = candidate
                continue
            }
            guard info.st_mode & S_IFMT == S_IFLNK, let destination = readLink(candidate) else {
                resolved = candidate
                continue
            }
            guard links.count < maximumLinkHops else {
                let rest = remaining.reversed().joined(separator: "/")
                return (links, normalise(candidate + "/" + rest), true)
            }
            links.append(WatchedEntry(directory: resolved.isEmpty ? "/" : resolved, name: String(component)))
            if destination.hasPrefix("/") { resolved = "" }
            remaining.append(contentsOf: destination.split(separator: "/", omittingEmptySubsequences: true).reversed())
        }
        return (links, resolved.isEmpty ? "/" : resolved, false)
    }

    private static func readLink(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink(path, &buffer, buffer.count - 1)
        guard count >= 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
