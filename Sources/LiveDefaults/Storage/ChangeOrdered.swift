/// State that changes only in the process's change order: every access holds the ``ChangeLock``,
/// so a store's values change, and the ``Defaults`` that search the store see the change, under
/// one lock acquisition (docs/design.md, "Map: the three flows").
///
/// ``withLock(_:)`` takes the change lock; ``withLockHeld(_:)`` is for a caller already inside
/// it (checked in debug builds); ``withExclusiveAccess(_:)`` is for a deinitialiser, which no
/// other thread can reach and which may run under the change lock.
// Safe as Sendable: `value` is only reached under the change lock, or from a deinitialiser that
// holds the only reference.
final class ChangeOrdered<Value>: @unchecked Sendable {
    // Kept through a pointer, not in a stored `var`, as ``Locked`` keeps its value: a class's `var`
    // reached `inout` costs a dynamic exclusivity check (`swift_beginAccess`/`swift_endAccess`),
    // about 115 instructions of every `set` (docs/performance.md, "Issue 40"). The change lock
    // gives the exclusivity.
    private let value: UnsafeMutablePointer<Value>

    init(_ value: Value) {
        self.value = .allocate(capacity: 1)
        self.value.initialize(to: value)
    }

    deinit {
        value.deinitialize(count: 1)
        value.deallocate()
    }

    /// Runs `body` on the value as one step of the change order.
    @inline(__always)
    func withLock<Result>(_ body: (inout Value) -> Result) -> Result {
        ChangeLock.withLock { body(&value.pointee) }
    }

    /// Runs `body` on the value; the caller holds the change lock.
    @inline(__always)
    func withLockHeld<Result>(_ body: (inout Value) -> Result) -> Result {
        ChangeLock.assertHeld()
        return body(&value.pointee)
    }

    /// Runs `body` on the value without the lock: only from the owner's deinitialiser.
    func withExclusiveAccess<Result>(_ body: (inout Value) -> Result) -> Result {
        body(&value.pointee)
    }
}
