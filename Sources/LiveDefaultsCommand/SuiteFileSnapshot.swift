import Dispatch
import LiveDefaults

/// A local domain read once, for the verbs that only read it (`read`, `read-type`, `export`, `find`, the
/// completions): the suite file loaded by the store's own file backend, without a store around it. Opening
/// a `Defaults` builds the store's observation and search-list state, about a sixth of a one-shot `read`
/// (docs/design.md, "The `defaults` command's start-up"); the file's reading rules (what counts as corrupt,
/// unreadable or not a regular file) stay the backend's.
final class SuiteFileSnapshot: CommandDomain {
    let lastError: DefaultsError?
    private let values: [String: PropertyListValue]

    init(_ location: SuiteLocation) {
        let load = FileBackend(location: location, operations: SystemFileOperations()).load()
        lastError = load.error
        values = load.snapshot.values
    }

    /// Opens a named, global or path domain for reading; nil for a remote one.
    static func open(_ domain: DomainReference, directory: String) throws -> SuiteFileSnapshot? {
        switch domain {
        case .global: SuiteFileSnapshot(try SuiteLocation(suiteName: Defaults.globalDomain, directory: directory))
        case .named(let name): SuiteFileSnapshot(try SuiteLocation(suiteName: name, directory: directory))
        case .path(let path): SuiteFileSnapshot(SuiteLocation(filePath: path + ".plist"))
        case .remote: nil
        }
    }

    func persistentValues() -> [String: PropertyListValue] { values }

    // Only the reading verbs get a snapshot (DefaultsCommandRunner.openForReading).
    func set(_ value: PropertyListValue?, forKey key: String) {
        preconditionFailure("a SuiteFileSnapshot is read only")
    }
    func replacePersistentValues(_ values: [String: PropertyListValue]?) {
        preconditionFailure("a SuiteFileSnapshot is read only")
    }
    func synchronize() throws {}
    func watchChanges(queue: DispatchQueue, _ handler: @escaping @Sendable (WatchedChange) -> Void)
        -> any AnyObject & Sendable
    {
        preconditionFailure("a SuiteFileSnapshot is read only")
    }
}
