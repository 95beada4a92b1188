import Foundation

/// A directory of the user `nobody` (`<temporary>/config`, `0700`), as a service's
/// `/var/lib/<service>/config` is its user's, and that user's uid and gid.
public final class NobodysDirectory {
    public let base: TemporaryDirectory
    public let path: String
    public let user: uid_t
    public let group: gid_t

    public init() throws {
        guard let entry = getpwnam("nobody") else { throw SetupFailure("there is no user nobody") }
        user = entry.pointee.pw_uid
        group = entry.pointee.pw_gid
        let base = try TemporaryDirectory()
        chmod(base.path, 0o755)
        let path = base.path + "/config"
        guard mkdir(path, 0o700) == 0 else { throw SetupFailure("mkdir \(path): errno \(errno)") }
        guard chown(path, user, group) == 0 else { throw SetupFailure("chown \(path): errno \(errno)") }
        self.path = path
        self.base = base
    }

    /// Makes a suite file of `nobody`'s with `values`, mode `mode`.
    public func seed(_ name: String, _ values: [String: Any], mode: mode_t) throws -> String {
        let file = path + "/" + name + ".plist"
        let data = try PropertyListSerialization.data(fromPropertyList: values, format: .binary, options: 0)
        try data.write(to: URL(fileURLWithPath: file))
        guard chown(file, user, group) == 0 else { throw SetupFailure("chown \(file): errno \(errno)") }
        guard chmod(file, mode) == 0 else { throw SetupFailure("chmod \(file): errno \(errno)") }
        return file
    }

    /// Whether `path` belongs to `nobody` (user and group).
    public func owns(_ path: String) -> Bool {
        guard let owner = Self.owner(of: path) else { return false }
        return owner.user == user && owner.group == group
    }

    /// The owner, group and permission bits of the file at `path` (nil when there is none).
    public static func owner(of path: String) -> (user: uid_t, group: gid_t, mode: mode_t)? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return (info.st_uid, info.st_gid, info.st_mode & 0o7777)
    }
}

/// A set-up step that failed (a test's world could not be made).
public struct SetupFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
