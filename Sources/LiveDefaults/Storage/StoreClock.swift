/// Runs a store's background work after a delay: Dispatch in the library
/// (``DispatchStoreClock``), a clock the test advances in tests.
package protocol StoreClock: Sendable {
    /// Runs `action` once, after `delay`, on some other thread (never before returning).
    func run(after delay: Duration, _ action: @escaping @Sendable () -> Void)

    /// Runs `action` on the watcher's thread once the watcher's call being made returns, when
    /// called from such a call and this clock can (``DispatchStoreClock``: the inotify thread,
    /// docs/design.md, "Live reload: where reloads run").
    ///
    /// - Returns: Whether `action` will run so; false leaves it to the caller (``run(after:_:)``).
    func runAfterWatcherCall(_ action: @escaping @Sendable () -> Void) -> Bool
}

extension StoreClock {
    /// Never: the action runs where ``run(after:_:)`` runs it.
    package func runAfterWatcherCall(_ action: @escaping @Sendable () -> Void) -> Bool { false }
}
