import Foundation
import LiveDefaults
import LiveDefaultsPropertyList
import TestSupport
import Testing

@Suite struct MigrationTests {
    @Test func stepsRunInOrderOnceAndObserversSeeOneBurstWithTheOriginMigration() async throws {
        let directory = try TemporaryDirectory()
        // The old values are in the file before the store is opened: set through `defaults`, they
        // would each schedule the change notification 5 ms later, and a test thread held off the
        // CPU between the two sets gives two, the second of which can come after any point the
        // test takes to start counting (it did not wait for a second one).
        try PropertyListCodec.encode(["fontsize": "14", "legacy": true], format: .binary)
            .write(to: directory.file("com.example.migrate.plist"))
        let defaults = try Defaults(suiteName: "com.example.migrate", directory: directory.url, watchesFiles: false)
        #expect(defaults.string(forKey: "fontsize") == "14" && defaults.bool(forKey: "legacy"))
        let changes = Locked<[DefaultsChange<PropertyListValue?>]>([])
        let notifications = Locked(0)
        let token = defaults.observeAll(options: [.old, .new]) { change in changes.withLock { $0.append(change) } }
        let observer = NotificationCenter.default.addObserver(
            forName: Defaults.didChangeNotification, object: defaults, queue: nil
        ) { _ in notifications.withLock { $0 += 1 } }
        defer { NotificationCenter.default.removeObserver(observer) }

        let ran = try defaults.migrate(to: 2) { step in
            switch step.number {
            case 1:
                step.rename("fontsize", to: "fontSize")
                step.convert("fontSize") { $0.stringValue.flatMap { Int64($0) }.map { .integer($0) } }
            case 2: step.remove(["legacy"])
            default: Issue.record("step \(step.number)")
            }
        }
        #expect(ran == [1, 2])
        #expect(defaults.integer(forKey: "fontSize") == 14 && defaults.object(forKey: "fontsize") == nil)
        #expect(defaults.object(forKey: "legacy") == nil)
        let seen = changes.withLock { $0 }
        #expect(Set(seen.map(\.key)) == ["fontsize", "fontSize", "legacy", DefaultsMigration.recordKey])
        #expect(seen.allSatisfy { $0.origin == .migration }, "\(seen.map(\.origin))")
        #expect(await eventually { notifications.withLock { $0 } == 1 }, "one burst, one notification")

        #expect(try defaults.migrate(to: 2) { _ in Issue.record("a step ran twice") } == [])
        #expect(try defaults.migrate(to: 3) { step in step.set("v3", forKey: "added") } == [3])
        #expect(defaults.string(forKey: "added") == "v3")
        token.cancel()
    }

    @Test func aStepThatThrowsLeavesTheStepsBeforeItDoneAndIsTriedAgain() throws {
        struct Refused: Error {}
        let directory = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: "com.example.migrate", directory: directory.url, watchesFiles: false)
        #expect {
            try defaults.migrate(to: 3) { step in
                step.set(.integer(Int64(step.number)), forKey: "step\(step.number)")
                if step.number == 2 { throw Refused() }
            }
        } throws: { error in
            (error as? DefaultsError)?.code == .migrationFailed
                && (error as? DefaultsError)?.message.contains("Step 2") == true
        }
        #expect(defaults.integer(forKey: "step1") == 1 && defaults.object(forKey: "step2") == nil)
        #expect(try defaults.migrate(to: 3) { step in step.set(true, forKey: "again\(step.number)") } == [2, 3])
    }

    @Test func aMoveLeftHalfDoneByACrashIsFinishedByTheNextStart() throws {
        let directory = try TemporaryDirectory()
        // The state a crash leaves between the migration's write and the removal from the old suite.
        let record: PropertyListValue = ["version": 1, "moving": ["com.example.old": ["theme"]]]
        try PropertyListCodec.encode(
            .dictionary(["theme": "dark", DefaultsMigration.recordKey: record]), format: .binary
        ).write(to: directory.file("com.example.new.plist"))
        try PropertyListCodec.encode(.dictionary(["theme": "dark", "other": 1]), format: .binary)
            .write(to: directory.file("com.example.old.plist"))
        let defaults = try Defaults(suiteName: "com.example.new", directory: directory.url, watchesFiles: false)
        #expect(try defaults.migrate(to: 1) { _ in Issue.record("step 1 ran again") } == [])
        let old = try PropertyListCodec.decode(Data(contentsOf: directory.file("com.example.old.plist"))).value
        #expect(old == ["other": 1], "the moved key is removed from its old suite")
        #expect(defaults.string(forKey: "theme") == "dark")
        #expect(defaults.object(forKey: DefaultsMigration.recordKey) as? [String: Int] == ["version": 1])
    }
}
