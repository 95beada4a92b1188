import Foundation
import LiveDefaults
import LiveDefaultsCommand
import Testing

/// Which library reports the `defaults` command passes on as notes: those no verb's output shows.
@Suite struct CommandNotesTests {
    static let settings = AdministeredSettings(
        systemDirectories: [URL(fileURLWithPath: "/site/xdg1"), URL(fileURLWithPath: "/site/xdg2")],
        managedDirectory: URL(fileURLWithPath: "/site/managed"))

    @Test(arguments: [
        (DefaultsError.Code.watchingDegraded, "/home/ada/.config/d.plist", true),
        (.untrustedManagedFile, "/site/managed/d.plist", true),
        (.forcedKey, "/site/managed/d.plist", true),
        (.corruptFile, "/site/managed/d.plist", true),
        (.readFailed, "/site/managed/NSGlobalDomain.plist", true),
        (.corruptFile, "/site/xdg2/d.plist", true),
        (.readFailed, "/site/xdg1/d.plist", true),
        // The domain's own file: the verb says it in its own words.
        (.corruptFile, "/home/ada/.config/d.plist", false),
        (.readFailed, "/home/ada/.config/d.plist", false),
        (.readFailed, "/site/managed/sub/d.plist", false),
        (.writeFailed, "/site/managed/d.plist", false),
        (.lockFailed, "/home/ada/.config/d.plist", false),
    ])
    func aReportIsANoteOnlyWhenNoVerbShowsIt(_ code: DefaultsError.Code, path: String, isNoted: Bool) {
        let error = DefaultsError(code, "what happened", suite: "d", path: path)
        let note = CommandNotes.note(for: error, administeredSettings: { Self.settings })
        #expect(note == (isNoted ? "defaults: note: what happened\n" : nil), "\(code) at \(path)")
    }

    @Test func theSettingsAreAskedOnlyForAFileThatCouldBeAnAdministrators() {
        var asked = 0
        for code in [DefaultsError.Code.forcedKey, .writeFailed, .readFailed] {
            _ = CommandNotes.note(for: DefaultsError(code, "m", suite: "d", path: "/p")) {
                asked += 1
                return Self.settings
            }
        }
        #expect(asked == 1)
    }
}
