/// Runs a store's background work after a delay: Dispatch in the library
/// (``DispatchStoreClock``), a clock the test advances in tests.
package protocol StoreClock: Sendable {
    /// Runs `action` once, after `delay`, on some other thread (never before returning).
    func run(after delay: Duration, _ action: @escaping @Sendable () -> Void)
}
