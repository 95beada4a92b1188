import Glibc

/// A value guarded by a `pthread_mutex_t`: the only way to it is ``withLock(_:)``.
///
/// Used for all of LiveDefaults' state instead of `Synchronization.Mutex`, whose Linux
/// implementation waits on a raw futex that the thread sanitizer cannot see: every access under a
/// `Mutex` is reported as a race there, which would hide real ones. `pthread_mutex_lock` is
/// understood by the sanitizer and costs the same uncontended.
// Safe as Sendable: `value` is read and written only between lock and unlock of `mutex`.
package final class Locked<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    package init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value. Not reentrant: `body` must not take the
    /// same lock again.
    @inline(__always)
    package func withLock<Result, Failure: Error>(
        _ body: (inout Value) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
