import Foundation
import TestSupport
import Testing

/// The README's "Use it in your package": its manifest, as a user's package would use it, resolves
/// against this checkout — and a path dependency's identity is its folder's name.
@Suite struct UseInYourPackageTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The README's `Package.swift` example.
    static func readmeManifest() throws -> String {
        let readme = try String(contentsOf: repository.appendingPathComponent("README.md"), encoding: .utf8)
        let blocks = readme.components(separatedBy: "```swift\n").dropFirst().map {
            $0.components(separatedBy: "\n```").first ?? ""
        }
        return try #require(blocks.first { $0.contains("import PackageDescription") })
    }

    /// `swift package describe` of a package with `manifest`, next to a link to this checkout
    /// named `folder`.
    static func describe(_ manifest: String, dependencyFolder folder: String) throws -> (status: Int32, output: String)
    {
        let directory = try TemporaryDirectory()
        try FileManager.default.createSymbolicLink(
            at: directory.file(folder), withDestinationURL: repository)
        let consumer = directory.file("MyApp")
        try FileManager.default.createDirectory(
            at: consumer.appendingPathComponent("Sources/MyApp"), withIntermediateDirectories: true)
        try Data(manifest.utf8).write(to: consumer.appendingPathComponent("Package.swift"))
        try Data("import LiveDefaults\n".utf8).write(to: consumer.appendingPathComponent("Sources/MyApp/main.swift"))

        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] = "/opt/swift/usr/bin:" + (environment["PATH"] ?? "/usr/bin:/bin")
        environment["HOME"] = directory.path  // SwiftPM's caches go there, not to the user's home
        environment["XDG_CONFIG_HOME"] = directory.path
        // SwiftPM's lock files (named after the package's path) and the empty TemporaryDirectory.*
        // it leaves behind at each run go there too, not to /tmp.
        environment["TMPDIR"] = directory.path
        return try runToEnd(
            "/usr/bin/env", ["swift", "package", "--package-path", consumer.path, "describe"], environment: environment)
    }

    @Test func theReadmeManifestResolvesAsAPathDependency() throws {
        let manifest = try Self.readmeManifest()
        #expect(manifest.contains(#".package(url: "#))
        #expect(manifest.contains(#".product(name: "LiveDefaults", package: "LiveDefaults")"#))
        // The README's commented path form in place of the URL (no network in tests).
        let asPath = manifest.components(separatedBy: "\n").filter { !$0.contains(".package(url:") }
            .map { $0.replacingOccurrences(of: "// or a checkout next to yours:  ", with: "") }
            .joined(separator: "\n")
        #expect(asPath.contains(#".package(path: "../LiveDefaults")"#))
        let result = try Self.describe(asPath, dependencyFolder: "LiveDefaults")
        #expect(result.status == 0, "\(result.output)")
    }

    @Test func aPathDependencysIdentityIsItsFolderName() throws {
        let manifest = try Self.readmeManifest()
            .components(separatedBy: "\n").filter { !$0.contains(".package(url:") }
            .map { $0.replacingOccurrences(of: "// or a checkout next to yours:  ", with: "") }
            .joined(separator: "\n")
            .replacingOccurrences(of: "../LiveDefaults", with: "../live-defaults")
        let wrong = try Self.describe(manifest, dependencyFolder: "live-defaults")
        #expect(wrong.status != 0)
        #expect(wrong.output.contains("valid packages are: 'live-defaults'"), "\(wrong.output)")
        let right = try Self.describe(
            manifest.replacingOccurrences(of: #"package: "LiveDefaults""#, with: #"package: "live-defaults""#),
            dependencyFolder: "live-defaults")
        #expect(right.status == 0, "\(right.output)")
    }
}
