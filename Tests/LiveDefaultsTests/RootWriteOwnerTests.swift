import Foundation
import LiveDefaultsPropertyList
import LiveDefaultsTestHelpers
import TestSupport
import Testing

@testable import LiveDefaults

/// A write made as root to another user's suite file keeps the file that user's (docs/design.md,
/// "Owners of the files root writes"): `sudo defaults write` on a service's settings must not
/// leave the service unable to read them. Giving a file away takes root: CI runs the tests as root.
@Suite struct RootWriteOwnerTests {
    @Test(.enabled(if: geteuid() == 0, "giving a file to another user takes root (CI runs the tests as root)"))
    func aRootWriteKeepsTheOwnerGroupAndModeOfAnotherUsersFileAndItsSidecars() throws {
        let directory = try NobodysDirectory()
        let file = try directory.seed("com.example.flagsvc", ["maxConnections": 10], mode: 0o640)
        let defaults = try Defaults(
            suiteName: "com.example.flagsvc", directory: URL(fileURLWithPath: directory.path), watchesFiles: false)
        defaults.set(40, forKey: "maxConnections")
        try defaults.synchronize()

        let owner = try #require(NobodysDirectory.owner(of: file))
        #expect(owner.user == directory.user && owner.group == directory.group, "\(owner)")
        #expect(owner.mode == 0o640, "mode \(String(owner.mode, radix: 8))")
        #expect(
            try PropertyListSerialization.propertyList(from: Data(contentsOf: URL(fileURLWithPath: file)), format: nil)
                as? [String: Int] == ["maxConnections": 40])

        // The sidecars beside it: the lock, the journals directory and this process's journal.
        let lock = try #require(NobodysDirectory.owner(of: file + ".lock"))
        #expect(lock.user == directory.user && lock.group == directory.group, "lock \(lock)")
        let journals = directory.path + "/.com.example.flagsvc.plist.journals"
        let journalsOwner = try #require(NobodysDirectory.owner(of: journals))
        #expect(journalsOwner.user == directory.user && journalsOwner.group == directory.group, "\(journalsOwner)")
        let names = try FileManager.default.contentsOfDirectory(atPath: journals)
        #expect(!names.isEmpty)
        for name in names {
            let journal = try #require(NobodysDirectory.owner(of: journals + "/" + name))
            #expect(journal.user == directory.user && journal.group == directory.group, "\(name): \(journal)")
        }
    }

    @Test(.enabled(if: geteuid() == 0, "giving a file to another user takes root (CI runs the tests as root)"))
    func aNewFileAndDirectoryRootMakesInAnotherUsersDirectoryAreThatUsers() throws {
        let directory = try NobodysDirectory()
        let nested = directory.path + "/more"
        let defaults = try Defaults(
            suiteName: "com.example.flagsvc", directory: URL(fileURLWithPath: nested), watchesFiles: false)
        defaults.set(40, forKey: "maxConnections")
        try defaults.synchronize()

        for path in [nested, nested + "/com.example.flagsvc.plist", nested + "/com.example.flagsvc.plist.lock"] {
            let owner = try #require(NobodysDirectory.owner(of: path), "\(path) was not made")
            #expect(owner.user == directory.user && owner.group == directory.group, "\(path): \(owner)")
        }
        #expect(NobodysDirectory.owner(of: nested + "/com.example.flagsvc.plist")?.mode == 0o600)
    }

    /// A file root cannot give back (`fchown` refused, as on an NFS export squashing root) is not
    /// replaced by a root-owned one: the write fails with an error naming the call, the file stays
    /// as it was, and the values are written once the call succeeds.
    @Test(.enabled(if: geteuid() == 0, "giving a file to another user takes root (CI runs the tests as root)"))
    func aRefusedChangeOfOwnerFailsTheWriteAndLeavesTheFile() throws {
        let directory = try NobodysDirectory()
        let file = try directory.seed("com.example.flagsvc", ["maxConnections": 10], mode: 0o640)
        let location = try SuiteLocation(suiteName: "com.example.flagsvc", directory: directory.path)
        let operations = FailingFileOperations()
        let store = SuiteStore(
            location: location, backend: FileBackend(location: location, operations: operations),
            clock: ManualStoreClock())
        // (Root is warned that the directory is another user's: that user could redirect the write.)
        #expect(store.load().allSatisfy { $0.code == .insecureDirectory })
        operations.fail(.fchown, with: EPERM)
        store.set(40, forKey: "maxConnections")
        #expect {
            try store.flush()
        } throws: { error in
            "\(error)".contains("fchown") && "\(error)".contains("Operation not permitted")
        }
        #expect(directory.owns(file))
        #expect(try StoreBackendTests.fileValues(file) == ["maxConnections": 10])
        operations.fail(.fchown, with: nil)
        try store.flush()
        #expect(directory.owns(file) && NobodysDirectory.owner(of: file)?.mode == 0o640)
        #expect(try StoreBackendTests.fileValues(file) == ["maxConnections": 40])
    }

    /// The user who owns the directory could put a hard link to a file of root's at the lock's name:
    /// root's write must not give that file away.
    @Test(.enabled(if: geteuid() == 0, "giving a file to another user takes root (CI runs the tests as root)"))
    func aLockNameLinkedToAFileOfRootsDoesNotGiveThatFileAway() throws {
        let directory = try NobodysDirectory()
        let file = try directory.seed("com.example.flagsvc", ["maxConnections": 10], mode: 0o600)
        let secret = directory.base.path + "/secret"
        try Data("root's".utf8).write(to: URL(fileURLWithPath: secret))
        try #require(link(secret, file + ".lock") == 0)
        let defaults = try Defaults(
            suiteName: "com.example.flagsvc", directory: URL(fileURLWithPath: directory.path), watchesFiles: false)
        defaults.set(40, forKey: "maxConnections")
        try defaults.synchronize()
        let owner = try #require(NobodysDirectory.owner(of: secret))
        #expect(owner.user == 0 && owner.group == getegid(), "\(owner)")
        #expect(directory.owns(file))
    }
}
