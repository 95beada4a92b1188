import Dispatch
import Foundation
import LiveDefaultsLocking

/// The follow-ups of one watcher: work a watch's callback leaves, through
/// ``FileWatcher/runAfterCall(_:)``, for after a call the inotify thread makes — a store's reload,
/// and the delivery of what changed to its observers.
///
/// The inotify thread runs them itself once the call has returned and no watcher lock is held,
/// so an outside change reaches its observers with no thread hop. Each is timed, per watch
/// (``FollowUpPace``): a watch whose follow-up was slow has the next ones run on a Dispatch
/// worker. A follow-up that stalls is caught while it runs: the dispatcher thread, told when one
/// starts, finds it still running after ``FollowUpPace/stalledFollowUp`` and hands the reading of
/// inotify to a new thread (``takeOverIfStalled(now:)``); the stalled thread ends once its
/// follow-up returns. So a slow observer never holds up the watching of other suites
/// (docs/design.md, "Live reload: who calls observers").
final class FollowUps: Sendable {
    /// One follow-up, and the watch it is for.
    struct Item: Sendable {
        let registration: UInt64
        let work: @Sendable () -> Void
    }

    /// The follow-up the inotify thread is running.
    struct Running: Sendable {
        let registration: UInt64
        let since: UInt64
        let reader: UInt64
    }

    struct State: Sendable {
        /// Follow-ups the inotify thread runs next, in the order they were left.
        var queue: [Item] = []
        var paces: [UInt64: FollowUpPace] = [:]
        /// Which thread reads inotify: the generation of the reading thread; a takeover starts the next.
        var reader: UInt64 = 0
        var running: Running?
        /// Whether the dispatcher has been told that follow-ups run (it then times them).
        var isTimed = false
    }

    let state = Locked(State())

    /// The call the inotify thread is making, if any: what ``FileWatcher/runAfterCall(_:)`` on
    /// that thread is for. One per process, as the inotify thread is (``FileWatcher``).
    private static let currentCall = Locked<CurrentCall?>(nil)

    private struct CurrentCall: Sendable {
        let thread: pthread_t
        let followUps: FollowUps
        let registration: UInt64
    }

    /// Marks the calling thread as making `registration`'s call, until ``endCall()``.
    func beginCall(for registration: UInt64) {
        let call = CurrentCall(thread: pthread_self(), followUps: self, registration: registration)
        Self.currentCall.withLock { $0 = call }
    }

    func endCall() {
        Self.currentCall.withLock { $0 = nil }
    }

    /// Takes `work` for after the call the calling thread is making; false when it makes none.
    static func offer(_ work: @escaping @Sendable () -> Void) -> Bool {
        let thread = pthread_self()
        guard
            let call = currentCall.withLock({ call in
                call.flatMap { pthread_equal($0.thread, thread) != 0 ? $0 : nil }
            })
        else { return false }
        call.followUps.add(Item(registration: call.registration, work: work))
        return true
    }

    private func add(_ item: Item) {
        let inline = state.withLock { state in
            guard state.paces[item.registration]?.runsInline ?? true else { return false }
            state.queue.append(item)
            return true
        }
        if !inline { runOnWorker(item) }
    }

    /// Runs `item` on a Dispatch worker, timed: fast enough often enough, its watch comes back inline.
    private func runOnWorker(_ item: Item) {
        DispatchQueue.global(qos: .utility).async { [self] in
            let start = FileWatcherCore.now()
            item.work()
            let took = FileWatcherCore.now() &- start
            state.withLock { $0.paces[item.registration]?.finished(took: took) }
        }
    }

    /// Forgets a watch that was cancelled.
    func forget(_ registration: UInt64) {
        state.withLock { _ = $0.paces.removeValue(forKey: registration) }
    }

    /// Runs the follow-ups left so far, on the inotify thread, with no watcher lock held.
    ///
    /// - Parameters:
    ///   - reader: The calling thread's generation.
    ///   - startTiming: Tells the dispatcher that follow-ups run (called at most once per quiet spell).
    /// - Returns: Whether the calling thread still reads inotify; false after a takeover, and the
    ///   thread must then end without touching the reader's state.
    func run(reader: UInt64, startTiming: () -> Void) -> Bool {
        while true {
            let now = FileWatcherCore.now()
            enum Next {
                case done(stillReading: Bool)
                case inline(Item, tellDispatcher: Bool)
                case worker(Item)
            }
            let next = state.withLock { state -> Next in
                guard state.reader == reader else { return .done(stillReading: false) }
                guard !state.queue.isEmpty else { return .done(stillReading: true) }
                let item = state.queue.removeFirst()
                // Its watch was measured slow since it was left: a worker runs it.
                guard state.paces[item.registration]?.runsInline ?? true else { return .worker(item) }
                state.running = Running(registration: item.registration, since: now, reader: reader)
                defer { state.isTimed = true }
                return .inline(item, tellDispatcher: !state.isTimed)
            }
            switch next {
            case .done(let stillReading):
                return stillReading
            case .worker(let item):
                runOnWorker(item)
            case .inline(let item, let tellDispatcher):
                if tellDispatcher { startTiming() }
                item.work()
                let took = FileWatcherCore.now() &- now
                let stillReading = state.withLock { state -> Bool in
                    guard state.reader == reader else { return false }
                    state.running = nil
                    state.paces[item.registration, default: FollowUpPace()].finished(took: took)
                    return true
                }
                if !stillReading { return false }
            }
        }
    }

    /// What the dispatcher does about follow-ups when it looks, at `now`.
    enum Watch: Equatable {
        /// None runs: the dispatcher stops timing them until told again.
        case idle
        /// One runs: look again at this deadline.
        case lookAgain(at: UInt64)
        /// One stalled: start a new reading thread of this generation.
        case takeOver(reader: UInt64)
    }

    /// Called by the dispatcher: is a follow-up stalled on the inotify thread?
    func takeOverIfStalled(now: UInt64) -> Watch {
        state.withLock { state in
            guard let running = state.running, running.reader == state.reader else {
                state.isTimed = false
                return .idle
            }
            let deadline = running.since &+ FollowUpPace.stalledFollowUp
            guard now >= deadline else { return .lookAgain(at: deadline) }
            state.paces[running.registration, default: FollowUpPace()].stalled()
            state.running = nil
            state.isTimed = false
            state.reader += 1
            return .takeOver(reader: state.reader)
        }
    }
}
