import Foundation

/// Managed files found untrusted and already reported, with the reason: reported again only when
/// the reason changes (docs/design.md, "Administered settings: forced keys").
private let untrustedReported = Locked<[String: String]>([:])

/// A managed file (forced keys): read and watched as a suite file, never written, and its values
/// used only while the file and its directory pass the ownership rule (``ManagedFileTrust``).
///
/// An untrusted file reads as empty and is reported once (``DefaultsError/Code/untrustedManagedFile``);
/// once fixed, its values count at the next reload, which a `chmod` or `chown` of the file or its
/// directory brings (the watcher reports attribute changes).
package final class ManagedFileBackend: SuiteBackend {
    private let file: FileBackend<SystemFileOperations>
    private let trust: ManagedFileTrust
    private let state = Locked(State())

    private struct State {
        /// The values of the file itself, trusted or not.
        var fileValues: [String: PropertyListValue] = [:]
        /// Whether the values were given as trusted last time.
        var trusted = true
        var version: UInt64 = 0
    }

    /// The managed file's path, for ``Defaults/sources(forKey:)``.
    package var sourceDescription: String? { trust.path }

    /// - Parameters:
    ///   - location: The managed file.
    ///   - trustedOwner: The user ID the file and its directory must belong to.
    package init(location: SuiteLocation, trustedOwner: UInt32) {
        self.file = FileBackend(location: location, operations: SystemFileOperations())
        self.trust = ManagedFileTrust(path: location.path, suite: location.name, trustedOwner: trustedOwner)
    }

    package func load() -> SuiteLoad {
        var load = file.load()
        let problem = trust.problem()
        let values = state.withLock { state -> [String: PropertyListValue] in
            state.fileValues = load.snapshot.values
            state.trusted = problem == nil
            state.version += 1
            return state.trusted ? state.fileValues : [:]
        }
        load.snapshot = SuiteSnapshot(values: values, version: state.withLock { $0.version })
        if let problem = Self.reportable(problem, path: trust.path) { load.warnings.append(problem) }
        return load
    }

    package func write(_ changes: SuiteWrite, over known: inout SuiteSnapshot) throws(DefaultsError) -> SuiteWritten {
        // Nothing writes a managed file: a `Defaults` writes its own suite, never this store.
        SuiteWritten(
            snapshot: known, unchangedByOthers: true,
            refusal: DefaultsError(
                .forcedKey, "The managed file \(trust.path) is the administrator's; LiveDefaults never writes it.",
                suite: trust.suite, path: trust.path))
    }

    package func reload(goneForGood: Bool) -> SuiteReload {
        let reloaded = file.reload(goneForGood: goneForGood)
        let problem = trust.problem()
        let result = state.withLock { state -> SuiteReload in
            switch reloaded {
            case .changed(let snapshot): state.fileValues = snapshot.values
            case .unchanged: if state.trusted == (problem == nil) { return .unchanged }
            case .failed, .unreadable: return reloaded
            }
            state.trusted = problem == nil
            state.version += 1
            return .changed(SuiteSnapshot(values: state.trusted ? state.fileValues : [:], version: state.version))
        }
        if let problem = Self.reportable(problem, path: trust.path) { DefaultsErrorReporting.report(problem) }
        return result
    }

    package func startWatching(_ onChange: @escaping @Sendable (SuiteChange) -> Void) {
        // A file's watch only ever says "may have changed" or "gone for good": both reload, and
        // the reload applies the ownership rule.
        file.startWatching(onChange)
    }

    /// `problem` when it was not reported already for `path`; forgets `path` when there is none.
    private static func reportable(_ problem: DefaultsError?, path: String) -> DefaultsError? {
        untrustedReported.withLock { reported in
            guard let problem else {
                reported[path] = nil
                return nil
            }
            if reported[path] == problem.message { return nil }
            reported[path] = problem.message
            return problem
        }
    }
}

/// The ownership rule for managed files: a managed file counts only if a user other than the
/// trusted owner (root) cannot change it — the file and its directory belong to the trusted owner
/// and neither is writable by group or others. Otherwise a user could lift a lock, or force
/// values on other users (docs/design.md, "Administered settings: forced keys").
package struct ManagedFileTrust: Sendable {
    package let path: String
    package let suite: String
    package let trustedOwner: UInt32

    package init(path: String, suite: String, trustedOwner: UInt32) {
        self.path = path
        self.suite = suite
        self.trustedOwner = trustedOwner
    }

    /// Why the file may not be trusted, nil when it may (or when there is no file: nothing to
    /// trust). The file's path is followed through symbolic links: the file reached is checked.
    /// `operations` makes the two `stat`s (``FileOperations``).
    package func problem(using operations: some FileOperations = SystemFileOperations()) -> DefaultsError? {
        var info = stat()
        guard operations.stat(path, &info) == 0 else { return nil }
        if let problem = Self.problem(info, what: "managed file \(path)", owner: trustedOwner) {
            return error(problem)
        }
        let directory = (path as NSString).deletingLastPathComponent
        guard operations.stat(directory, &info) == 0 else { return nil }
        if let problem = Self.problem(
            info, what: "directory \(directory) of the managed file \(path)", owner: trustedOwner)
        {
            return error(problem)
        }
        return nil
    }

    private func error(_ problem: String) -> DefaultsError {
        DefaultsError(
            .untrustedManagedFile,
            "The \(problem), so a user other than uid \(trustedOwner) could change it; its keys are not forced. "
                + "Make it belong to uid \(trustedOwner) and not writable by group or others "
                + "(chown \(trustedOwner) and chmod go-w).",
            suite: suite, path: path)
    }

    private static func problem(_ info: stat, what: String, owner: UInt32) -> String? {
        if info.st_uid != owner { return "\(what) belongs to uid \(info.st_uid)" }
        let mode = info.st_mode & 0o7777
        if mode & (S_IWGRP | S_IWOTH) != 0 {
            return "\(what) can be written by group or others (mode \(String(mode, radix: 8)))"
        }
        return nil
    }
}
