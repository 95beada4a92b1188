import Foundation

/// Finds the package's built executables (the products directory, e.g. `.build/debug`) from a test.
///
/// The test bundle runs from the products directory, so the executables are its siblings; when that fails
/// (another runner layout), the package's own `.build/debug` is used.
enum ProductLocator {
    struct NotFound: Error, CustomStringConvertible {
        var name: String
        var searched: [String]
        var description: String {
            "the executable '\(name)' was not found (looked in \(searched.joined(separator: ", "))); "
                + "build it with 'swift build' first"
        }
    }

    /// The URL of the built executable `name` (a product of this package).
    static func executable(named name: String) throws -> URL {
        var candidates: [URL] = []
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var directory = bundle.deletingLastPathComponent()
        // Walk up out of a bundle (`X.xctest/Contents/MacOS/X` on Darwin, `X.xctest` on Linux).
        for _ in 0..<4 {
            candidates.append(directory.appendingPathComponent(name))
            directory = directory.deletingLastPathComponent()
        }
        let packageRoot = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        candidates.append(packageRoot.appendingPathComponent(".build/debug/\(name)"))
        for candidate in candidates where FileManager.default.isExecutableFile(atPath: candidate.path) {
            return candidate
        }
        throw NotFound(name: name, searched: candidates.map(\.path))
    }
}
