import Foundation
import TestSupport
import Testing

@testable import LiveDefaults

private struct Features: Codable, Equatable, Sendable {
    var betaAPI: Bool
    var rateLimit: Int
    var ratio: Double = 1
    var tags: [String] = []
    var since: Date?
}

extension Defaults.Keys {
    fileprivate static let codableFeatures = Defaults.Key<Features>(
        "codableFeatures", default: Features(betaAPI: false, rateLimit: 10))
    fileprivate static let codablePort = Defaults.Key<Int>("codablePort", default: 8080)
}

@Suite struct CodableValuesTests {
    @Test func typedValuesInsideCodableReadAsAtTheTop() throws {
        let directory = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: "com.example.codable", directory: directory.url, watchesFiles: false)
        // What `defaults write … features '{ betaAPI = 1; rateLimit = 50; }'` stores: strings.
        defaults.set(
            .dictionary([
                "betaAPI": .string("1"), "rateLimit": .string("50"), "ratio": .string("0.5"),
                "tags": .array([.string("a")]),
            ]),
            forKey: "codableFeatures")
        #expect(defaults[.codableFeatures] == Features(betaAPI: true, rateLimit: 50, ratio: 0.5, tags: ["a"]))
        #expect(defaults.decodingError(for: .codableFeatures) == nil)
        defaults.set(.string("50"), forKey: "codablePort")
        #expect(defaults[.codablePort] == 50, "the same rule at the top")

        // What `-dict betaAPI -bool YES rateLimit -int 50` stores: typed values, read strictly.
        let since = Date(timeIntervalSince1970: 1_000_000)
        defaults.set(
            .dictionary([
                "betaAPI": .bool(true), "rateLimit": .integer(50), "ratio": .real(1), "tags": .array([]),
                "since": .date(since),
            ]),
            forKey: "codableFeatures")
        #expect(defaults[.codableFeatures] == Features(betaAPI: true, rateLimit: 50, since: since))

        // What neither rule reads: the default, and the reason.
        defaults.set(
            .dictionary(["betaAPI": .string("maybe"), "rateLimit": .integer(1), "ratio": .real(1), "tags": .array([])]),
            forKey: "codableFeatures")
        #expect(defaults[.codableFeatures] == Features(betaAPI: false, rateLimit: 10))
        #expect(defaults.decodingError(for: .codableFeatures)?.code == .decodingFailed)

        // Values written through the key round-trip unchanged.
        defaults[.codableFeatures] = Features(betaAPI: true, rateLimit: 7, tags: ["x", "y"], since: since)
        #expect(defaults[.codableFeatures] == Features(betaAPI: true, rateLimit: 7, tags: ["x", "y"], since: since))
    }
}
