import Foundation
import LiveDefaults
import LiveDefaultsConsole
import TestSupport
import Testing

/// A key that starts with `-` in the console: its history (read by the function `defaults history`
/// prints from) and its rollback (the key after `--`) are the key's, not an option's.
struct ConsoleDashKeyTests {
    @Test func aDashKeysHistoryAndRollbackWork() throws {
        let fixture = try ConsoleModelTests.Fixture()
        for text in ["1", "2"] {
            let problem = fixture.model.write(
                domain: "com.example.app", key: "-verbose", ConsoleModel.Edit(kind: "integer", text: text))
            #expect(problem == nil)
        }
        let history = try #require(fixture.model.history(domain: "com.example.app", key: "-verbose"))
        let entries = try #require(history["entries"]?.arrayValue, "history: \(history.text)")
        #expect(entries.count == 2)
        #expect(entries.first?["new"] == "2" && entries.first?["old"] == "1")
        #expect(entries.first?["who"]?.stringValue?.contains(" pid \(getpid()): ") == true)
        let first = try #require(entries.last?["id"]?.integerValue)
        let report = try fixture.model.rollBack(domain: "com.example.app", key: "-verbose", toEntry: UInt64(first))
            .get()
        #expect(report == "-verbose: 2 → 1")
        let written = try Defaults(suiteName: "com.example.app", directory: fixture.config, watchesFiles: false)
        #expect(written.propertyList(forKey: "-verbose") == .integer(1))
    }
}
