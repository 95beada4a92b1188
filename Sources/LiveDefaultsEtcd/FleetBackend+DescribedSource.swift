import LiveDefaults

// Where a fleet suite's values come from, for `Defaults.sources(forKey:)` and `defaults explain`.
extension FleetBackend {
    package var sourceDescription: String? { suite.whereabouts }
    package var sourceRevision: Int64? { installedRevision }
}
