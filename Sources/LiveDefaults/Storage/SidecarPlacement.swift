import Foundation

/// Where a suite file's sidecars are kept: its lock file and its journals directory
/// (docs/design.md, "Administered settings: no files beside the administrator's").
///
/// Beside the file, except for a file in an administered directory — a system-wide or managed
/// directory of ``AdministeredSettings/fromEnvironment()`` — written by a process that has a
/// runtime directory for them: root's is `/run/livedefaults` (`$LIVEDEFAULTS_RUNTIME_DIR`, an
/// absolute path, names another, for any user). There the sidecars keep the names they would have
/// beside the file, under the file's own path: the lock of `/etc/xdg/com.example.app.plist` is
/// `/run/livedefaults/etc/xdg/com.example.app.plist.lock`, in directories made `0700`. So
/// `sudo defaults write /etc/xdg/com.example.app …` leaves nothing in `/etc` but the file, and two
/// such writers still take one lock.
package struct SidecarPlacement: Sendable, Equatable {
    /// The administered directories, without a trailing slash.
    let administeredDirectories: Set<String>
    /// The runtime directory, nil for none (sidecars beside the file).
    let runtimeDirectory: String?

    /// The placement of this process: its environment and user, read once.
    package static let current: SidecarPlacement = {
        func variable(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }
        var environment: [String: String] = [:]
        for name in ["XDG_CONFIG_DIRS", "LIVEDEFAULTS_MANAGED_DIR", "LIVEDEFAULTS_RUNTIME_DIR"] {
            environment[name] = variable(name)
        }
        return SidecarPlacement(environment: environment, isRoot: geteuid() == 0)
    }()

    /// The placement `environment` gives a process of root (`isRoot`) or of another user.
    package init(environment: [String: String], isRoot: Bool) {
        let settings = AdministeredSettings.fromEnvironment(environment)
        administeredDirectories = Set(
            (settings.systemDirectories + [settings.managedDirectory].compactMap { $0 }).map {
                Self.trimmed($0.path)
            })
        var runtime = environment["LIVEDEFAULTS_RUNTIME_DIR"].flatMap { $0.hasPrefix("/") ? $0 : nil }
        if runtime == nil, isRoot { runtime = "/run/livedefaults" }
        runtimeDirectory = runtime.map(Self.trimmed)
    }

    /// The path whose sidecars are those of the suite file at `path`, written as `target` (the
    /// file a symbolic link at `path` names; `path` itself otherwise): `target`, or its place
    /// under the runtime directory when `path` is in an administered directory.
    package func base(forSuiteFile path: String, target: String? = nil) -> String {
        let target = target ?? path
        guard let runtimeDirectory, !administeredDirectories.isEmpty,
            administeredDirectories.contains(SuiteFile.directory(of: path))
        else { return target }
        return runtimeDirectory + target
    }

    /// Whether the sidecars of the suite file at `path` are kept under the runtime directory.
    package func isRelocated(_ path: String) -> Bool {
        base(forSuiteFile: path) != path
    }

    /// Makes the directory of a sidecar at `sidecar` under the runtime directory, and the missing
    /// ones above it, `0700` (their names show which files an administrator writes).
    ///
    /// - Returns: The `errno` of the `mkdir` that failed, nil when the directory is there.
    static func makeDirectory(of sidecar: String, using operations: some FileOperations) -> Int32? {
        let directory = SuiteFile.directory(of: sidecar)
        var info = stat()
        if operations.stat(directory, &info) == 0 { return nil }
        var path = ""
        for component in directory.split(separator: "/", omittingEmptySubsequences: true) {
            path += "/" + component
            if operations.mkdir(path, 0o700) != 0, errno != EEXIST { return errno }
        }
        return nil
    }

    private static func trimmed(_ path: String) -> String {
        var path = path
        while path.count > 1, path.hasSuffix("/") { path.removeLast() }
        return path
    }
}
