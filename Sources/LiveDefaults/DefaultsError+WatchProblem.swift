import LiveDefaultsWatching

extension DefaultsError {
    /// A problem of the file watcher, as the library reports it.
    package init(_ problem: WatchProblem) {
        self.init(.watchingDegraded, problem.message, path: problem.path)
    }
}
