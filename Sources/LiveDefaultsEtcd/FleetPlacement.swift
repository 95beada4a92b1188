/// Where a fleet suite is searched, relative to the suite a `Defaults` opened.
public enum FleetPlacement: Sendable, Hashable {
    /// Right after the local suite, before suites added by name: the fleet gives defaults, and a
    /// local `defaults write` overrides them on one machine.
    case fleetDefaults
    /// Right after the administrator's managed files, before volatile domains and the local suite:
    /// the fleet's keys are forced (`objectIsForced(forKey:)`), and only the argument domain
    /// (`-key value`) and managed files win over them. Local writes of a managed key go to the
    /// local suite and stay hidden while the fleet has the key.
    case managed
}
