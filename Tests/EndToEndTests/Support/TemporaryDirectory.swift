import Foundation

/// A fresh directory for one test, removed when the test lets go of it.
final class TemporaryDirectory: Sendable {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("livedefaults-e2e-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// A path inside the directory.
    func path(_ name: String) -> URL { url.appendingPathComponent(name) }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }
}
