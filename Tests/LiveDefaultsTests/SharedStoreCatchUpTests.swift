import Foundation
import LiveDefaultsPropertyList
import TestSupport
import Testing

@testable import LiveDefaults

/// A store found open when a suite is opened again (another `Defaults` still holds it, or it is the
/// global domain's store the process keeps) is checked against its file when no watch kept it up
/// to date: the new `Defaults` sees the file as a store opened anew would read it
/// (docs/design.md, "Opening a suite: the global domain kept").
@Suite struct SharedStoreCatchUpTests {
    /// Replaces `url` with a new file of `values`, as another process's atomic write does (a new
    /// inode, so the file's identity changes).
    private func writeAsAnotherProcess(_ values: [String: PropertyListValue], to url: URL) throws {
        try PropertyListCodec.encode(.dictionary(values), format: .xml).write(to: url, options: .atomic)
    }

    @Test func aSuiteOpenedAgainWithoutWatchingSeesWhatAnotherProcessWroteSince() throws {
        let directory = try TemporaryDirectory()
        let first = try Defaults(suiteName: "com.example.catch-up", directory: directory.url, watchesFiles: false)
        first.set("mine", forKey: "k")
        try first.synchronize()
        try writeAsAnotherProcess(["k": "theirs", "added": 1], to: directory.file("com.example.catch-up.plist"))

        let second = try Defaults(suiteName: "com.example.catch-up", directory: directory.url, watchesFiles: false)
        #expect(second.string(forKey: "k") == "theirs")
        #expect(second.integer(forKey: "added") == 1)
        // The store is shared: the instance still open sees the same values.
        #expect(first.string(forKey: "k") == "theirs")
        withExtendedLifetime(first) {}
    }

    @Test func theGlobalDomainOpenedAgainSeesItsFileAsItIsNow() throws {
        let directory = try TemporaryDirectory()
        let global = directory.file("\(Defaults.globalDomain).plist")
        let first = try Defaults(suiteName: "com.example.first", directory: directory.url, watchesFiles: false)
        #expect(first.object(forKey: "AppleLanguages") == nil)
        try writeAsAnotherProcess(["AppleLanguages": ["fr"]], to: global)

        let second = try Defaults(suiteName: "com.example.second", directory: directory.url, watchesFiles: false)
        #expect(second.stringArray(forKey: "AppleLanguages") == ["fr"])

        // Gone again: the domain reads as empty, as it would for a store opened anew.
        try FileManager.default.removeItem(at: global)
        let third = try Defaults(suiteName: "com.example.third", directory: directory.url, watchesFiles: false)
        #expect(third.object(forKey: "AppleLanguages") == nil)
        withExtendedLifetime((first, second)) {}
    }
}
