import LiveDefaults

extension SuiteWrite {
    /// The keys the write touches.
    var keys: [String] {
        switch self {
        case .changes(let changes): Array(changes.keys)
        case .whole(let values, _): Array(values.keys)
        }
    }
}
