import Foundation
import TestSupport
import Testing

@testable import LiveDefaults

@Suite struct CorruptFileMessageTests {
    @Test func aBadFileAtLoadSaysNothingWasLoadedAndWhere() throws {
        let directory = try TemporaryDirectory()
        let xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0">
            <dict>
              <key>a</key><integer>1</integer>
              <key>b</key><integer>2
            </dict>
            </plist>
            """
        try Data(xml.utf8).write(to: directory.file("com.example.bad.plist"))
        let defaults = try Defaults(suiteName: "com.example.bad", directory: directory.url, watchesFiles: false)
        let message = try #require(defaults.lastError?.message)
        #expect(defaults.lastError?.code == .corruptFile)
        #expect(message.contains("line 6"), "\(message)")
        #expect(message.contains("were not loaded"), "\(message)")
    }

    @Test func aBadSaveFromOutsideSaysTheLastGoodValuesAreKeptAndTheOffset() async throws {
        let directory = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: "com.example.badsave", directory: directory.url)
        defaults.set(1, forKey: "a")
        try defaults.synchronize()
        var bytes = try Data(contentsOf: try #require(defaults.fileURL))
        bytes.removeLast(bytes.count / 2)  // a truncated binary file
        try bytes.write(to: try #require(defaults.fileURL), options: .atomic)
        #expect(await eventually { defaults.lastError?.code == .corruptFile })
        let message = defaults.lastError?.message ?? ""
        #expect(message.contains("byte offset"), "\(message)")
        #expect(message.contains("before are kept in use"), "\(message)")
        #expect(defaults.integer(forKey: "a") == 1)
    }
}
