import Foundation
import LiveDefaultsCommand
import TestSupport
import Testing

/// `defaults --version` and the hidden `defaults __complete` verb the shell completions call
/// (packaging/completions; the shells themselves are tested by scripts/check-package.sh).
@Suite struct CommandCompletionTests {
    /// The candidates for the last of `words`, one per line, as the completions read them.
    private func complete(_ words: String..., in directory: borrowing TemporaryDirectory) throws -> [String] {
        let result = try InProcessCommand(directory: directory.url).run(["__complete"] + words)
        #expect(result.status == 0, "\(words): \(result)")
        #expect(result.standardError.isEmpty, "\(words): \(result)")
        return result.standardOutput.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(
            String.init)
    }

    private func write(_ arguments: String..., in directory: borrowing TemporaryDirectory) throws {
        let result = try InProcessCommand(directory: directory.url).run(arguments)
        #expect(result.status == 0, "\(arguments): \(result)")
    }

    @Test func versionPrintsTheOneVersionOfTheRepository() throws {
        let directory = try TemporaryDirectory()
        let result = try InProcessCommand(directory: directory.url).run(["--version"])
        #expect(result.status == 0)
        #expect(result.standardOutput == "defaults (LiveDefaults) \(CommandVersion.text)\n")
        #expect(CommandVersion.text.split(separator: ".").count == 3)
        let extra = try InProcessCommand(directory: directory.url).run(["--version", "x"])
        #expect(extra.status == 255)
        #expect(extra.standardError.contains("unexpected argument 'x'"))
    }

    @Test func verbsAreCompletedFromTheVerbTableAndTheHiddenVerbIsNotListed() throws {
        let directory = try TemporaryDirectory()
        #expect(try complete("re", in: directory) == ["read", "read-type", "rename", "reset"])
        #expect(try complete("", in: directory).count == CommandVerb.all.count)
        #expect(try complete("-", in: directory) == ["-currentHost", "-host"])
        #expect(try complete("-currentHost", "wr", in: directory) == ["write"])
        #expect(!CommandVerb.helpText.contains(CommandCompletion.verb))
    }

    @Test func domainsAreTheGlobalDomainAndTheSuitesInTheConfigDirectory() throws {
        let directory = try TemporaryDirectory()
        try write("write", "com.example.b", "k", "v", in: directory)
        try write("write", "com.example.a", "k", "v", in: directory)
        try write("write", "org.other", "k", "v", in: directory)
        #expect(try complete("read", "", in: directory) == ["-g", "com.example.a", "com.example.b", "org.other"])
        #expect(try complete("delete", "com.ex", in: directory) == ["com.example.a", "com.example.b"])
        // A path is the shell's to complete; find and domains take no domain.
        #expect(try complete("read", "./co", in: directory).isEmpty)
        #expect(try complete("find", "", in: directory).isEmpty)
    }

    @Test func keysAreReadThroughTheStoreSortedAndFilteredByThePrefix() throws {
        let directory = try TemporaryDirectory()
        try write("write", "com.example.t", "theme", "light", in: directory)
        try write("write", "com.example.t", "font size", "-int", "14", in: directory)
        try write("write", "com.example.t", "tabs", "-bool", "yes", in: directory)
        try write("write", "-g", "AppleLocale", "en_GB", in: directory)
        #expect(try complete("read", "com.example.t", "", in: directory) == ["font size", "tabs", "theme"])
        #expect(try complete("read-type", "com.example.t", "t", in: directory) == ["tabs", "theme"])
        #expect(try complete("rename", "com.example.t", "th", in: directory) == ["theme"])
        #expect(try complete("write", "com.example.t", "f", in: directory) == ["font size"])
        #expect(try complete("read", "-g", "", in: directory) == ["AppleLocale"])
        // Only the key position: nothing after the key of read.
        #expect(try complete("read", "com.example.t", "theme", "", in: directory).isEmpty)
        // watch takes several keys, not twice the same, and --json.
        #expect(try complete("watch", "com.example.t", "theme", "", in: directory) == ["font size", "tabs", "--json"])
    }

    @Test func valueFlagsFollowWritesKeyAndBooleansFollowBool() throws {
        let directory = try TemporaryDirectory()
        #expect(try complete("write", "com.example.t", "k", "-a", in: directory) == ["-array", "-array-add"])
        #expect(try complete("write", "com.example.t", "k", "-bool", "", in: directory) == ["YES", "NO"])
        #expect(try complete("write", "com.example.t", "k", "-array", "-i", in: directory) == ["-int", "-integer"])
        #expect(try complete("write", "com.example.t", "k", "-string", "", in: directory).isEmpty)
    }

    @Test func completingChangesNothingAndNeverGoesToTheNetwork() throws {
        let directory = try TemporaryDirectory()
        try write("write", "com.example.t", "theme", "light", in: directory)
        let before = try Data(contentsOf: directory.file("com.example.t.plist"))
        _ = try complete("write", "com.example.t", "", in: directory)
        #expect(try complete("read", "com.missing", "", in: directory).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: directory.file("com.missing.plist").path))
        #expect(try Data(contentsOf: directory.file("com.example.t.plist")) == before)
        // An etcd domain has no key candidates: no request is made (port 9 is discard, never etcd).
        #expect(try complete("read", "etcd://127.0.0.1:9/com.example.t", "", in: directory).isEmpty)
    }
}
