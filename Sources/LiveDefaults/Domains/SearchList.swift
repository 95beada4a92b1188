/// One layer of the search list, as ``Defaults/State/forEachSearchLayer(suite:global:_:)`` gives it.
enum SearchLayer {
    /// Values kept in memory: the argument domain, a volatile domain or the registration domain.
    case values(ValueSource.Layer, domain: String, [String: PropertyListValue])
    /// A store other than the instance's suite: a managed or system-wide file, a fleet suite, the
    /// ByHost file, an added suite, the global domain.
    case store(ValueSource.Layer, SuiteStore)
    /// The instance's own suite: a change being applied may give its value without asking it.
    case suite(SuiteStore)
}

/// What walks the search list (``Defaults/State/walkSearchList(suite:global:_:)``): each method
/// is given one layer, borrowed, and returns whether to go on.
protocol SearchListVisitor {
    /// A layer of values kept in memory.
    mutating func visit(_ layer: ValueSource.Layer, domain: String, values: [String: PropertyListValue]) -> Bool
    /// A store other than the instance's suite.
    mutating func visit(_ layer: ValueSource.Layer, store: SuiteStore) -> Bool
    /// The instance's own suite.
    mutating func visitSuite(_ suite: SuiteStore) -> Bool
}

extension Defaults.State {
    /// Walks the search list from the top until `visitor` says stop.
    ///
    /// The one place the search list's order is written (docs/design.md, "The search list"):
    /// lookups (``Defaults/resolve(_:_:suite:global:suiteValue:)``), the whole suite's resolution
    /// (``Defaults/resolveAll(_:suite:global:)``), prior calls and ``Defaults/sources(forKey:)`` all
    /// walk it. Generic over the visitor, so that a lookup, on every `set`'s path, is specialized
    /// and passes each layer borrowed: an enum of layers handed to a closure cost a `set` 10 % more
    /// instructions, in retains. Called with the state lock held.
    ///
    /// - Parameters:
    ///   - suite: The instance's suite.
    ///   - global: The global domain's store, if searched.
    ///   - visitor: Given each layer in order.
    @inline(__always)
    func walkSearchList<Visitor: SearchListVisitor>(
        suite: SuiteStore, global: SuiteStore?, _ visitor: inout Visitor
    ) {
        guard visitor.visit(.argumentDomain, domain: Defaults.argumentDomain, values: arguments) else { return }
        for store in forced { guard visitor.visit(.managed, store: store) else { return } }
        for store in storesBeforeSuite { guard visitor.visit(.managedFleet, store: store) else { return } }
        for domain in volatileDomains {
            guard visitor.visit(.volatileDomain, domain: domain.name, values: domain.values) else { return }
        }
        for store in currentHost { guard visitor.visit(.currentHost, store: store) else { return } }
        guard visitor.visitSuite(suite) else { return }
        // The suite's file for any host, below an instance whose suite is a ByHost file.
        for store in anyHost { guard visitor.visit(.suite, store: store) else { return } }
        for store in storesAfterSuite { guard visitor.visit(.fleetDefaults, store: store) else { return } }
        for store in addedSuites { guard visitor.visit(.addedSuite, store: store) else { return } }
        if let global { guard visitor.visit(.globalDomain, store: global) else { return } }
        for store in system { guard visitor.visit(.systemWide, store: store) else { return } }
        _ = visitor.visit(.registrationDomain, domain: Defaults.registrationDomain, values: registration)
    }

    /// ``walkSearchList(suite:global:_:)`` with each layer handed to `body` as a ``SearchLayer``,
    /// for the walks that are not on a write's path.
    ///
    /// - Parameters:
    ///   - suite: The instance's suite.
    ///   - global: The global domain's store, if searched.
    ///   - body: Called with each layer in order; returns whether to go on.
    func forEachSearchLayer(suite: SuiteStore, global: SuiteStore?, _ body: (SearchLayer) -> Bool) {
        struct Layers: SearchListVisitor {
            let body: (SearchLayer) -> Bool
            func visit(_ layer: ValueSource.Layer, domain: String, values: [String: PropertyListValue]) -> Bool {
                body(.values(layer, domain: domain, values))
            }
            func visit(_ layer: ValueSource.Layer, store: SuiteStore) -> Bool { body(.store(layer, store)) }
            func visitSuite(_ suite: SuiteStore) -> Bool { body(.suite(suite)) }
        }
        withoutActuallyEscaping(body) { body in
            var layers = Layers(body: body)
            walkSearchList(suite: suite, global: global, &layers)
        }
    }
}

/// A lookup of one key: the first layer that has it (``Defaults/resolve(_:_:suite:global:suiteValue:)``).
///
/// A suite's value that the caller knows is not kept here: the walk stops at the suite when that
/// value is there, and the caller returns its own. Copying it in and out cost a `set` about 100
/// instructions (the property-list value's outlined copies).
struct SearchListLookup: SearchListVisitor {
    let key: String
    /// Whether the caller knows the suite's value (then the suite is not asked).
    let knowsSuiteValue: Bool
    /// Whether that known value is there (not a removal).
    let suiteHasValue: Bool
    /// The value found in a layer other than a known suite value.
    private(set) var found: PropertyListValue?
    /// Whether the walk stopped at the suite, whose known value wins.
    private(set) var stoppedAtKnownSuiteValue = false

    @inline(__always)
    init(key: String, suiteValue: PropertyListValue??) {
        self.key = key
        // Matched without binding the value: a binding copies it.
        switch suiteValue {
        case .none: (knowsSuiteValue, suiteHasValue) = (false, false)
        case .some(.none): (knowsSuiteValue, suiteHasValue) = (true, false)
        case .some(.some): (knowsSuiteValue, suiteHasValue) = (true, true)
        }
    }

    @inline(__always)
    mutating func visit(_ layer: ValueSource.Layer, domain: String, values: [String: PropertyListValue]) -> Bool {
        // Assigned only when found: assigning nil destroyed the nil before it, a call per layer.
        guard let value = values[key] else { return true }
        found = value
        return false
    }

    @inline(__always)
    mutating func visit(_ layer: ValueSource.Layer, store: SuiteStore) -> Bool {
        guard let value = store.orderedValue(forKey: key) else { return true }
        found = value
        return false
    }

    @inline(__always)
    mutating func visitSuite(_ suite: SuiteStore) -> Bool {
        guard knowsSuiteValue else { return visit(.suite, store: suite) }
        stoppedAtKnownSuiteValue = suiteHasValue
        return !suiteHasValue
    }
}
