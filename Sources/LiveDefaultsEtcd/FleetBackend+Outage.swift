import Foundation
import LiveDefaults
import LiveDefaultsPropertyList

/// What a fleet suite tells about its link with etcd: its state, the outage reported once, and
/// the problems of values in etcd.
extension FleetBackend {
    /// The follower's status: a range (live), or etcd lost (offline), reported once per outage.
    func statusChanged(_ status: EtcdSuiteFollower.Status) {
        switch status {
        case .live:
            let mirror = follower.snapshot
            let (onRecovery, recovered) = state.withLock { state in
                state.told = status
                if let cached = state.cached {
                    if cached.clusterID != 0 && cached.clusterID != mirror.clusterID {
                        state.cacheReplacedBecause =
                            "etcd's cluster ID is \(String(mirror.clusterID, radix: 16)), the cache's "
                            + String(cached.clusterID, radix: 16)
                    } else if mirror.revision < cached.revision {
                        state.cacheReplacedBecause =
                            "etcd's revision \(mirror.revision) is below the cache's \(cached.revision)"
                    }
                    state.cached = nil
                }
                let recovered = state.outage.map { _ in
                    recovery(
                        lasted: state.outageBegan.map { Date().timeIntervalSince($0) } ?? 0,
                        changedKeys: Self.changedKeys(from: state.valuesAtOutage, to: mirror.values))
                }
                state.outage = nil
                state.outageBegan = nil
                state.valuesAtOutage = [:]
                return (state.onRecovery, recovered)
            }
            // The range itself asked the store to reload (rangeArrived).
            if let recovered {
                report(recovered)
                // Dead journals and the changes held while etcd was away: the assembler's work.
                onRecovery?()
            }
        case .offline(let since, let problem):
            let mirror = follower.snapshot
            let error = state.withLock { state -> DefaultsError in
                let known: String
                if mirror.resyncs > 0 {
                    known =
                        "The \(Self.settingCount(mirror.values)) values last seen (revision \(mirror.revision)) stay "
                        + "in use"
                } else if let cached = state.cached {
                    known =
                        "The \(Self.settingCount(cached.values)) values cached at revision \(cached.revision) "
                        + "(\(location.path)) are in use"
                } else {
                    known = "No values are known yet (no cache): only registered defaults apply"
                }
                let error = DefaultsError(
                    .remoteUnavailable,
                    "The fleet suite \"\(suite.name)\" cannot reach \(suite.whereabouts): \(problem). \(known); "
                        + "changes made here stay pending, and the suite is followed again once etcd answers.",
                    suite: suite.name, path: location.path)
                state.outage = error
                state.told = status
                // From the last contact, as the state's `since`: etcd went silent then, and was
                // noticed a check's (or a range's) timeout later.
                state.outageBegan = since
                state.valuesAtOutage = mirror.resyncs > 0 ? mirror.values : state.cached?.values ?? [:]
                return error
            }
            report(error)
        case .starting:
            state.withLock { $0.told = status }
        }
        stateListeners.send(fleetState)
    }

    /// The report that ends an outage: once, through the same channel as the loss, with how long
    /// it lasted and how many keys etcd changed meanwhile (from the values in use when it began to
    /// those of the first range after it).
    private func recovery(lasted seconds: TimeInterval, changedKeys: Int) -> DefaultsError {
        let changed =
            switch changedKeys {
            case 0: "no key changed meanwhile"
            case 1: "1 key changed meanwhile and is now in use"
            default: "\(changedKeys) keys changed meanwhile and are now in use"
            }
        return DefaultsError(
            .remoteRecovered,
            "The fleet suite \"\(suite.name)\" reaches \(suite.whereabouts) again after an outage of "
                + "\(String(format: "%.1f", seconds)) s: \(changed); any changes made here meanwhile are sent now.",
            suite: suite.name, path: location.path)
    }

    /// How many settings have another value (or none) in `new` than in `old`; the library's own
    /// keys (``ReservedKeys``) are not settings.
    static func changedKeys(from old: [String: PropertyListValue], to new: [String: PropertyListValue]) -> Int {
        var count = 0
        old.forEachDifference(to: new, value: { $0 }) { key, _, _ in if !ReservedKeys.all.contains(key) { count += 1 } }
        return count
    }

    /// How many settings `values` holds: the library's own keys (``ReservedKeys``) are not settings.
    static func settingCount(_ values: [String: PropertyListValue]) -> Int {
        values.keys.count { !ReservedKeys.all.contains($0) }
    }

    /// Reports `error`, and keeps it for ``reported``.
    func report(_ error: DefaultsError) {
        state.withLock { state in
            state.reported.append(error)
            if state.reported.count > 100 { state.reported.removeFirst() }
        }
        DefaultsErrorReporting.report(error)
    }

    /// What this backend reported, oldest first (the last 100).
    var reported: [DefaultsError] { state.withLock { $0.reported } }

    /// The follower's problems: an unreadable value is reported here; etcd out of reach comes
    /// through the status (``statusChanged(_:)``), once per outage.
    func report(_ problem: RemoteProblem) {
        guard case .unreadableValue = problem else { return }
        report(
            DefaultsError(
                .malformedPropertyList,
                "In fleet suite \"\(suite.name)\" (\(suite.whereabouts)), \(problem). It reads as absent and is "
                    + "not overwritten; fix it with a property-list document (etcdctl put).",
                suite: suite.name))
    }

    // MARK: State

    /// The status this backend was told, so that a state that says etcd is lost comes with the
    /// outage in ``outage`` (both are set under one lock); while it is live, the follower's own
    /// revision, which moves on with each watch message without a new status.
    var fleetState: FleetState {
        let (status, cached) = state.withLock { ($0.told, $0.cached) }
        let mirror = follower.snapshot
        switch status {
        case .starting:
            return .connecting
        case .live(let revision):
            if case .live(let now) = follower.status { return .live(revision: now) }
            return .live(revision: revision)
        case .offline(let since, let problem):
            if mirror.resyncs > 0 { return .stale(revision: mirror.revision, since: since, reason: problem) }
            if let cached { return .stale(revision: cached.revision, since: since, reason: problem) }
            return .offline(since: since, reason: problem)
        }
    }

    /// The outage being reported, nil while etcd answers.
    var outage: DefaultsError? { state.withLock { $0.outage } }

    /// Why the last re-sync replaced the cache outright (another cluster, a revision that went back).
    var cacheReplacedBecause: String? { state.withLock { $0.cacheReplacedBecause } }

    /// The state now, then each change of it.
    func stateUpdates() -> AsyncStream<FleetState> { stateListeners.stream { fleetState } }
}
