import Foundation
import LiveDefaults
import LiveDefaultsPropertyList
import TestSupport
import Testing

/// One test's world for the `defaults` binary: the user's `XDG_CONFIG_HOME`, two system
/// directories (`XDG_CONFIG_DIRS`) and a managed directory (`LIVEDEFAULTS_MANAGED_DIR`), all
/// temporary, and the runtime directory that keeps the locks and journals of the administrator's
/// files (`LIVEDEFAULTS_RUNTIME_DIR`: never the machine's /run). The files are made by this
/// process, as root in CI: root is the trusted owner.
private final class AdministeredFixture {
    let root: TemporaryDirectory
    let runner: CommandRunner

    init() throws {
        root = try TemporaryDirectory()
        runner = CommandRunner(
            executable: ProductRunner.productsDirectory.appendingPathComponent("defaults"),
            environment: [
                "XDG_CONFIG_HOME": root.file("home").path, "HOME": root.file("home").path,
                "XDG_CONFIG_DIRS": root.file("xdg1").path + ":" + root.file("xdg2").path,
                "LIVEDEFAULTS_MANAGED_DIR": root.file("managed").path,
                "LIVEDEFAULTS_RUNTIME_DIR": root.file("run").path,
            ])
        for name in ["home", "xdg1", "xdg2", "managed"] {
            try FileManager.default.createDirectory(at: root.file(name), withIntermediateDirectories: true)
            chmod(root.file(name).path, 0o755)
        }
    }

    /// The path of `name`.plist in the directory `directory` ("home", "xdg1", "xdg2", "managed").
    func path(_ directory: String, _ name: String = "com.example.app") -> String {
        root.file(directory).appendingPathComponent(name + ".plist").path
    }

    func put(_ values: [String: PropertyListValue], _ directory: String, _ name: String = "com.example.app") throws {
        try PropertyListCodec.encode(.dictionary(values), format: .binary).write(
            to: URL(fileURLWithPath: path(directory, name)))
        chmod(path(directory, name), 0o644)
    }

    @discardableResult
    func defaults(_ arguments: String...) throws -> CommandResult { try runner.run(arguments) }

    /// Every file under the world's root (the user's, the system-wide and the managed ones, and
    /// any lock or journal beside them), by path, with its bytes and mode.
    func files() throws -> [String: String] {
        var files: [String: String] = [:]
        let enumerator = FileManager.default.enumerator(atPath: root.path)
        while let relative = enumerator?.nextObject() as? String {
            let path = root.path + "/" + relative
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            let mode = (attributes[.posixPermissions] as? Int).map { String($0, radix: 8) } ?? "?"
            let isFile = attributes[.type] as? FileAttributeType == .typeRegular
            files[relative] =
                mode + " " + (isFile ? try Data(contentsOf: URL(fileURLWithPath: path)).base64EncodedString() : "")
        }
        return files
    }
}

@Suite(
    .enabled(if: geteuid() == 0, "the managed files this test makes count only when root owns them (CI runs as root)"))
struct AdministeredCommandTests {
    @Test func writeRefusesAForcedKeyNamingTheManagedFileAndLeavesEverythingUntouched() throws {
        let world = try AdministeredFixture()
        try world.put(["homepage": "https://intranet"], "managed")
        try world.put(["homepage": "https://mine", "other": 1], "home")
        try world.put(["homepage": "https://site"], "xdg1")
        let before = try world.files()

        let refused = try world.defaults("write", "com.example.app", "homepage", "https://elsewhere")
        #expect(refused.status == 1)
        #expect(refused.standardError.contains(world.path("managed")), "\(refused)")
        #expect(refused.standardError.contains("homepage"))
        let wholeDomain = try world.defaults("write", "com.example.app", "{ homepage = x; other = 2; }")
        #expect(wholeDomain.status == 1)
        #expect(wholeDomain.standardError.contains(world.path("managed")), "\(wholeDomain)")
        // This machine's own file is the domain's too: the key is forced there as well.
        let thisMachine = try world.defaults("-currentHost", "write", "com.example.app", "homepage", "x")
        #expect(thisMachine.status == 1)
        #expect(thisMachine.standardError.contains(world.path("managed")), "\(thisMachine)")
        // Nothing made, changed or removed anywhere: the user's, the system-wide and the managed file.
        #expect(try world.files() == before)

        // A key that is not forced is written as usual.
        #expect(try world.defaults("write", "com.example.app", "other", "-int", "2").status == 0)
        #expect(try world.defaults("read", "com.example.app", "other").standardOutput == "2\n")
    }

    @Test func aManagedFileAUserCouldChangeIsIgnoredAndTheCommandSaysSo() throws {
        let world = try AdministeredFixture()
        try world.put(["homepage": "https://intranet"], "managed")
        try world.put(["homepage": "https://mine"], "home")
        chmod(world.path("managed"), 0o666)

        let explained = try world.defaults("explain", "com.example.app", "homepage")
        #expect(explained.status == 0, "\(explained)")
        #expect(
            explained.standardOutput
                == "* suite    \(world.path("home"))  \"https://mine\"\n"
                + "- managed  \(world.path("managed"))  \"https://intranet\"  (ignored: the managed file "
                + "\(world.path("managed")) can be written by group or others (mode 666), so a user other than uid 0 "
                + "could change it)\n", "the ignored layer is listed, after the ones that count")
        #expect(explained.standardError.hasPrefix("defaults: note: The managed file \(world.path("managed")) can be"))
        #expect(explained.standardError.contains("its keys are not forced"), "\(explained)")
        let written = try world.defaults("write", "com.example.app", "homepage", "https://elsewhere")
        #expect(written.status == 0, "\(written)")
        #expect(written.standardError.contains(world.path("managed")), "\(written)")
    }

    /// A key whose only value is in an ignored managed file: `explain` lists that layer and why, rather than
    /// saying the key does not exist; programs read no value (`read` still exits 1).
    @Test func explainOfAKeyOnlyAnIgnoredManagedFileHoldsListsThatLayerAndWhy() throws {
        let world = try AdministeredFixture()
        try world.put(["homepage": "https://intranet"], "managed")
        chmod(world.path("managed"), 0o664)
        let explained = try world.defaults("explain", "com.example.app", "homepage")
        #expect(explained.status == 0, "\(explained)")
        #expect(!explained.standardOutput.contains("does not exist"), "\(explained)")
        #expect(
            explained.standardOutput
                == "- managed  \(world.path("managed"))  \"https://intranet\"  (ignored: the managed file "
                + "\(world.path("managed")) can be written by group or others (mode 664), so a user other than uid 0 "
                + "could change it)\n", "\(explained)")
        let json = try world.defaults("explain", "com.example.app", "homepage", "--json")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [String: Any])
        #expect(object["value"] is NSNull && (object["layers"] as? [Any])?.isEmpty == true, "\(json)")
        let ignored = try #require((object["ignored"] as? [[String: Any]])?.first, "\(json)")
        #expect(ignored["location"] as? String == world.path("managed") && ignored["layer"] as? String == "managed")
        #expect((ignored["ignored"] as? String)?.contains("mode 664") == true, "\(json)")
        #expect(try world.defaults("read", "com.example.app", "homepage").status == 1, "programs read no value")
        chmod(world.path("managed"), 0o644)
        #expect(try world.defaults("explain", "com.example.app", "absent").status == 1, "no layer has it")
    }

    @Test func anAdministratorsFileThatDoesNotParseIsNotedAndTheDomainsOwnIsNot() throws {
        let world = try AdministeredFixture()
        try Data("{ homepage = ".utf8).write(to: URL(fileURLWithPath: world.path("managed")))
        try Data("<plist".utf8).write(to: URL(fileURLWithPath: world.path("xdg2")))
        try world.put(["homepage": "https://mine"], "home")

        let explained = try world.defaults("explain", "com.example.app", "homepage")
        #expect(explained.standardOutput == "* suite  \(world.path("home"))  \"https://mine\"\n", "\(explained)")
        let notes = explained.standardError.split(separator: "\n")
        #expect(notes.count == 2, "\(explained)")
        #expect(notes.first?.hasPrefix("defaults: note: The suite file \(world.path("managed")) ") == true)
        #expect(notes.last?.hasPrefix("defaults: note: The suite file \(world.path("xdg2")) ") == true)
        // The domain's own corrupt file is the verb's error, said once, with no note.
        try Data("{ homepage = ".utf8).write(to: URL(fileURLWithPath: world.path("home")))
        let own = try world.defaults("explain", "com.example.app", "homepage")
        #expect(own.status == 1)
        let lines = own.standardError.split(separator: "\n")
        #expect(lines.count == 3, "\(own)")
        #expect(
            lines.last?.hasPrefix("defaults: cannot read domain com.example.app: The suite file \(world.path("home")) ")
                == true)
    }

    @Test func aKeyThatAManagedFileForcesSetByRenameIsKeptAndNoted() throws {
        let world = try AdministeredFixture()
        try world.put(["homepage": "https://intranet"], "managed")
        try world.put(["start": "https://mine"], "home")

        let renamed = try world.defaults("rename", "com.example.app", "start", "homepage")
        #expect(renamed.status == 0, "\(renamed)")
        #expect(
            renamed.standardError
                == "defaults: note: The key \"homepage\" of suite \"com.example.app\" is forced by "
                + "\(world.path("managed")): the change is kept in the suite, but reads give the forced value "
                + "until the administrator releases the key.\n")
        #expect(
            try world.defaults("read", "com.example.app").standardOutput == "{\n    homepage = \"https://mine\";\n}\n")
    }

    @Test func readShowsSystemWideDefaultsOnlyWithItsFlagAndWriteNeverWritesThem() throws {
        let world = try AdministeredFixture()
        try world.put(["theme": "site", "fontSize": 12], "xdg1")
        try world.put(["theme": "site 2", "banner": "hello"], "xdg2")
        let system = try Data(contentsOf: URL(fileURLWithPath: world.path("xdg1")))

        #expect(try world.defaults("read", "com.example.app").status == 1)
        let shown = try world.defaults("read", "--system", "com.example.app")
        #expect(shown.status == 0)
        #expect(shown.standardOutput == "{\n    banner = hello;\n    fontSize = 12;\n    theme = site;\n}\n")
        #expect(try world.defaults("read", "--system", "com.example.app", "theme").standardOutput == "site\n")

        #expect(try world.defaults("write", "com.example.app", "theme", "mine").status == 0)
        #expect(try world.defaults("read", "com.example.app").standardOutput == "{\n    theme = mine;\n}\n")
        #expect(try Data(contentsOf: URL(fileURLWithPath: world.path("xdg1"))) == system)
    }

    @Test func explainPrintsEveryLayerThatHoldsTheKeyWithTheWinnerMarked() throws {
        let world = try AdministeredFixture()
        try world.put(["homepage": "https://intranet"], "managed")
        try world.put(["homepage": "https://mine"], "home")
        try world.put(["homepage": "https://everywhere"], "home", "NSGlobalDomain")
        try world.put(["homepage": "https://site"], "xdg1")
        try world.put(["homepage": "https://site-wide"], "xdg2", "NSGlobalDomain")

        let explained = try world.defaults("explain", "com.example.app", "homepage")
        #expect(explained.status == 0, "\(explained)")
        let lines = explained.standardOutput.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.count == 6)
        #expect(lines[0] == "* managed       \(world.path("managed"))  \"https://intranet\"")
        #expect(lines[1] == "  suite         \(world.path("home"))  \"https://mine\"")
        #expect(lines[2] == "  globalDomain  \(world.path("home", "NSGlobalDomain"))  \"https://everywhere\"")
        #expect(lines[3] == "  systemWide    \(world.path("xdg1"))  \"https://site\"")
        #expect(lines[4] == "  systemWide    \(world.path("xdg2", "NSGlobalDomain"))  \"https://site-wide\"")
        #expect(lines[5] == "")

        let json = try world.defaults("explain", "com.example.app", "homepage", "--json")
        #expect(json.status == 0)
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [String: Any])
        #expect(document["value"] as? String == "https://intranet")
        let layers = try #require(document["layers"] as? [[String: Any]])
        #expect(
            layers.map { $0["layer"] as? String } == ["managed", "suite", "globalDomain", "systemWide", "systemWide"])
        #expect(layers.map { $0["wins"] as? Bool } == [true, false, false, false, false])
        #expect(layers[3]["location"] as? String == world.path("xdg1"))

        let missing = try world.defaults("explain", "com.example.app", "nothing")
        #expect(missing.status == 1)
    }
}

/// `defaults write` to an administrator's file, as the guide shows it: only the file itself is
/// left in the administrator's directory; its lock (and journal, if any) are under the runtime
/// directory, at the file's own path.
@Suite struct AdministratorsFileSidecarTests {
    @Test(arguments: ["xdg1", "managed"])
    func aWriteToAnAdministratorsFileLeavesNothingBesideIt(directory: String) throws {
        let world = try AdministeredFixture()
        let file = world.path(directory, "com.example.site")
        #expect(try world.defaults("write", file, "theme", "dark").status == 0)
        #expect(try world.defaults("write", file, "size", "-int", "12").status == 0)
        #expect(try world.defaults("read", file, "theme").standardOutput == "dark\n")
        let beside = try FileManager.default.contentsOfDirectory(atPath: world.root.file(directory).path)
        #expect(beside == ["com.example.site.plist"])
        let lock = world.root.file("run").path + world.root.file(directory).path + "/com.example.site.plist.lock"
        #expect(FileManager.default.fileExists(atPath: lock), "the lock is kept under the runtime directory")
        let mode = try FileManager.default.attributesOfItem(atPath: world.root.file("run").path)[.posixPermissions]
        #expect(mode as? Int == 0o700)
        // The user's own files keep their sidecars beside them, as before.
        #expect(try world.defaults("write", "com.example.site", "mine", "light").status == 0)
        let home = try FileManager.default.contentsOfDirectory(atPath: world.root.file("home").path)
        #expect(home.contains("com.example.site.plist.lock"))
    }
}

@Suite struct ByHostCommandTests {
    @Test func currentHostWritesAndReadsThisMachinesByHostFile() throws {
        let directory = try TemporaryDirectory()
        let machineID = directory.file("machine-id")
        try "feedface\n".write(to: machineID, atomically: true, encoding: .utf8)
        let runner = CommandRunner(
            executable: ProductRunner.productsDirectory.appendingPathComponent("defaults"),
            environment: [
                "XDG_CONFIG_HOME": directory.path, "HOME": directory.path,
                "LIVEDEFAULTS_MACHINE_ID_FILE": machineID.path,
            ])
        #expect(try runner.run(["-currentHost", "write", "com.example.app", "scale", "-float", "2"]).status == 0)
        let file = directory.file("ByHost/com.example.app.feedface.plist")
        #expect(try PropertyListCodec.decode(Data(contentsOf: file)).value == ["scale": .real(2)])
        #expect(try runner.run(["-currentHost", "read", "com.example.app", "scale"]).standardOutput == "2\n")
        #expect(try runner.run(["read", "com.example.app"]).status == 1)
        #expect(!FileManager.default.fileExists(atPath: directory.file("com.example.app.plist").path))
        // The domain's search list has this machine's file before the domain's, by the same machine ID.
        #expect(try runner.run(["write", "com.example.app", "scale", "-float", "1"]).status == 0)
        #expect(
            try runner.run(["explain", "com.example.app", "scale"]).standardOutput
                == "* currentHost  \(file.path)  2\n  suite        \(directory.file("com.example.app.plist").path)  1\n"
        )
    }
}
