import Foundation
import LiveDefaults

/// System calls that fail on demand, as a full disk, a lock that cannot be taken or a mapping
/// refused would, and are otherwise made for real: the tests' side of the library's one seam for
/// system calls (``FileOperations``; docs/design.md, "System calls: one seam").
///
/// Give it to a backend (`FileBackend(location:operations:)`, whose journal makes its calls through
/// it too), then `operations.fail(.write, with: ENOSPC)`; `fail(.write, with: nil)` makes the call
/// real again.
package struct FailingFileOperations: FileOperations {
    private let failures = Locked<[SystemCall: Int32]>([:])

    package init() {}

    /// Makes `call` fail with `code` from now on (nil: made for real again).
    package func fail(_ call: SystemCall, with code: Int32?) {
        failures.withLock { $0[call] = code }
    }

    package func fault(_ call: SystemCall) -> Int32? {
        failures.withLock { $0[call] }
    }
}
