import Foundation

/// Where a suite's file lives: `<directory>/<name>.plist`.
///
/// The directory is `$XDG_CONFIG_HOME` when it is set to an absolute path, else `~/.config`: the
/// place Foundation's UserDefaults uses on Linux, so each reads the other's files.
package struct SuiteLocation: Hashable, Sendable {
    /// The suite (domain) name, or the file's base name for a domain given as a path.
    package let name: String
    /// The suite file's absolute path.
    package let path: String

    /// The directory suite files live in, by the XDG rule (``BaseDirectories``), which the
    /// `defaults` command uses too.
    package static func defaultDirectory() -> String {
        BaseDirectories.user("XDG_CONFIG_HOME", fallback: ".config")
    }

    /// Validates `name` and builds the path of its file.
    ///
    /// - Throws: ``DefaultsError/Code/invalidSuiteName`` before any path is built when the name is
    ///   empty, `.` or `..`, contains `/` or NUL, or is over 255 bytes as a file name.
    package init(suiteName name: String, directory: String? = nil) throws {
        try Self.validate(suiteName: name)
        self.init(validName: name, directory: directory)
    }

    /// The global domain's file in `directory`: as ``init(suiteName:directory:)``, without
    /// validating the name, which is a constant (about 900 instructions each time, twice a cold
    /// open).
    package init(globalDomainIn directory: String?) {
        self.init(validName: Defaults.globalDomain, directory: directory)
    }

    private init(validName name: String, directory: String?) {
        self.name = name
        self.path = Self.joined(Self.withoutTrailingSlashes(directory ?? Self.defaultDirectory()), name)
    }

    /// `directory` without its trailing `/`s (`/` itself stays), cut by its bytes: `count` and
    /// `removeLast` walk characters, and a cold open builds five locations.
    package static func withoutTrailingSlashes(_ directory: String) -> String {
        let bytes = directory.utf8
        var end = bytes.endIndex
        var count = bytes.count
        while count > 1, bytes[bytes.index(before: end)] == UInt8(ascii: "/") {
            end = bytes.index(before: end)
            count -= 1
        }
        return end == bytes.endIndex ? directory : String(Substring(bytes[..<end]))
    }

    /// `directory` + "/" + `name` + ".plist", its bytes copied once into a string of that size
    /// (four appends cost a cold open about 5,000 instructions).
    private static func joined(_ directory: String, _ name: String) -> String {
        let suffix = ".plist".utf8
        let count = directory.utf8.count + 1 + name.utf8.count + suffix.count
        return String(unsafeUninitializedCapacity: count) { buffer in
            var end = buffer.initialize(fromContentsOf: directory.utf8)
            buffer[end] = UInt8(ascii: "/")
            end = buffer[(end + 1)...].initialize(fromContentsOf: name.utf8)
            return buffer[end...].initialize(fromContentsOf: suffix)
        }
    }

    /// A domain given directly as a file path (as `defaults read /path/to/file.plist` does).
    package init(filePath: String) {
        let absolute =
            filePath.hasPrefix("/") ? filePath : FileManager.default.currentDirectoryPath + "/" + filePath
        self.path = URL(fileURLWithPath: absolute).standardizedFileURL.path
        var base = (absolute as NSString).lastPathComponent
        if base.hasSuffix(".plist") { base.removeLast(6) }
        self.name = base
    }

    /// The directory that holds the suite file.
    ///
    /// Everything before the path's last "/" (``SuiteFile/directory(of:)``): the path is built from
    /// the directory given, or standardised, so Foundation's `deletingLastPathComponent` had nothing
    /// to fix, and it cost a cold open of a small suite about 30,000 instructions.
    package var directory: String { SuiteFile.directory(of: path) }

    /// Checks that `name` can name a suite file: the one rule, for the library and the `defaults`
    /// command alike.
    ///
    /// - Throws: ``DefaultsError/Code/invalidSuiteName`` naming what is wrong.
    package static func validate(suiteName name: String) throws(DefaultsError) {
        // One pass over the bytes, not `String.contains`: with Foundation imported that is
        // `range(of:)`, about 32,000 instructions of a cold open.
        var hasSlash = false
        var hasNUL = false
        var length = 0
        var dots = 0
        for byte in name.utf8 {
            if byte == UInt8(ascii: "/") { hasSlash = true } else if byte == 0 { hasNUL = true }
            if byte == UInt8(ascii: ".") { dots += 1 }
            length += 1
        }
        let problem: String? =
            if length == 0 {
                "is empty"
            } else if dots == length, length <= 2 {
                "is \"\(name)\", which names a directory"
            } else if hasSlash {
                "contains \"/\""
            } else if hasNUL {
                "contains a NUL character"
            } else if length + ".plist".utf8.count > 255 {
                "is \(length) bytes long; a suite name may be at most 249 bytes (255 with \".plist\")"
            } else {
                nil
            }
        if let problem {
            throw DefaultsError(
                .invalidSuiteName,
                "The suite name \(name.debugDescription) \(problem). Use a reverse-DNS name such as \"com.example.app\".",
                suite: name)
        }
    }
}
