import Foundation
import LiveDefaults
import LiveDefaultsPropertyList
import TestSupport
import Testing

/// The `defaults` binary with a schema installed where the environment says (`XDG_DATA_HOME`): `watch`
/// redacts secret values, the app's installed schema is the command's, and the environment decides the place.
@Suite struct SchemaBinaryTests {
    @Test func watchRedactsSecretValuesInBothFormsUnlessAskedFor() throws {
        let directory = try TemporaryDirectory()
        let runner = CommandRunner(
            executable: ProductRunner.productsDirectory.appendingPathComponent("defaults"),
            environment: [
                "XDG_CONFIG_HOME": directory.path, "HOME": directory.path, "XDG_DATA_HOME": directory.path + "/data",
                "XDG_DATA_DIRS": directory.path + "/system",
            ])
        let schema = DefaultsSchema(
            suite: "com.x", entries: [.init(name: "token", type: .string, isSecret: true)])
        let file = directory.file("schema.plist")
        try schema.propertyListData().write(to: file)
        try runner.run(["install-schema", file.path]).expectSuccess()
        #expect(FileManager.default.fileExists(atPath: directory.path + "/data/livedefaults/schemas/com.x.plist"))

        for (arguments, shown) in [
            (["--json"], "\"<secret>\""), ([], "<secret>"), (["--json", "--show-secrets"], "s3cr3t"),
        ] {
            _ = try runner.run(["delete", "com.x"])
            let watcher = try runner.start(["watch", "com.x"] + arguments)
            defer { watcher.terminate() }
            try watcher.waitForLine(on: .error, where: { $0.hasPrefix("Watching com.x") }, describedAs: "the start")
            try runner.run(["write", "com.x", "token", "s3cr3t"]).expectSuccess()
            let line = try watcher.waitForLine(on: .output, where: { $0.contains("token") }, describedAs: "the change")
            #expect(line.contains(shown), "\(arguments): \(line)")
            if !arguments.contains("--show-secrets") { #expect(!line.contains("s3cr3t"), "\(line)") }
        }
    }
}
