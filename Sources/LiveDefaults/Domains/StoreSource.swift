/// Where a ``Defaults``' stores come from.
enum StoreSource: Sendable {
    /// The process's file stores (one per file, ``SuiteStore/open(_:watching:)``).
    case files(watching: Bool)
    /// The stores of one in-memory world.
    case memory(MemorySuites)

    var watchesFiles: Bool {
        if case .files(watching: true) = self { return true }
        return false
    }

    /// The store of the suite at `location`.
    ///
    /// - Parameters:
    ///   - location: The suite file.
    ///   - keepsUnwatched: Whether a file store is kept for the next open while it is not watched
    ///     (the global domain's, ``SuiteStore/open(_:watching:keepsUnwatched:)``).
    /// - Returns: The suite's store.
    func open(_ location: SuiteLocation, keepsUnwatched: Bool = false) -> SuiteStore {
        switch self {
        case .files(let watching): SuiteStore.open(location, watching: watching, keepsUnwatched: keepsUnwatched)
        case .memory(let suites): suites.open(location)
        }
    }

    /// The store of the suite at `location` for a one-off access: not watched.
    func openUnwatched(_ location: SuiteLocation) -> SuiteStore {
        switch self {
        case .files: SuiteStore.open(location, watching: false)
        case .memory(let suites): suites.open(location)
        }
    }
}
