// Placeholder seam until the watcher branch lands.
package final class FileWatcher: Sendable {
    package static let shared = FileWatcher()
    package func watch(path: String, onChange: @escaping @Sendable () -> Void) -> FileWatch { FileWatch() }
}
package final class FileWatch: Sendable {
    package func cancel() {}
}
