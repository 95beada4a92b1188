/// A problem the watcher reports: it fell back to polling, or it cannot follow a path. The watcher goes on
/// (polling, or watching what it can); the library reports it as `DefaultsError.Code.watchingDegraded`.
package struct WatchProblem: Sendable, Equatable {
    /// A sentence a person can act on: what happened, and what it means for changes from other processes.
    package var message: String
    /// The path concerned, when there is one.
    package var path: String?

    package init(_ message: String, path: String? = nil) {
        self.message = message
        self.path = path
    }
}
