import Foundation
import Synchronization
import TestSupport
import Testing

@testable import LiveDefaults

private struct Rollout: Codable, Sendable, Equatable {
    var percent: Int
    var regions: [String]
}

/// As a newcomer declares it (the docs' example): not `Equatable`, so decoded values cannot be compared.
private struct PlainRollout: Codable, Sendable {
    var percent: Int
    var regions: [String]
}

extension Defaults.Keys {
    fileprivate static let rollout = Defaults.Key<Rollout>("rollout", default: Rollout(percent: 0, regions: []))
    fileprivate static let plainRollout = Defaults.Key<PlainRollout>(
        "rollout", default: PlainRollout(percent: 0, regions: []))
}

/// A value of the wrong type arriving from outside under a typed key: it reads as the key's default,
/// in every process at once (docs/design.md, "Observation: typed changes"); a typed observer is told
/// once; the error names the user's path.
@Suite struct WrongTypeValueTests {
    /// Replaces the suite file the way another program would (write aside, rename over).
    private func writeFromOutside(_ values: [String: PropertyListValue], to defaults: Defaults) throws {
        let url = try #require(defaults.fileURL)
        try PropertyListCodec.encode(.dictionary(values), format: .xml).write(to: url, options: .atomic)
    }

    @Test func aWrongTypeFromOutsideReadsAsTheDefaultAndATypedObserverIsToldOnce() async throws {
        let directory = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: "com.example.wrong-type", directory: directory.url)
        defaults[.rollout] = Rollout(percent: 25, regions: ["eu"])
        try defaults.synchronize()

        let typed = Mutex<[DefaultsChange<Rollout>]>([])
        let typedToken = defaults.observe(.rollout) { change in typed.withLock { $0.append(change) } }
        // Every stored change, whatever it decodes to. Observers of one key are not called in the
        // order they were registered, so each step waits for the record it then reads.
        let raw = Mutex<[PropertyListValue?]>([])
        let rawToken = defaults.observe("rollout") { change in raw.withLock { $0.append(change.newValue) } }
        defer {
            typedToken.cancel()
            rawToken.cancel()
        }

        let oops: PropertyListValue = ["percent": "oops", "regions": ["eu"]]
        try writeFromOutside(["rollout": oops], to: defaults)
        #expect(await eventually(within: 30) { raw.withLock { $0 } == [oops] && typed.withLock { !$0.isEmpty } })
        #expect(defaults[.rollout] == Rollout(percent: 0, regions: []), "the key's default, not the last good value")
        #expect(defaults.propertyList(forKey: "rollout") == oops, "the stored value is left as it is")
        #expect(typed.withLock { $0.map(\.newValue) } == [Rollout(percent: 0, regions: [])])
        #expect(typed.withLock { $0.map(\.oldValue) } == [Rollout(percent: 25, regions: ["eu"])])
        #expect(typed.withLock { $0.map(\.origin) } == [.external])

        // Another bad value still reads as the default: nothing new to tell.
        let worse: PropertyListValue = ["percent": "worse", "regions": ["eu"]]
        try writeFromOutside(["rollout": worse], to: defaults)
        #expect(await eventually(within: 30) { raw.withLock { $0 } == [oops, worse] })

        // Fixed: told once more, with the value. (Each observer hears changes in the order they
        // were made, so once the typed observer has the fix it has passed over `worse`: a call for
        // it would show here as a third change.)
        let fixed = Rollout(percent: 40, regions: ["eu", "us"])
        try writeFromOutside(["rollout": ["percent": 40, "regions": ["eu", "us"]]], to: defaults)
        #expect(await eventually(within: 30) { typed.withLock { $0.last?.newValue == fixed } })
        #expect(typed.withLock { $0.map(\.newValue) } == [Rollout(percent: 0, regions: []), fixed])
    }

    @Test func aTypedObserverOfATypeThatIsNotEquatableIsToldOnceForARunOfBadValues() async throws {
        let directory = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: "com.example.wrong-type-plain", directory: directory.url)
        defaults[.plainRollout] = PlainRollout(percent: 25, regions: ["eu"])
        try defaults.synchronize()

        let typed = Mutex<[Int]>([])  // the new values' percent
        let typedToken = defaults.observe(.plainRollout) { change in
            typed.withLock { $0.append(change.newValue.percent) }
        }
        let raw = Mutex<Int>(0)
        let rawToken = defaults.observe("rollout") { _ in raw.withLock { $0 += 1 } }
        defer {
            typedToken.cancel()
            rawToken.cancel()
        }

        try writeFromOutside(["rollout": ["percent": "oops", "regions": ["eu"]]], to: defaults)
        #expect(await eventually(within: 30) { raw.withLock { $0 } == 1 && typed.withLock { !$0.isEmpty } })
        try writeFromOutside(["rollout": ["percent": "worse", "regions": ["eu"]]], to: defaults)
        #expect(await eventually(within: 30) { raw.withLock { $0 } == 2 })
        // The bad value removed: the key is absent, and reads as the default it already read as
        // (the registered default, stored: its decoded value is not comparable, its stored form is).
        try defaults.register(.plainRollout)
        try writeFromOutside([:], to: defaults)
        #expect(await eventually(within: 30) { raw.withLock { $0 } == 3 })
        try writeFromOutside(["rollout": ["percent": 40, "regions": ["eu"]]], to: defaults)
        #expect(await eventually(within: 30) { typed.withLock { $0.last == 40 } })
        // Each observer hears changes in order: with the fix delivered, the bad values before it were passed over.
        #expect(typed.withLock { $0 } == [0, 40])
    }

    @Test func theDecodingErrorNamesTheUsersPathWithoutTheInternalWrapper() throws {
        let directory = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: "com.example.wrong-path", directory: directory.url, watchesFiles: false)
        defaults.set(["percent": "oops", "regions": ["eu"]] as PropertyListValue, forKey: "rollout")
        let error = try #require(defaults.decodingError(for: .rollout))
        let text = String(describing: error)
        #expect(error.code == .decodingFailed)
        #expect(text.contains("Path: percent."), "\(text)")
        #expect(!text.contains("[0]"), "\(text)")
        #expect(text.contains("reads as its default"), "\(text)")

        // A value that is not a dictionary at all: no path, and still no wrapper.
        defaults.set("not a rollout", forKey: "rollout")
        let top = String(describing: try #require(defaults.decodingError(for: .rollout)))
        #expect(!top.contains("[0]"), "\(top)")
        #expect(!top.contains("Path:"), "\(top)")
    }
}
