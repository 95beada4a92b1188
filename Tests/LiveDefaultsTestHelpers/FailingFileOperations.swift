import Foundation
import LiveDefaults

/// System calls that fail on demand, as a full disk, a lock that cannot be taken or a mapping
/// refused would, and are otherwise made for real: the tests' side of the library's one seam for
/// system calls (``FileOperations``; docs/design.md, "System calls: one seam").
///
/// Give it to a backend (`FileBackend(location:operations:)`, whose journal makes its calls through
/// it too), then `operations.fail(.write, with: ENOSPC)`; `fail(.write, with: nil)` makes the call
/// real again. `plantTemporaryNames(_:beside:)` names the temporary files a write beside a suite
/// file takes next, for a test that plants a file or a link there; each value has its own, so tests
/// running side by side never see each other's.
package struct FailingFileOperations: FileOperations {
    private let failures = Locked<[SystemCall: Int32]>([:])
    private let plannedNames = Locked<[String: [String]]>([:])

    package init() {}

    /// Makes `call` fail with `code` from now on (nil: made for real again).
    package func fail(_ call: SystemCall, with code: Int32?) {
        failures.withLock { $0[call] = code }
    }

    package func fault(_ call: SystemCall) -> Int32? {
        failures.withLock { $0[call] }
    }

    /// Makes the next temporary files beside the suite file at `target` take `names`, in order,
    /// before random ones.
    package func plantTemporaryNames(_ names: [String], beside target: String) {
        plannedNames.withLock { $0[target, default: []] += names }
    }

    /// The names planted beside `target` not yet taken by a write.
    package func plantedTemporaryNames(beside target: String) -> [String] {
        plannedNames.withLock { $0[target] ?? [] }
    }

    package func plannedTemporaryName(beside target: String) -> String? {
        plannedNames.withLock { names in
            guard var queue = names[target], !queue.isEmpty else { return nil }
            let name = queue.removeFirst()
            names[target] = queue.isEmpty ? nil : queue
            return name
        }
    }
}
