import Foundation
import LiveDefaultsCommand
import Testing

/// The version is kept in one place, `CommandVersion.text`; the changelog's top section is named after
/// it, so a release cannot ship with a changelog that describes another version.
@Suite struct CommandVersionTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test func theChangelogsTopSectionIsNamedAfterTheVersion() throws {
        let changelog = try String(
            contentsOf: Self.repository.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        let top = try #require(changelog.split(separator: "\n").first { $0.hasPrefix("## ") })
        let name = top.dropFirst(3).split(separator: " ").first.map(String.init)
        #expect(name == CommandVersion.text, "CHANGELOG.md's top section is \"\(top)\"")
    }

    @Test func theVersionIsMajorMinorPatch() {
        let parts = CommandVersion.text.split(separator: ".", omittingEmptySubsequences: false)
        #expect(parts.count == 3 && parts.allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isNumber) })
    }
}
