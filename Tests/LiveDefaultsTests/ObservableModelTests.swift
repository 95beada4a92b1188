import Foundation
import Observation
import Synchronization
import TestSupport
import Testing

@testable import LiveDefaults

extension Defaults.Keys {
    fileprivate static let betaAPI = Defaults.Key<Bool>("betaAPI", default: false)
    fileprivate static let rateLimit = Defaults.Key<Int>("rateLimit", default: 10)
}

/// The model a user writes first: an `@Observable` class with settings among its own state. The
/// Observable macro turns every stored `var` into a computed property and moves its attributes to a
/// `_name` peer, so a property wrapper inside it needs `@ObservationIgnored`; `@Setting` tracks
/// itself, so nothing is lost (docs/design.md, "Observation: Swift Observation").
@Observable private final class FlagsModel {
    @ObservationIgnored @Setting<Bool> var betaAPI: Bool
    var draft = ""

    init(_ defaults: Defaults) { _betaAPI = Setting(.betaAPI, in: defaults) }
}

/// The `Sendable` form, with no attribute: a `let` holding the key's `ObservableSetting`.
@Observable private final class SendableFlagsModel: Sendable {
    let betaAPI: ObservableSetting<Bool>
    let rateLimit: ObservableSetting<Int>

    init(_ defaults: Defaults) {
        betaAPI = defaults.observable(.betaAPI)
        rateLimit = defaults.observable(.rateLimit)
    }
}

/// Settings inside `@Observable` models: the model's observation fires on a local set and on an
/// edit of the suite file from outside.
@Suite struct ObservableModelTests {
    /// Tracks `read` once; the returned counter goes up when the tracking fires.
    private func track(_ read: @escaping () -> Void) -> FireCount {
        let counter = FireCount()
        withObservationTracking(read) { counter.increment() }
        return counter
    }

    /// Replaces the suite file the way another program would (write aside, rename over).
    private func writeFromOutside(_ values: [String: PropertyListValue], to defaults: Defaults) throws {
        let url = try #require(defaults.fileURL)
        try PropertyListCodec.encode(.dictionary(values), format: .xml).write(to: url, options: .atomic)
    }

    @Test func anObservationIgnoredSettingFiresTheModelsTrackingOnALocalSetAndAnOutsideEdit() async throws {
        let directory = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: "com.example.model", directory: directory.url)
        let model = FlagsModel(defaults)
        #expect(model.betaAPI == false)

        let byModel = track { _ = model.betaAPI }
        // A local change is delivered by the thread that made it, or by one delivering at that moment: wait.
        model.betaAPI = true  // a local set, through the model
        #expect(await eventually(within: 30) { byModel.value == 1 })
        #expect(defaults[.betaAPI] == true)

        let byStore = track { _ = model.betaAPI }
        defaults[.betaAPI] = false  // a local set, through the store
        #expect(await eventually(within: 30) { byStore.value == 1 })

        let fromOutside = track { _ = model.betaAPI }
        try defaults.synchronize()
        try writeFromOutside(["betaAPI": true], to: defaults)
        #expect(await eventually(within: 30) { fromOutside.value == 1 })
        #expect(model.betaAPI == true)

        // The model's own state is still tracked by the macro, beside the setting.
        let draft = track { _ = model.draft }
        model.draft = "typed"
        #expect(draft.value == 1)
    }

    @Test func aSendableModelOfObservableSettingsFiresOnALocalSetAndAnOutsideEdit() async throws {
        let directory = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: "com.example.sendable-model", directory: directory.url)
        let model = SendableFlagsModel(defaults)
        let sent: any Sendable = model  // compiles only because the model is Sendable
        #expect(sent is SendableFlagsModel)

        let local = track { _ = model.betaAPI.value }
        model.betaAPI.value = true
        #expect(await eventually(within: 30) { local.value == 1 })
        #expect(defaults[.betaAPI] == true)

        let fromOutside = track { _ = model.rateLimit.value }
        try defaults.synchronize()
        try writeFromOutside(["betaAPI": true, "rateLimit": 50], to: defaults)
        #expect(await eventually(within: 30) { fromOutside.value == 1 })
        #expect(model.rateLimit.value == 50)
    }
}

/// How many times a tracking fired, shared with its `onChange` closure.
private final class FireCount: Sendable {
    private let count = Mutex<Int>(0)
    var value: Int { count.withLock { $0 } }
    func increment() { count.withLock { $0 += 1 } }
}
