import Foundation
import LiveDefaults
import LiveDefaultsTestHelpers
import TestSupport
import Testing

@testable import LiveDefaultsEtcd
@testable import LiveDefaultsEtcdClient

/// Fleet suites through `Defaults`, against real etcd members: values, placements, echoes,
/// bursts, two writers, compare-and-set, offline starts and writes, a read-only role, another
/// cluster. In every scenario each observer's chain of old → new is unbroken and the final state
/// equals etcd's.
@Suite(.requiresEtcd, .serialized)
struct FleetSuiteTests {
    @Test func valuesWithUnicodeKeysGoRoundTripThroughEtcdWithTheirTypes() async throws {
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        let writer = try Defaults.fleet(scenario.suite())
        let connection = try #require(writer.fleetConnection)
        #expect(await eventually(within: 30) { connection.state.isLive })
        let log = ChangeLog(writer)
        let nfd = "cafe\u{301}"  // "café" decomposed: the same defaults key as the NFC spelling
        let values: [String: PropertyListValue] = [
            "über/größe": 14, "テーマ": "dark", nfd: true, "ratio": 0.5, "stamp": .date(Date(timeIntervalSince1970: 1e9)),
            "blob": .data(Data([0, 1, 2])), "list": ["a", 1], "empty": "",
        ]
        for (key, value) in values { writer.set(value, forKey: key) }
        try await connection.synchronize()
        // etcd holds each key once, in NFC, with its type.
        let stored = try await scenario.etcdValues()
        #expect(stored == values)
        let rawKeys = try scenario.raw.range(prefix: scenario.prefix).kvs.compactMap { $0.key?.data }
        #expect(rawKeys.contains(scenario.prefix + Data("café".precomposedStringWithCanonicalMapping.utf8)))
        #expect(!rawKeys.contains(scenario.prefix + Data(nfd.utf8)))
        // Another machine (a store of its own) reads them, by either spelling.
        let reader = try scenario.localDefaults()
        reader.addFleetSuite(try scenario.suite(variant: 1, sharesCache: false))
        #expect(await eventually { reader.propertyList(forKey: "テーマ") == "dark" })
        #expect(reader.integer(forKey: "über/größe") == 14)
        #expect(reader.bool(forKey: "café"))
        #expect(reader.propertyList(forKey: "stamp") == .date(Date(timeIntervalSince1970: 1e9)))
        // Removing goes through too.
        writer.removeObject(forKey: nfd)
        try await connection.synchronize()
        #expect(try await scenario.etcdValues()["café"] == nil)
        #expect(await eventually { reader.propertyList(forKey: "café") == nil })
        #expect(log.brokenChains().isEmpty)
        #expect(log.all.allSatisfy { $0.origin == .local })
        #expect(writer.persistentValues() == (try await scenario.etcdValues()))
        // Replacing the whole suite deletes the keys it no longer has.
        try writer.setPersistentDomain(["only": "this"], forName: scenario.name)
        try await connection.synchronize()
        #expect(try await scenario.etcdValues() == ["only": "this"])
        #expect(await eventually { reader.propertyList(forKey: "テーマ") == nil })
        #expect(reader.propertyList(forKey: "only") == "this")
    }

    @Test func fleetDefaultsYieldToTheLocalSuiteAndManagedWinsOverItButNotOverArguments() async throws {
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        try await scenario.put(["theme": "fleet", "fontSize": 12, "banner": "fleet"])
        let local = try scenario.localDefaults()
        local.set("local", forKey: "theme")
        local.set(20, forKey: "fontSize")
        try local.synchronize()

        let asDefaults = try scenario.localDefaults()
        let log = ChangeLog(asDefaults)
        let connection = asDefaults.addFleetSuite(try scenario.suite(), placement: .fleetDefaults)
        #expect(await eventually { asDefaults.propertyList(forKey: "banner") == "fleet" })
        #expect(asDefaults.propertyList(forKey: "theme") == "local")
        #expect(asDefaults.integer(forKey: "fontSize") == 20)
        // Removing the local value lets the fleet's show through.
        asDefaults.removeObject(forKey: "theme")
        #expect(asDefaults.propertyList(forKey: "theme") == "fleet")

        let managed = try scenario.localDefaults(directory: "config-managed")
        managed.set(20, forKey: "fontSize")
        managed.addFleetSuite(try scenario.suite(variant: 1, sharesCache: false), placement: .managed)
        #expect(await eventually { managed.integer(forKey: "fontSize") == 12 })
        #expect(managed.objectIsForced(forKey: "fontSize"))
        #expect(!managed.objectIsForced(forKey: "local-only"))
        #expect(managed.sources(forKey: "fontSize").map(\.layer) == [.managedFleet, .suite])
        #expect(managed.sources(forKey: "fontSize").first?.revision != nil)
        managed.set(30, forKey: "fontSize")  // written locally, and hidden by the fleet
        #expect(managed.integer(forKey: "fontSize") == 12)
        managed.setVolatileDomain(["fontSize": 40], forName: Defaults.argumentDomain)
        #expect(managed.integer(forKey: "fontSize") == 40)
        managed.removeVolatileDomain(forName: Defaults.argumentDomain)

        // A change in etcd reaches both placements, as the search list decides.
        let revision = try await scenario.put(["fontSize": 13, "theme": "fleet2"])
        #expect(await connection.caughtUp(to: revision))
        #expect(await eventually { managed.integer(forKey: "fontSize") == 13 })
        #expect(await eventually { asDefaults.propertyList(forKey: "theme") == "fleet2" })
        #expect(asDefaults.integer(forKey: "fontSize") == 20)
        #expect(await eventually { log.of("theme").last?.origin == .external })
        #expect(
            log.current
                == asDefaults.dictionaryRepresentation().compactMapValues {
                    try? PropertyListValue(foundationObject: $0)
                })
        #expect(log.brokenChains().isEmpty)
        #expect(FleetStores.existing(try scenario.suite()) === connection.store)
        asDefaults.removeFleetSuite(try scenario.suite())
        #expect(asDefaults.propertyList(forKey: "banner") == nil)
    }

    @Test func anOwnWriteIsDeliveredOnceAsLocalAndNeverAgainAsExternal() async throws {
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        let defaults = try Defaults.fleet(scenario.suite())
        let connection = try #require(defaults.fleetConnection)
        #expect(await eventually(within: 30) { connection.state.isLive })
        let log = ChangeLog(defaults)
        for round in 1...20 {
            defaults.set(.integer(Int64(round)), forKey: "k")
            if round % 4 == 0 { try await connection.synchronize() }
        }
        try await connection.synchronize()
        // Let every echo arrive: another machine's write after ours, then wait for it here.
        let marker = try await scenario.put(["marker": true])
        #expect(await connection.caughtUp(to: marker))
        #expect(await eventually { defaults.bool(forKey: "marker") })
        // Observers are called just after the change step that made the value readable, and in order:
        // once the marker has reached the log, so has any echo before it.
        #expect(await eventually { log.of("marker").map(\.origin) == [.external] })
        let changes = log.of("k")
        #expect(changes.count == 20)
        #expect(changes.allSatisfy { $0.origin == .local })
        #expect(changes.map(\.newValue) == (1...20).map { .integer(Int64($0)) })
        #expect(defaults.persistentValues() == (try await scenario.etcdValues()))
    }

    @Test func anotherClientsTransactionOfSeveralKeysIsOneBurst() async throws {
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        let defaults = try scenario.localDefaults()
        let connection = defaults.addFleetSuite(try scenario.suite())
        #expect(await eventually(within: 30) { connection.state.isLive })
        // One step: the observer's first call for the transaction already sees all of its keys
        // applied (the store delivers each step before the next on the follower's thread).
        let seenAtEachCall = Locked<[Set<String>]>([])
        let token = defaults.observeAll { _ in
            let keys = Set(connection.values.keys)
            seenAtEachCall.withLock { $0.append(keys) }
        }
        defer { token.cancel() }
        let log = ChangeLog(defaults)
        let revision = try await scenario.put(["a": 1, "b": "two", "c": true])
        #expect(await connection.caughtUp(to: revision))
        #expect(await eventually { log.all.count == 3 })
        #expect(seenAtEachCall.withLock { $0 }.allSatisfy { $0.isSuperset(of: ["a", "b", "c"]) })
        #expect(log.all.allSatisfy { $0.origin == .external })
        _ = try await scenario.put([:], delete: ["a", "b"])
        #expect(await eventually { log.all.count == 5 })
        #expect(seenAtEachCall.withLock { $0 }.dropFirst(3).allSatisfy { $0.isDisjoint(with: ["a", "b"]) })
        #expect(log.brokenChains().isEmpty)
        #expect(connection.values == (try await scenario.etcdValues()))
    }

    @Test func typedKeysTheAsyncSequenceObservableAndTheNotificationWorkUnchanged() async throws {
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        let defaults = try scenario.localDefaults()
        let connection = defaults.addFleetSuite(try scenario.suite(), placement: .managed)
        #expect(await eventually(within: 30) { connection.state.isLive })
        let fontSize = Defaults.Key<Int>("fontSize", default: 12)
        let typed = Locked<[(old: Int, new: Int, origin: ChangeOrigin)]>([])
        let token = defaults.observe(fontSize) { change in
            typed.withLock { $0.append((change.oldValue, change.newValue, change.origin)) }
        }
        defer { token.cancel() }
        let setting = defaults.observable(fontSize)
        let notifications = Locked(0)
        let observer = NotificationCenter.default.addObserver(
            forName: Defaults.didChangeNotification, object: defaults, queue: nil
        ) { _ in notifications.withLock { $0 += 1 } }
        defer { NotificationCenter.default.removeObserver(observer) }
        var stream = defaults.changes(of: fontSize).makeAsyncIterator()

        try await scenario.put(["fontSize": 14, "theme": "dark", "banner": "hi"])
        #expect(await eventually { typed.withLock { $0.count } == 1 })
        let next = await stream.next()
        #expect(next?.oldValue == 12)
        #expect(next?.newValue == 14)
        #expect(next?.origin == .external)
        #expect(setting.value == 14)
        #expect(await eventually { notifications.withLock { $0 } == 1 })  // one transaction, one notification
        try await scenario.put(["fontSize": 16])
        #expect(await eventually { notifications.withLock { $0 } == 2 })
        #expect(await stream.next()?.newValue == 16)
        // The notification and the stream do not wait for the typed observer's call: wait for it.
        #expect(await eventually { typed.withLock { $0.count } == 2 })
        let seen = typed.withLock { $0 }
        #expect(seen.map(\.old) == [12, 14])
        #expect(seen.map(\.new) == [14, 16])
        #expect(seen.allSatisfy { $0.origin == .external })
        #expect(defaults[fontSize] == 16)
    }

    @Test func twoWritersOnDisjointKeysAndOnOneKeyEndOnEtcdsValues() async throws {
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        let mine = try Defaults.fleet(scenario.suite())
        let connection = try #require(mine.fleetConnection)
        #expect(await eventually(within: 30) { connection.state.isLive })
        let log = ChangeLog(mine)
        let rounds = Stress.scaled(40, quick: 20)
        let other = Task {
            for round in 0..<rounds {
                try await scenario.put(["other\(round)": .integer(Int64(round)), "shared": .string("other\(round)")])
            }
        }
        for round in 0..<rounds {
            mine.set(.integer(Int64(round)), forKey: "mine\(round)")
            mine.set(.string("mine\(round)"), forKey: "shared")
            if round % 5 == 4 { try await connection.synchronize() }
        }
        try await other.value
        try await connection.synchronize()
        let final = try await scenario.revision()
        #expect(await connection.caughtUp(to: final))
        let etcd = try await scenario.etcdValues()
        #expect(etcd.count == 2 * rounds + 1)
        #expect(await eventually { mine.persistentValues() == etcd })
        #expect(log.brokenChains().isEmpty)
        #expect(await eventually { log.believed == etcd })
    }

    @Test func aFlushOfMoreKeysThanOneTransactionTakesLandsWhole() async throws {
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        let writer = try Defaults.fleet(scenario.suite())
        let connection = try #require(writer.fleetConnection)
        #expect(await eventually(within: 30) { connection.state.isLive })
        let reader = try scenario.localDefaults()
        let log = ChangeLog(reader)
        reader.addFleetSuite(try scenario.suite(variant: 1, sharesCache: false))
        let count = EtcdClient.maximumOperationsPerTransaction * 2 + 11
        let before = try await scenario.revision()
        for index in 0..<count { writer.set(.integer(Int64(index)), forKey: "key\(index)") }
        try await connection.synchronize()
        // etcd refuses a transaction of more than 128 operations: the flush was split (at least
        // three transactions; more when the background flush took the first keys on its own).
        #expect(try await scenario.revision() >= before + 3)
        let etcd = try await scenario.etcdValues()
        #expect(etcd.count == count)
        #expect(await eventually { reader.propertyList(forKey: "key\(count - 1)") == .integer(Int64(count - 1)) })
        #expect(await eventually { log.believed == etcd })
        #expect(log.brokenChains().isEmpty)
    }

    @Test func compareAndSetUnderContentionLosesNoIncrement() async throws {
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        let first = try Defaults.fleet(scenario.suite())
        let second = try Defaults.fleet(scenario.suite(variant: 1, sharesCache: false))
        let a = try #require(first.fleetConnection)
        let b = try #require(second.fleetConnection)
        let perWriter = Stress.scaled(50, quick: 15)
        @Sendable func increment(_ old: PropertyListValue?) -> PropertyListValue? {
            guard case .integer(let count)? = old else { return 1 }
            return .integer(count + 1)
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for connection in [a, b, a, b] {
                group.addTask { for _ in 0..<perWriter { try await connection.update("counter", increment) } }
            }
            try await group.waitForAll()
        }
        #expect(try await scenario.etcdValues()["counter"] == .integer(Int64(4 * perWriter)))
        #expect(await eventually { first.integer(forKey: "counter") == 4 * perWriter })
        #expect(await eventually { second.integer(forKey: "counter") == 4 * perWriter })
        // Create-if-absent keeps the first value.
        #expect(try await a.update("seed") { $0 ?? 7 } == 7)
        #expect(try await b.update("seed") { $0 ?? 9 } == 7)
        // An update is read back at once by the process that made it.
        #expect(first.integer(forKey: "seed") == 7)
    }

    @Test func aCompareAndSetWhoseAnswerIsLostIsNotSentAgainBlindly() async throws {
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        let suite = try FleetSuite(
            name: scenario.name, endpoints: [scenario.server.endpoint],
            cacheDirectory: scenario.scratch.url.appendingPathComponent("cache"), requestTimeout: .seconds(1))
        let defaults = try Defaults.fleet(suite)
        let connection = try #require(defaults.fleetConnection)
        #expect(await eventually(within: 30) { connection.state.isLive })
        // The member hangs between the read and the transaction: the transaction gets no answer.
        let stopped = Locked(false)
        let frozen = Locked(false)
        let server = scenario.server
        let lost = await #expect(throws: DefaultsError.self) {
            try await connection.update("counter") { old in
                if !stopped.withLock({ $0 }) {
                    stopped.withLock { $0 = true }
                    frozen.withLock { $0 = server.freezeBlocking() }
                }
                guard case .integer(let count)? = old else { return 1 }
                return .integer(count + 1)
            }
        }
        server.send(SIGCONT)
        try #require(frozen.withLock { $0 }, "the member did not stop within 30 s")
        #expect(lost?.code == .remoteUnavailable)
        #expect(lost?.message.contains("may or may not have been made") == true, "\(String(describing: lost))")
        // Whether the member still made it once it ran again, it was made at most once.
        let marker = try await scenario.put(["marker": true])
        #expect(await connection.caughtUp(to: marker))
        let counter = try await scenario.etcdValues()["counter"]
        #expect(counter == nil || counter == 1)
        // The next update counts from what etcd holds.
        let next = try await connection.update("counter") { old in
            guard case .integer(let count)? = old else { return 1 }
            return .integer(count + 1)
        }
        #expect(next == (counter == nil ? 1 : 2))
    }

    @Test func anUpdateTheWatchDoesNotBringInTimeIsReportedNotWaitedForSilently() async throws {
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        let defaults = try Defaults.fleet(try scenario.suite())
        let connection = try #require(defaults.fleetConnection)
        #expect(await eventually(within: 30) { connection.state.isLive })
        // No watch brings the update's revision: the update is made, and the wait for it is reported.
        connection.backend.follower.stop()
        let began = ContinuousClock.now
        let value = try await connection.update("counter") { _ in .integer(1) }
        #expect(value == .integer(1))
        #expect(try await scenario.etcdValues()["counter"] == .integer(1))
        #expect(ContinuousClock.now - began >= FleetConnection.updateVisibleWithin)
        let reports = connection.backend.reported.filter { $0.message.contains("had not brought it within") }
        #expect(reports.count == 1, "\(connection.backend.reported)")
        #expect(reports.first?.code == .remoteUnavailable)
        #expect(reports.first?.message.contains("\"counter\"") == true)
    }

    @Test func aValueThatIsNotAPropertyListIsReportedAndReadsAsAbsent() async throws {
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        let defaults = try scenario.localDefaults()
        let connection = defaults.addFleetSuite(try scenario.suite())
        #expect(await eventually(within: 30) { connection.state.isLive })
        let revision = try scenario.raw.commit(
            puts: [
                (EtcdMirror.etcdKey("bad", prefix: scenario.prefix), Data("not a plist <".utf8)),
                (EtcdMirror.etcdKey("good", prefix: scenario.prefix), try EtcdMirror.encode(1)),
            ], deletes: [])
        #expect(await connection.caughtUp(to: revision))
        #expect(await eventually { defaults.integer(forKey: "good") == 1 })
        #expect(defaults.propertyList(forKey: "bad") == nil)
        let reported = connection.backend.reported.filter { $0.code == .malformedPropertyList }
        #expect(reported.count == 1)
        #expect(reported.first?.message.contains("\"bad\"") == true)
    }

    /// The offline cache follows etcd, but a burst of changes does not rewrite it (durably) once per
    /// change: at most once a second, and the last values are the ones written.
    @Test func aBurstOfChangesRewritesTheCacheAtMostOnceASecond() async throws {
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        let defaults = try scenario.localDefaults()
        let connection = defaults.addFleetSuite(try scenario.suite())
        #expect(await eventually(within: 30) { connection.state.isLive })
        await connection.backend.cacheSaved()
        let before = connection.backend.cacheWrites
        let start = ContinuousClock.now
        for value in 1...50 { try await scenario.put(["counter": .integer(Int64(value))]) }
        #expect(await eventually { defaults.propertyList(forKey: "counter") == .integer(50) })
        await connection.backend.cacheSaved()
        let seconds = Int(start.duration(to: .now) / .seconds(1))
        let writes = connection.backend.cacheWrites - before
        // One write per second begun during the burst, and the one just asked for.
        #expect(writes <= seconds + 2, "\(writes) cache writes in about \(seconds) s for 50 changes")
        #expect(try connection.backend.cacheFileContents()?.values["counter"] == .integer(50))
    }
}

/// Fleet suites while etcd is away, refuses, or comes back as another etcd: the cache, pending
/// writes, roles and tokens. A suite of its own so that these tests, which mostly wait for a member
/// to stop and start, run beside the others.
@Suite(.requiresEtcd, .serialized)
struct FleetSuiteOfflineTests {
    @Test func aProcessStartingWhileEtcdIsDownServesTheCacheReportsOnceAndResyncs() async throws {
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        try await scenario.put(["theme": "dark", "gone": 1])
        do {
            let first = try scenario.localDefaults()
            let connection = first.addFleetSuite(try scenario.suite())
            #expect(await eventually { first.propertyList(forKey: "gone") == 1 })
            await connection.backend.cacheSaved()
            first.removeFleetSuite(try scenario.suite())
        }
        // Its last user gone, the store is closed (the process would have exited).
        let firstSuite = try scenario.suite()
        #expect(await eventually { FleetStores.existing(firstSuite) == nil })
        scenario.server.stop()
        // A new process, in effect: a store of its own on the same cache.
        let defaults = try scenario.localDefaults()
        let log = ChangeLog(defaults)
        let connection = defaults.addFleetSuite(try scenario.suite(variant: 1))
        // The closed store's entry went when the next store came: the registry does not grow with
        // every description a process ever opened.
        #expect(!FleetStores.isRegistered(firstSuite))
        #expect(defaults.propertyList(forKey: "theme") == "dark")  // at once, from the cache
        let states = Locked<[FleetState]>([])
        let following = Task {
            for await state in connection.stateUpdates() { states.withLock { $0.append(state) } }
        }
        defer { following.cancel() }
        #expect(await eventually { if case .stale = connection.state { true } else { false } })
        // The state turns stale with the outage that says why (FleetStateOutageTests).
        #expect(connection.lastError?.code == .remoteUnavailable)
        #expect(connection.lastError?.message.contains(scenario.server.endpoint.absoluteString) == true)
        // Three more reconnection attempts: still one report.
        let attempts = connection.backend.follower.rangesSent
        #expect(await eventually { connection.backend.follower.rangesSent >= attempts + 3 })
        #expect(connection.backend.reported.filter { $0.code == .remoteUnavailable }.count == 1)

        try await scenario.server.start()
        try await scenario.put(["theme": "light"], delete: ["gone"])
        #expect(await eventually { connection.state.isLive })
        #expect(await eventually { defaults.propertyList(forKey: "theme") == "light" })
        #expect(await eventually { defaults.propertyList(forKey: "gone") == nil })
        // The observer runs after a read can see the change: wait for the log too.
        #expect(await eventually { log.current["theme"] == "light" && log.current["gone"] == nil })
        #expect(await eventually { connection.lastError == nil })
        #expect(log.brokenChains().isEmpty)
        #expect(connection.values == (try await scenario.etcdValues()))
        // The app could follow it: stale (the cache's revision), then live.
        #expect(await eventually { states.withLock { $0.last?.isLive == true } })
        #expect(
            states.withLock { $0 }.contains {
                if case .stale(let revision, _, _) = $0 { revision > 0 } else { false }
            })
    }

    @Test func losingEtcdAndGettingItBackIsReportedOnceEachWithTheOutagesLength() async throws {
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        try await scenario.put(["theme": "dark"])
        let defaults = try scenario.localDefaults()
        let connection = defaults.addFleetSuite(try scenario.suite())
        #expect(await eventually(within: 30) { connection.state.isLive })
        let stopped = ContinuousClock.now
        scenario.server.stop()  // by its PID
        #expect(await eventually(within: 30) { connection.lastError?.code == .remoteUnavailable })
        try await scenario.server.start()
        #expect(await eventually(within: 30) { connection.backend.reported.contains { $0.code == .remoteRecovered } })
        let back = ContinuousClock.now
        #expect(await eventually { connection.lastError == nil })
        let reported = connection.backend.reported.filter { [.remoteUnavailable, .remoteRecovered].contains($0.code) }
        #expect(reported.map(\.code) == [.remoteUnavailable, .remoteRecovered], "\(reported)")
        let recovery = try #require(reported.last)
        #expect(recovery.suite == scenario.name)
        #expect(recovery.message.contains(scenario.server.endpoint.absoluteString), "\(recovery)")
        #expect(recovery.message.contains("no key changed meanwhile"), "\(recovery)")
        // The outage it reports lasted no longer than etcd was away as the test saw it, counted from
        // the last contact: a stall check's interval (2 s) of silence before the stop, and its
        // timeout (2 s) on a loaded machine.
        let seconds = try #require(
            recovery.message.firstMatch(of: /after an outage of ([0-9.]+) s/).flatMap { Double($0.1) })
        #expect(seconds > 0)
        #expect(seconds <= (back - stopped).seconds + 4 + 0.05, "\(recovery)")
        // A later reconnection (the watch ending) is no second recovery.
        #expect(connection.state.isLive)
        #expect(connection.backend.reported.filter { $0.code == .remoteRecovered }.count == 1)
    }

    @Test func theRecoveryCountsTheKeysEtcdChangedSinceTheValuesInUse() async throws {
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        try await scenario.put(["theme": "dark", "gone": 1, "same": true])
        do {
            let first = try scenario.localDefaults()
            let connection = first.addFleetSuite(try scenario.suite())
            #expect(await eventually { first.propertyList(forKey: "gone") == 1 })
            await connection.backend.cacheSaved()
            first.removeFleetSuite(try scenario.suite())
        }
        let firstSuite = try scenario.suite()
        #expect(await eventually { FleetStores.existing(firstSuite) == nil })
        // etcd changes three keys while no process follows it, then goes away (stopped by its PID).
        try await scenario.put(["theme": "light", "new": 1], delete: ["gone"])
        scenario.server.stop()
        // A process starting now serves the cache and reports the outage; then etcd comes back.
        let defaults = try scenario.localDefaults()
        let connection = defaults.addFleetSuite(try scenario.suite(variant: 1))
        #expect(await eventually(within: 30) { connection.lastError?.code == .remoteUnavailable })
        try await scenario.server.start()
        #expect(await eventually(within: 30) { connection.backend.reported.contains { $0.code == .remoteRecovered } })
        let recovery = try #require(connection.backend.reported.first { $0.code == .remoteRecovered })
        #expect(recovery.message.contains("3 keys changed meanwhile"), "\(recovery)")
        #expect(await eventually { defaults.propertyList(forKey: "theme") == "light" })
    }

    @Test func aWriteWhileEtcdIsDownStaysPendingAndLandsWhenItIsBack() async throws {
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        let defaults = try Defaults.fleet(scenario.suite())
        let connection = try #require(defaults.fleetConnection)
        #expect(await eventually(within: 30) { connection.state.isLive })
        let log = ChangeLog(defaults)
        scenario.server.stop()
        #expect(await eventually { !connection.state.isLive })
        defaults.set("offline", forKey: "written")
        await #expect(throws: DefaultsError.self) { try await connection.synchronize() }
        #expect(connection.lastError?.code == .remoteUnavailable)
        #expect(defaults.propertyList(forKey: "written") == "offline")  // still shown, still pending
        #expect(connection.store.hasPendingChanges)
        try await scenario.server.start()
        #expect(await eventually { !connection.store.hasPendingChanges })
        #expect(try await scenario.etcdValues()["written"] == "offline")
        #expect(await eventually { connection.lastError == nil })
        #expect(log.of("written").map(\.origin) == [.local])
        #expect(defaults.persistentValues() == (try await scenario.etcdValues()))
    }

    @Test func aWriteMadeBeforeEtcdWasEverReachedLandsAndIsNeverTakenBack() async throws {
        let server = try EtcdServer()  // not started: nothing listens on its port yet
        let scenario = try await FleetScenario(server: server)
        defer { server.stop() }
        let defaults = try Defaults.fleet(scenario.suite())
        let connection = try #require(defaults.fleetConnection)
        #expect(await eventually { if case .offline = connection.state { true } else { false } })
        let log = ChangeLog(defaults)
        defaults.set("early", forKey: "k")
        try await server.start()
        try await scenario.put(["other": 1])  // another machine's value
        #expect(await eventually { !connection.store.hasPendingChanges })
        #expect(await eventually { defaults.integer(forKey: "other") == 1 })
        let etcd = try await scenario.etcdValues()
        #expect(etcd == ["k": "early", "other": 1])
        #expect(log.of("k").map(\.newValue) == ["early"])
        #expect(log.brokenChains().isEmpty)
        #expect(defaults.persistentValues() == etcd)
    }

    @Test(.requiresEtcdctl) func aReadOnlyRoleIsRefusedTheWriteWhichIsDroppedAndReported() async throws {
        let server = try await EtcdAuthTests.securedServer()
        let scenario = try await FleetScenario(server: server)
        defer { server.stop() }
        let admin = EtcdClient(endpoints: [server.endpoint], credentials: ("root", "rootpw"))
        _ = try admin.commit(
            puts: [(EtcdMirror.etcdKey("theme", prefix: scenario.prefix), try EtcdMirror.encode("dark"))], deletes: [])
        let service = try Defaults.fleet(
            scenario.suite(credentials: FleetCredentials(user: "service", password: "servicepw")))
        let connection = try #require(service.fleetConnection)
        #expect(await eventually { service.propertyList(forKey: "theme") == "dark" })
        let log = ChangeLog(service)
        service.set("light", forKey: "theme")
        // The write is refused by whichever flush sends it: the background flush may have sent it
        // before `synchronize()` begins (then there is nothing left for it to send, and it does
        // not throw), so the refusal is read where both report it.
        do { try await connection.synchronize() } catch let error as DefaultsError {
            #expect(error.code == .remoteRejected)
        }
        #expect(await eventually { service.lastError?.code == .remoteRejected })
        let refused = service.lastError
        #expect(refused?.message.contains("\"theme\"") == true)
        #expect(refused?.message.contains("permission denied") == true)
        // Dropped: reads show etcd's value again, and observers saw it come back.
        #expect(await eventually { service.propertyList(forKey: "theme") == "dark" })
        #expect(!connection.store.hasPendingChanges)
        #expect(await eventually { log.of("theme").map(\.newValue) == ["light", "dark"] })
        #expect(log.brokenChains().isEmpty)
        // Compare-and-set is refused the same way.
        let update = await #expect(throws: DefaultsError.self) { try await connection.update("theme") { _ in "x" } }
        #expect(update?.code == .remoteRejected)
        let stored = try admin.range(prefix: scenario.prefix).kvs
        #expect(stored.count == 1)
    }

    @Test(.requiresEtcdctl) func anExpiredTokenIsRenewedForWritesAndTheWatchGoesOn() async throws {
        let server = try await EtcdAuthTests.securedServer(tokenTTL: 1)
        let scenario = try await FleetScenario(server: server)
        defer { server.stop() }
        let admin = try Defaults.fleet(scenario.suite(credentials: FleetCredentials(user: "root", password: "rootpw")))
        let connection = try #require(admin.fleetConnection)
        #expect(await eventually(within: 30) { connection.state.isLive })
        let log = ChangeLog(admin)
        admin.set(1, forKey: "k")
        try await connection.synchronize()
        let first = try #require(connection.backend.client.currentToken)
        // A simple token expires after its TTL (1 s) unused: leave it unused for three, then write.
        // Any use extends it, and the suite's follower may use it meanwhile (a reconnection on a
        // loaded machine: the thread sanitizer's run saw the token unchanged once), so up to five
        // such rounds, until a write has needed a new token.
        var written = 1
        while connection.backend.client.currentToken == first && written < 6 {
            try await Task.sleep(for: .seconds(3))  // the token's expiry is the scenario
            written += 1
            admin.set(written, forKey: "k")
            try await connection.synchronize()
        }
        #expect(connection.backend.client.currentToken != first, "a write after the token expired renewed it")
        let other = EtcdClient(endpoints: [server.endpoint], credentials: ("root", "rootpw"))
        let revision = try other.commit(
            puts: [(EtcdMirror.etcdKey("fromOther", prefix: scenario.prefix), try EtcdMirror.encode(true))], deletes: []
        )
        #expect(await connection.caughtUp(to: revision))
        #expect(await eventually { admin.bool(forKey: "fromOther") })
        #expect(await eventually { log.of("fromOther").last?.newValue == true }, "the observer, after the read")
        #expect(log.brokenChains().isEmpty)
        #expect(admin.integer(forKey: "k") == written)
    }

    /// Another cluster (a new cluster ID), or the same cluster restored to an earlier revision:
    /// either way the cache, far ahead, is replaced outright by what etcd holds.
    @Test(arguments: [true, false])
    func anotherClusterOrAnEarlierRevisionReplacesTheCacheOutright(newCluster: Bool) async throws {
        let scenario = try await FleetScenario()
        defer { scenario.server.stop() }
        // Cluster A, far ahead: many revisions, and a key only it has.
        for round in 0..<20 { try await scenario.put(["theme": .integer(Int64(round))]) }
        try await scenario.put(["onlyInA": true, "theme": "a"])
        do {
            let first = try scenario.localDefaults()
            let connection = first.addFleetSuite(try scenario.suite())
            #expect(await eventually { first.bool(forKey: "onlyInA") })
            await connection.backend.cacheSaved()
            first.removeFleetSuite(try scenario.suite())
        }
        // Closed, as when its process exits: it no longer follows etcd nor writes the cache.
        let firstSuite = try scenario.suite()
        #expect(await eventually { FleetStores.existing(firstSuite) == nil })
        scenario.server.stop()
        // B on the same port: new data and a revision far below A's; with another cluster token,
        // a new cluster ID too (the same token and member give the same ID).
        try FileManager.default.removeItem(atPath: scenario.server.dataDirectory.path + "/data")
        // Opened while no etcd answers, so that what it serves first is the cache, for certain.
        let defaults = try scenario.localDefaults()
        let log = ChangeLog(defaults)
        let connection = defaults.addFleetSuite(try scenario.suite(variant: 1))
        #expect(defaults.propertyList(forKey: "theme") == "a")  // the cache, until B answers
        try await scenario.server.start(clusterToken: newCluster ? "cluster-b" : "etcd-cluster")
        try await scenario.put(["theme": "b"])
        #expect(await eventually { defaults.propertyList(forKey: "theme") == "b" })
        #expect(await eventually { defaults.propertyList(forKey: "onlyInA") == nil })
        // Recorded when the follower says it is live, which may come just after the range's values.
        #expect(await eventually { connection.backend.cacheReplacedBecause != nil })
        let reason = try #require(connection.backend.cacheReplacedBecause)
        #expect(reason.contains(newCluster ? "cluster ID" : "below the cache's"), "\(reason)")
        #expect(log.brokenChains().isEmpty)
        #expect(connection.values == (try await scenario.etcdValues()))
        // The cache now holds B.
        await connection.backend.cacheSaved()
        let cached = try #require(try connection.backend.cacheFileContents())
        #expect(cached.values == ["theme": "b"])
    }
}
