/// Runs a store's background work after a delay: Dispatch in the library
/// (``DispatchStoreClock``), a clock the test advances in tests.
package protocol StoreClock: Sendable {
    /// Runs `action` once, after `delay`, never before returning: on some other thread, or (with no
    /// delay, asked inside a file watcher's call) on the watcher's thread once that call returns.
    func run(after delay: Duration, _ action: @escaping @Sendable () -> Void)
}
