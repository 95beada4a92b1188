#if LIVEDEFAULTS_PTHREAD_LOCKS
    import Glibc
#else
    import Synchronization
#endif

/// A value guarded by a lock: the only ways to it are ``withLock(_:)`` and ``withLockIfAvailable(_:)``.
///
/// Release builds use `Synchronization.Mutex` (a futex: the cheapest lock here, which matters on
/// the read path). The thread sanitizer cannot see a raw futex, so it reports every access under a
/// `Mutex` as a race and would hide real ones; builds for the sanitizer define
/// `LIVEDEFAULTS_PTHREAD_LOCKS` (`swift test --sanitize=thread -Xswiftc -DLIVEDEFAULTS_PTHREAD_LOCKS`,
/// as CI does) and get a `pthread_mutex_t`, which it understands. Both give the same exclusion.
///
/// One file compiled into two modules: Sources/LiveDefaults/Locked.swift is a symbolic link to
/// this one. The watcher uses it from here; the library compiles it in, where its calls on the
/// read path are specialized and inlined (shared from one module, a read took 24 ns instead of 19;
/// docs/design.md, "Map: modules").
// Safe as Sendable: `value` is read and written only while the lock is held.
package final class Locked<Value>: @unchecked Sendable {
    #if LIVEDEFAULTS_PTHREAD_LOCKS
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

        /// Runs `body` with exclusive access to the value if no other thread holds the lock;
        /// returns nil (without running it) if one does.
        package func withLockIfAvailable<Result>(_ body: (inout Value) -> Result) -> Result? {
            guard pthread_mutex_trylock(mutex) == 0 else { return nil }
            defer { pthread_mutex_unlock(mutex) }
            return body(&value)
        }
    #else
        private let mutex = Mutex<Void>(())
        // The value is kept through a pointer, not in a stored `var` of this class: a class's `var`
        // costs a dynamic exclusivity check (`swift_beginAccess`/`swift_endAccess`) on every
        // access, a fifth of the instructions of a read. The lock gives the exclusivity.
        private let value: UnsafeMutablePointer<Value>

        package init(_ value: Value) {
            self.value = .allocate(capacity: 1)
            self.value.initialize(to: value)
        }

        deinit {
            value.deinitialize(count: 1)
            value.deallocate()
        }

        /// Runs `body` with exclusive access to the value. Not reentrant: `body` must not take the
        /// same lock again.
        @inline(__always)
        package func withLock<Result, Failure: Error>(
            _ body: (inout Value) throws(Failure) -> Result
        ) throws(Failure) -> Result {
            try mutex.withLock { _ throws(Failure) in try body(&value.pointee) }
        }

        /// Runs `body` with exclusive access to the value if no other thread holds the lock;
        /// returns nil (without running it) if one does.
        package func withLockIfAvailable<Result>(_ body: (inout Value) -> Result) -> Result? {
            mutex.withLockIfAvailable { _ in body(&value.pointee) }
        }
    #endif
}
