import Foundation

/// Where an administrator's settings are: system-wide defaults for every user, and forced
/// (managed) keys that users cannot change (docs/design.md, "Administered settings").
///
/// A ``Defaults`` opened by suite name uses ``fromEnvironment()``:
///
/// - **System-wide defaults**: `<directory>/<suite>.plist` and `<directory>/NSGlobalDomain.plist`
///   in each directory of `$XDG_CONFIG_DIRS` (default `/etc/xdg`), searched after the user's own
///   files and before the registration domain; earlier directories win.
/// - **Forced keys**: `<managed directory>/<suite>.plist` and
///   `<managed directory>/NSGlobalDomain.plist`, where the managed directory is
///   `/etc/livedefaults/managed` (or `$LIVEDEFAULTS_MANAGED_DIR`). Their keys win over everything
///   but the argument domain. A managed file counts only when its owner is ``trustedOwner`` (root)
///   and neither it nor its directory can be written by group or others; anything else is
///   ignored and reported as ``DefaultsError/Code/untrustedManagedFile``.
///
/// Tests point both at temporary directories:
///
/// ```swift
/// let settings = AdministeredSettings(
///     systemDirectories: [scratch.appendingPathComponent("xdg")],
///     managedDirectory: scratch.appendingPathComponent("managed"))
/// let defaults = try Defaults(suiteName: "com.example.app", administeredSettings: settings)
/// ```
///
/// A ``Defaults`` that follows files follows these directories from the moment it opens, whether
/// or not they exist yet: a directory made, removed or replaced later, and the files in it, are
/// followed live, and so is a `chmod` or `chown` that makes a managed file trusted or not.
public struct AdministeredSettings: Sendable, Hashable {
    /// The directories of system-wide defaults, the one that wins first (`$XDG_CONFIG_DIRS`).
    public var systemDirectories: [URL] { didSet { madePaths = nil } }
    /// The directory of managed files, nil for none.
    public var managedDirectory: URL? { didSet { madePaths = nil } }
    /// The user ID a managed file and its directory must belong to (0, root).
    public var trustedOwner: UInt32
    /// The directories' paths, when ``fromEnvironment()`` made them with these settings (cleared
    /// when a directory is changed): not part of what the settings are.
    private var madePaths: Paths?

    /// Whether two settings name the same directories and trusted owner.
    public static func == (lhs: AdministeredSettings, rhs: AdministeredSettings) -> Bool {
        lhs.systemDirectories == rhs.systemDirectories && lhs.managedDirectory == rhs.managedDirectory
            && lhs.trustedOwner == rhs.trustedOwner
    }

    /// Hashes the directories and the trusted owner, what ``==(_:_:)`` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(systemDirectories)
        hasher.combine(managedDirectory)
        hasher.combine(trustedOwner)
    }

    /// The default managed directory: `/etc/livedefaults/managed`.
    public static let defaultManagedDirectory = URL(fileURLWithPath: "/etc/livedefaults/managed")

    /// No system-wide defaults and no forced keys.
    public static let none = AdministeredSettings(systemDirectories: [], managedDirectory: nil)

    /// Creates settings.
    ///
    /// - Parameters:
    ///   - systemDirectories: The directories of system-wide defaults, the one that wins first.
    ///   - managedDirectory: The directory of managed files, nil for none.
    ///   - trustedOwner: The user ID managed files must belong to (root by default).
    public init(systemDirectories: [URL], managedDirectory: URL?, trustedOwner: UInt32 = 0) {
        self.systemDirectories = systemDirectories
        self.managedDirectory = managedDirectory
        self.trustedOwner = trustedOwner
    }

    /// The settings of this process's environment: `$XDG_CONFIG_DIRS` (colon-separated absolute
    /// paths; `/etc/xdg` when unset or empty, relative entries ignored, as the XDG Base Directory
    /// specification says) and `$LIVEDEFAULTS_MANAGED_DIR` (else `/etc/livedefaults/managed`).
    ///
    /// - Returns: The settings, with root as the trusted owner.
    public static func fromEnvironment() -> AdministeredSettings {
        // Two variables read directly: building the whole environment as a dictionary took a
        // good part of opening a small suite.
        let configDirectories = getenv("XDG_CONFIG_DIRS").map { String(cString: $0) }
        let managed = getenv("LIVEDEFAULTS_MANAGED_DIR").map { String(cString: $0) }
        // The settings (and their directories' paths) are made again only when a variable
        // changed: every open of a suite by name asks, and making them cost about 11,000
        // instructions of a cold open of a small suite (docs/performance.md).
        if let last = lastFromEnvironment.withLock({ $0 }), last.configDirectories == configDirectories,
            last.managed == managed
        {
            return last.settings
        }
        var environment: [String: String] = [:]
        environment["XDG_CONFIG_DIRS"] = configDirectories
        environment["LIVEDEFAULTS_MANAGED_DIR"] = managed
        var settings = fromEnvironment(environment)
        settings.madePaths = Paths(settings)
        let made = EnvironmentSettings(configDirectories: configDirectories, managed: managed, settings: settings)
        lastFromEnvironment.withLock { $0 = made }
        return settings
    }

    /// The settings ``fromEnvironment()`` last made, with the variables they were made from.
    private struct EnvironmentSettings: Sendable {
        let configDirectories: String?
        let managed: String?
        let settings: AdministeredSettings
    }

    private static let lastFromEnvironment = Locked<EnvironmentSettings?>(nil)

    /// The directories as paths (what the files are opened by).
    struct Paths: Sendable {
        /// ``managedDirectory``'s path.
        let managed: String?
        /// ``systemDirectories``' paths.
        let system: [String]

        init(_ settings: AdministeredSettings) {
            managed = settings.managedDirectory?.path
            system = settings.systemDirectories.map(\.path)
        }
    }

    /// The directories' paths: those ``fromEnvironment()`` made with the settings when these are
    /// its settings (each `URL`'s `path` costs a few thousand instructions, and comparing the
    /// settings with the last ones it made, their `URL`s, about 1,500 of a cold open).
    var paths: Paths { madePaths ?? Paths(self) }

    /// The settings `environment` gives (``fromEnvironment()``).
    package static func fromEnvironment(_ environment: [String: String]) -> AdministeredSettings {
        let directories = BaseDirectories.system("XDG_CONFIG_DIRS", defaults: ["/etc/xdg"]) { environment[$0] }
        let managed = environment["LIVEDEFAULTS_MANAGED_DIR"].flatMap { $0.hasPrefix("/") ? $0 : nil }
        return AdministeredSettings(
            systemDirectories: directories.map { URL(fileURLWithPath: $0, isDirectory: true) },
            managedDirectory: managed.map { URL(fileURLWithPath: $0, isDirectory: true) }
                ?? defaultManagedDirectory)
    }
}
