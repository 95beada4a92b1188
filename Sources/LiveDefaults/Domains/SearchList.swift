/// One layer of the search list, as ``Defaults/State/walkSearchList(suite:global:_:)`` gives it.
enum SearchLayer {
    /// Values kept in memory: the argument domain, a volatile domain or the registration domain.
    case values(ValueSource.Layer, domain: String, [String: PropertyListValue])
    /// A store other than the instance's suite: a managed or system-wide file, a fleet suite, the
    /// ByHost file, an added suite, the global domain.
    case store(ValueSource.Layer, SuiteStore)
    /// The instance's own suite: a change being applied may give its value without asking it.
    case suite(SuiteStore)
}

extension Defaults.State {
    /// Walks the search list from the top, calling `visit` with each layer until it returns false.
    ///
    /// The one place the search list's order is written (docs/design.md, "The search list"):
    /// lookups (``Defaults/resolve(_:_:suite:global:suiteValue:)``), the whole suite's resolution
    /// (``Defaults/resolveAll(_:suite:global:)``), prior calls and ``Defaults/sources(forKey:)`` all
    /// walk it. Called with the state lock held.
    ///
    /// - Parameters:
    ///   - suite: The instance's suite.
    ///   - global: The global domain's store, if searched.
    ///   - visit: Called with each layer in order; returns whether to go on.
    @inline(__always)
    func walkSearchList(suite: SuiteStore, global: SuiteStore?, _ visit: (SearchLayer) -> Bool) {
        guard visit(.values(.argumentDomain, domain: Defaults.argumentDomain, arguments)) else { return }
        for store in forced { guard visit(.store(.managed, store)) else { return } }
        for store in storesBeforeSuite { guard visit(.store(.managedFleet, store)) else { return } }
        for domain in volatileDomains {
            guard visit(.values(.volatileDomain, domain: domain.name, domain.values)) else { return }
        }
        for store in currentHost { guard visit(.store(.currentHost, store)) else { return } }
        guard visit(.suite(suite)) else { return }
        // The suite's file for any host, below an instance whose suite is a ByHost file.
        for store in anyHost { guard visit(.store(.suite, store)) else { return } }
        for store in storesAfterSuite { guard visit(.store(.fleetDefaults, store)) else { return } }
        for store in addedSuites { guard visit(.store(.addedSuite, store)) else { return } }
        if let global { guard visit(.store(.globalDomain, global)) else { return } }
        for store in system { guard visit(.store(.systemWide, store)) else { return } }
        _ = visit(.values(.registrationDomain, domain: Defaults.registrationDomain, registration))
    }
}
