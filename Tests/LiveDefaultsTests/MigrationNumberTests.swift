import Foundation
import LiveDefaults
import TestSupport
import Testing

/// A migration step reads a number however it was stored: as a number, or as the text an old-style
/// `defaults write` leaves (`"40"`).
@Suite struct MigrationNumberTests {
    static let stored: [(PropertyListValue, Int64?, Double?)] = [
        (.integer(40), 40, 40),
        (.string("40"), 40, 40),
        (.string(" 40 "), 40, 40),
        (.string("-3"), -3, -3),
        (.real(40), 40, 40),
        (.string("12.5"), nil, 12.5),
        (.real(12.5), nil, 12.5),
        (.string("1e3"), nil, 1000),
        (.string("lots"), nil, nil),
        (.string("inf"), nil, nil),
        (.bool(true), nil, nil),
        (["a": 1], nil, nil),
    ]

    @Test(arguments: stored)
    func aStepReadsANumberStoredAsANumberOrAsText(value: PropertyListValue, integer: Int64?, real: Double?) throws {
        let directory = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: "com.example.numbers", directory: directory.url, watchesFiles: false)
        defaults.set(value, forKey: "limit")
        try defaults.migrate(to: 1) { step in
            #expect(step.integer("limit") == integer, "\(value)")
            #expect(step.real("limit") == real, "\(value)")
            #expect(step.integer("absent") == nil && step.real("absent") == nil)
        }
    }

    @Test func aStepConvertsAValueWrittenAsTextAndLeavesOneThatIsNoNumber() throws {
        let directory = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: "com.example.numbers", directory: directory.url, watchesFiles: false)
        defaults.set("40", forKey: "maxConnections")
        defaults.set("0.25", forKey: "ratio")
        defaults.set("lots", forKey: "retries")
        try defaults.migrate(to: 1) { step in
            for key in ["maxConnections", "retries"] {
                if let number = step.integer(key) { step.set(.integer(number), forKey: key) }
            }
            if let ratio = step.real("ratio") { step.set(.real(ratio), forKey: "ratio") }
        }
        #expect(defaults.propertyList(forKey: "maxConnections") == .integer(40))
        #expect(defaults.propertyList(forKey: "ratio") == .real(0.25))
        #expect(defaults.propertyList(forKey: "retries") == "lots", "no number: left as it is")
    }
}
