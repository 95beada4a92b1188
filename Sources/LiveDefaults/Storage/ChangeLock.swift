#if DEBUG
    import Glibc
    import Synchronization
#endif

/// Puts every change of stored or effective values in the process in one order.
///
/// A change of a suite store's values, and its effect on each ``Defaults`` that searches the suite,
/// happen as one step under this lock: every `Defaults` applies the changes in the order they were
/// made and queues each for its observers with the old and new value that change made. Observers
/// are called once it is released (docs/design.md, "Observation: one order for every change").
/// A store's own state is guarded by this lock too (``ChangeOrdered``), so a `set` takes it and
/// the searching `Defaults`' lock, and nothing else.
///
/// Lock order: this lock first, then a `Defaults`' state lock; never the other way, and no user
/// code under it.
enum ChangeLock {
    /// Counts the changes: the thread sanitizer mistakes accesses to an empty (`Void`) guarded
    /// value for a race, so the lock guards a real one.
    private static let lock = Locked<UInt64>(0)

    #if DEBUG
        /// The thread holding the lock, for ``assertHeld()``.
        private static let holder = Atomic<UInt>(0)
    #endif

    /// Runs `body` as one step of the process's change order.
    @inline(__always)
    static func withLock<Result>(_ body: () -> Result) -> Result {
        lock.withLock { count in
            count &+= 1
            #if DEBUG
                holder.store(UInt(pthread_self()), ordering: .relaxed)
                defer { holder.store(0, ordering: .relaxed) }
            #endif
            return body()
        }
    }

    /// Stops a debug build when the calling thread does not hold the lock.
    @inline(__always)
    static func assertHeld() {
        #if DEBUG
            assert(
                holder.load(ordering: .relaxed) == UInt(pthread_self()),
                "the change lock is not held by this thread")
        #endif
    }
}
