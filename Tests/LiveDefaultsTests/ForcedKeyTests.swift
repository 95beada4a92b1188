import Foundation
import LiveDefaultsPropertyList
import LiveDefaultsTestHelpers
import Synchronization
import TestSupport
import Testing

@testable import LiveDefaults

/// One test's administered world: the user's config directory, two system directories and a
/// managed directory, all under a temporary directory (never the machine's /etc).
final class AdministeredWorld {
    let root: TemporaryDirectory
    let user: URL
    let system: [URL]
    let managed: URL
    var trustedOwner = geteuid()

    init() throws {
        root = try TemporaryDirectory()
        let base = root.url
        user = base.appendingPathComponent("user", isDirectory: true)
        system = ["xdg1", "xdg2"].map { base.appendingPathComponent($0, isDirectory: true) }
        managed = base.appendingPathComponent("managed", isDirectory: true)
        for directory in [user, managed] + system {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            chmod(directory.path, 0o755)
        }
    }

    var settings: AdministeredSettings {
        AdministeredSettings(systemDirectories: system, managedDirectory: managed, trustedOwner: trustedOwner)
    }

    func defaults(_ suite: String = "com.example.admin", watching: Bool = true) throws -> Defaults {
        try Defaults(suiteName: suite, directory: user, watchesFiles: watching, administeredSettings: settings)
    }

    /// Writes `values` to `directory/name.plist` as an administrator would: a new file renamed in place.
    func put(_ values: [String: PropertyListValue], in directory: URL, _ name: String = "com.example.admin") throws {
        let data = try PropertyListCodec.encode(.dictionary(values), format: .xml)
        let temporary = directory.appendingPathComponent(".\(name).new")
        try data.write(to: temporary)
        chmod(temporary.path, 0o644)
        #expect(rename(temporary.path, directory.appendingPathComponent("\(name).plist").path) == 0)
    }

    func remove(in directory: URL, _ name: String = "com.example.admin") throws {
        try FileManager.default.removeItem(at: directory.appendingPathComponent("\(name).plist"))
    }
}

/// Reports gathered while a test runs (a listener, so tests running side by side keep their own).
final class Reports: Sendable {
    private let errors = Mutex<[DefaultsError]>([])
    private let token = Mutex<ObservationToken?>(nil)

    /// Hears the reports whose path is under `directory`.
    init(under directory: String) {
        let listening = DefaultsErrorReporting.listen { [weak self] error in
            guard error.path?.hasPrefix(directory) == true else { return }
            self?.errors.withLock { $0.append(error) }
        }
        token.withLock { $0 = listening }
    }

    var all: [DefaultsError] { errors.withLock { $0 } }
    func of(_ code: DefaultsError.Code) -> [DefaultsError] { all.filter { $0.code == code } }
}

@Suite struct ForcedKeyTests {
    @Test func aManagedFileForcesItsKeysOverEveryLayerButTheArgumentDomain() throws {
        let world = try AdministeredWorld()
        try world.put(["theme": "managed"], in: world.managed)
        try world.put(["theme": "site"], in: world.system[0])
        try world.put(["theme": "global"], in: world.user, Defaults.globalDomain)
        try world.put(["theme": "added"], in: world.user, "com.example.added")
        try world.put(["theme": "user"], in: world.user)
        let defaults = try world.defaults(watching: false)
        try defaults.addSuite(named: "com.example.added")
        defaults.setVolatileDomain(["theme": "volatile"], forName: "session")
        defaults.register(defaults: ["theme": "registered"])
        #expect(defaults.string(forKey: "theme") == "managed")
        #expect(defaults.objectIsForced(forKey: "theme"))
        #expect(!defaults.objectIsForced(forKey: "other"))
        defaults.setVolatileDomain(["theme": "argument"], forName: Defaults.argumentDomain)
        #expect(defaults.string(forKey: "theme") == "argument")
        #expect(defaults.objectIsForced(forKey: "theme"))
    }

    @Test func theGlobalDomainsManagedFileForcesKeysInEverySuite() throws {
        let world = try AdministeredWorld()
        try world.put(["AppleLocale": "en_GB"], in: world.managed, Defaults.globalDomain)
        try world.put(["homepage": "https://intranet"], in: world.managed, "com.example.browser")
        let defaults = try world.defaults(watching: false)
        #expect(defaults.string(forKey: "AppleLocale") == "en_GB")
        #expect(defaults.objectIsForced(forKey: "AppleLocale"))
        #expect(defaults.objectIsForced(forKey: "homepage", inDomain: "com.example.browser"))
        #expect(defaults.objectIsForced(forKey: "AppleLocale", inDomain: "com.example.browser"))
        #expect(!defaults.objectIsForced(forKey: "homepage", inDomain: "com.example.other"))
        #expect(!defaults.objectIsForced(forKey: "homepage"))
    }

    @Test func aSetOnAForcedKeyIsKeptInTheUsersFileAndReportedOnce() throws {
        let world = try AdministeredWorld()
        let reports = Reports(under: world.root.path)
        try world.put(["theme": "managed"], in: world.managed)
        let defaults = try world.defaults(watching: false)
        defaults.set("mine", forKey: "theme")
        defaults.set("mine again", forKey: "theme")
        defaults.set("free", forKey: "free")
        #expect(defaults.string(forKey: "theme") == "managed")
        #expect(defaults.persistentValues()["theme"] == "mine again")
        try defaults.synchronize()
        let data = try Data(contentsOf: world.user.appendingPathComponent("com.example.admin.plist"))
        let stored = try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any]
        #expect(stored?["theme"] as? String == "mine again")
        let forced = reports.of(.forcedKey)
        #expect(forced.count == 1)
        #expect(forced.first?.message.contains("\"theme\"") == true)
        #expect(forced.first?.path == world.managed.appendingPathComponent("com.example.admin.plist").path)
    }

    @Test func liveEditsOfAManagedFileReachObserversAndRemovingItReleasesTheKeys() async throws {
        let world = try AdministeredWorld()
        try world.put(["theme": "user"], in: world.user)
        let defaults = try world.defaults()
        let log = ChangeLog(defaults)
        let forcing = Mutex<[Bool]>([])
        let token = defaults.observeForcing(ofKey: "theme") { isForced in forcing.withLock { $0.append(isForced) } }
        #expect(!defaults.objectIsForced(forKey: "theme"))

        try world.put(["theme": "managed"], in: world.managed)
        #expect(await eventually { defaults.string(forKey: "theme") == "managed" })
        #expect(defaults.objectIsForced(forKey: "theme"))
        #expect(await eventually { forcing.withLock { $0 } == [true] })

        try world.put(["theme": "managed 2"], in: world.managed)
        #expect(await eventually { defaults.string(forKey: "theme") == "managed 2" })

        try world.remove(in: world.managed)
        #expect(await eventually { defaults.string(forKey: "theme") == "user" })
        #expect(!defaults.objectIsForced(forKey: "theme"))
        #expect(await eventually { forcing.withLock { $0 } == [true, false] })
        // The observer is called after a read can see the change, and the forcing observers do not
        // wait for it when another thread is delivering: wait for the log's last entry too.
        #expect(await eventually { log.of("theme").last?.oldValue == "managed 2" })
        #expect(
            log.of("theme").map { [$0.oldValue, $0.newValue] } == [
                ["user", "managed"], ["managed", "managed 2"], ["managed 2", "user"],
            ])
        #expect(log.of("theme").allSatisfy { $0.origin == .external })
        token.cancel()
    }

    @Test func aStoreBeforeTheSuiteForcesItsKeysAsAManagedFleetSuiteDoes() throws {
        let world = try AdministeredWorld()
        let defaults = try world.defaults(watching: false)
        let reports = Reports(under: "/dev/null/LiveDefaults-in-memory")
        let fleet = try Defaults.inMemory(suiteName: "com.example.fleet")
        fleet.set("fleet", forKey: "theme")
        defaults.set("user", forKey: "theme")
        defaults.setVolatileDomain(["theme": "volatile"], forName: "session")
        #expect(!defaults.objectIsForced(forKey: "theme"))
        let forcing = Mutex<[Bool]>([])
        let token = defaults.observeForcing(ofKey: "theme") { isForced in forcing.withLock { $0.append(isForced) } }
        defaults.addStore(fleet.primaryStore, at: .beforeSuite)
        #expect(defaults.objectIsForced(forKey: "theme"))
        #expect(defaults.string(forKey: "theme") == "fleet")
        #expect(forcing.withLock { $0 } == [true])
        fleet.removeObject(forKey: "theme")
        #expect(!defaults.objectIsForced(forKey: "theme"))
        #expect(defaults.string(forKey: "theme") == "volatile")
        #expect(forcing.withLock { $0 } == [true, false])
        fleet.set("fleet 2", forKey: "theme")
        #expect(forcing.withLock { $0 } == [true, false, true])
        defaults.set("user 2", forKey: "theme")
        #expect(reports.of(.forcedKey).count == 1)
        token.cancel()
    }

    @Test(arguments: [
        ("the file belongs to another user", 0o644, 0o755, true),
        ("the file is writable by others", 0o646, 0o755, false),
        ("the file is writable by its group", 0o664, 0o755, false),
        ("the directory is writable by others", 0o644, 0o757, false),
    ])
    func aManagedFileAUserCouldChangeIsIgnoredWithAReport(
        _ case: String, fileMode: Int, directoryMode: Int, othersOwnIt: Bool
    ) throws {
        let world = try AdministeredWorld()
        let reports = Reports(under: world.root.path)
        try world.put(["theme": "user"], in: world.user)
        try world.put(["theme": "managed"], in: world.managed)
        let file = world.managed.appendingPathComponent("com.example.admin.plist").path
        chmod(file, mode_t(fileMode))
        chmod(world.managed.path, mode_t(directoryMode))
        if othersOwnIt { world.trustedOwner = geteuid() &+ 1 }
        let defaults = try world.defaults(watching: false)
        #expect(defaults.string(forKey: "theme") == "user", "\(`case`)")
        #expect(!defaults.objectIsForced(forKey: "theme"))
        let problems = reports.of(.untrustedManagedFile)
        #expect(problems.count == 1)
        #expect(problems.first?.message.contains(othersOwnIt ? file : world.managed.path) == true)
        #expect(problems.first?.path == file)
    }

    /// The guide's worked example on a fresh machine: the managed directory is made after the
    /// program opened its suite. Its first file forces the key in the running program.
    @Test func aManagedDirectoryMadeAfterOpeningIsFollowedLive() async throws {
        let world = try AdministeredWorld()
        try FileManager.default.removeItem(at: world.managed)
        try world.put(["theme": "user"], in: world.user)
        let defaults = try world.defaults()
        let log = ChangeLog(defaults)
        let forcing = Mutex<[Bool]>([])
        let token = defaults.observeForcing(ofKey: "theme") { isForced in forcing.withLock { $0.append(isForced) } }
        try FileManager.default.createDirectory(at: world.managed, withIntermediateDirectories: true)
        chmod(world.managed.path, 0o755)
        try world.put(["theme": "managed"], in: world.managed)
        #expect(await eventually { forcing.withLock { $0 } == [true] })
        #expect(defaults.string(forKey: "theme") == "managed")
        #expect(await eventually { log.of("theme").map(\.newValue) == ["managed"] })
        token.cancel()
    }

    /// Parents made later too (`mkdir -p /etc/livedefaults/managed` where /etc/livedefaults was
    /// not there), and a managed directory removed and made again.
    @Test func aManagedDirectoryWhoseParentsAreMadeLaterOrThatIsReplacedIsFollowedLive() async throws {
        let world = try AdministeredWorld()
        let managed = world.root.url.appendingPathComponent("etc/livedefaults/managed", isDirectory: true)
        let settings = AdministeredSettings(
            systemDirectories: world.system, managedDirectory: managed, trustedOwner: world.trustedOwner)
        let defaults = try Defaults(
            suiteName: "com.example.admin", directory: world.user, administeredSettings: settings)
        try FileManager.default.createDirectory(at: managed, withIntermediateDirectories: true)
        try world.put(["theme": "managed"], in: managed)
        #expect(await eventually { defaults.string(forKey: "theme") == "managed" })
        #expect(defaults.objectIsForced(forKey: "theme"))

        try FileManager.default.removeItem(at: managed)
        #expect(await eventually { !defaults.objectIsForced(forKey: "theme") })
        try FileManager.default.createDirectory(at: managed, withIntermediateDirectories: true)
        try world.put(["theme": "managed again"], in: managed)
        #expect(await eventually { defaults.string(forKey: "theme") == "managed again" })
        #expect(defaults.objectIsForced(forKey: "theme"))
    }

    /// `chmod 666` on a managed file a running program follows: the key is released at once, and
    /// forced again by the `chmod 644` that fixes it, with no other change to the file.
    @Test func aPermissionChangeOfAManagedFileTakesEffectLiveBothWays() async throws {
        let world = try AdministeredWorld()
        try world.put(["theme": "user"], in: world.user)
        try world.put(["theme": "managed"], in: world.managed)
        let file = world.managed.appendingPathComponent("com.example.admin.plist").path
        let defaults = try world.defaults()
        #expect(defaults.objectIsForced(forKey: "theme"))
        let forcing = Mutex<[Bool]>([])
        let token = defaults.observeForcing(ofKey: "theme") { isForced in forcing.withLock { $0.append(isForced) } }

        chmod(file, 0o666)
        #expect(await eventually { forcing.withLock { $0 } == [false] })
        #expect(defaults.string(forKey: "theme") == "user")
        chmod(file, 0o644)
        #expect(await eventually { forcing.withLock { $0 } == [false, true] })
        #expect(defaults.string(forKey: "theme") == "managed")

        // The directory's permissions count as the file's do.
        chmod(world.managed.path, 0o757)
        #expect(await eventually { forcing.withLock { $0 } == [false, true, false] })
        chmod(world.managed.path, 0o755)
        #expect(await eventually { forcing.withLock { $0 } == [false, true, false, true] })
        token.cancel()
    }

    /// A `chown` to the trusted owner makes a managed file count without any other change (giving
    /// a file away takes root: CI runs the tests as root).
    @Test(.enabled(if: geteuid() == 0, "chown to another user takes root"))
    func anOwnerChangeOfAManagedFileTakesEffectLive() async throws {
        let world = try AdministeredWorld()
        try world.put(["theme": "managed"], in: world.managed)
        let file = world.managed.appendingPathComponent("com.example.admin.plist").path
        let owner = geteuid()
        #expect(chown(file, owner &+ 1, UInt32.max) == 0)
        let defaults = try world.defaults()
        #expect(!defaults.objectIsForced(forKey: "theme"))
        #expect(chown(file, owner, UInt32.max) == 0)
        #expect(await eventually { defaults.objectIsForced(forKey: "theme") })
    }

    @Test func aManagedFileMadeSafeCountsAtItsNextChange() async throws {
        let world = try AdministeredWorld()
        try world.put(["theme": "managed"], in: world.managed)
        let file = world.managed.appendingPathComponent("com.example.admin.plist").path
        chmod(file, 0o666)
        let defaults = try world.defaults()
        #expect(!defaults.objectIsForced(forKey: "theme"))
        try world.put(["theme": "managed 2"], in: world.managed)
        #expect(await eventually { defaults.string(forKey: "theme") == "managed 2" })
        #expect(defaults.objectIsForced(forKey: "theme"))
    }
}
