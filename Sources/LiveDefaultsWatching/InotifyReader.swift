import Dispatch
import Foundation
import LiveDefaultsLocking

/// Which thread reads inotify, and the work that calls made on it leave to run on it once they
/// return (docs/design.md, "Live reload: the watcher's threads").
///
/// A watcher's call may ask, through ``FileWatcher/runAfterCall(_:)``, for work (a store's reload
/// and its observers) to run on the reading thread once the call returns: no hand-off to another
/// thread. While such work runs, a watchdog is armed for ``takeOverAfter``: should the work still
/// be running then, a new thread takes over reading in the held thread's place, and the held one,
/// when its work returns, finds that it is no longer the reader (its generation is past) and
/// ends. So work run inline never holds up watching for much more than ``takeOverAfter``.
///
/// One per process: only one watcher uses inotify (``FileWatcher``).
final class InotifyReader: Sendable {
    /// The process's reader.
    static let shared = InotifyReader()

    /// How long work run inline may hold the reading thread before another thread takes over.
    static let takeOverAfter: Duration = .milliseconds(10)

    /// Arms a one-off deadline: runs its action after the delay, on a thread of its own choosing.
    typealias Timer = @Sendable (Duration, @escaping @Sendable () -> Void) -> Void

    private struct State {
        /// The thread that reads now (nil between a takeover and the new thread's start).
        var thread: pthread_t?
        /// The reader's generation: a thread whose generation is past is no longer the reader.
        var generation: UInt64 = 0
        /// Work asked for by calls, run on the reading thread in order from `next`.
        var queued: [@Sendable () -> Void] = []
        var next = 0
        /// When the work running now started (`DispatchTime` nanoseconds); nil when none runs.
        var runningSince: UInt64?
        var isWatchdogArmed = false
        var takeovers = 0
        /// Starts a new reading thread for a generation (set when the first reader starts).
        var startReader: (@Sendable (UInt64) -> Void)?
        /// The watchdog's timer: Dispatch's until the library installs its own.
        var timer: Timer = { delay, action in
            DispatchQueue.global().asyncAfter(
                deadline: .now() + .nanoseconds(Int(delay.wholeNanoseconds)), execute: action)
        }
    }

    private let state = Locked(State())

    private init() {}

    /// How many times a new thread took over reading.
    var takeovers: Int { state.withLock { $0.takeovers } }

    /// Whether the calling thread reads inotify now.
    var isReading: Bool {
        let current = pthread_self()
        return state.withLock { state in state.thread.map { pthread_equal($0, current) != 0 } ?? false }
    }

    /// Installs the watchdog's timer.
    func install(timer: @escaping Timer) {
        state.withLock { $0.timer = timer }
    }

    /// Makes the calling thread the reader, first of all. `startReader` starts a thread that
    /// takes over for a generation (it calls ``claim(_:)``, then reads).
    ///
    /// - Returns: The calling thread's generation.
    func start(startReader: @escaping @Sendable (UInt64) -> Void) -> UInt64 {
        state.withLock { state in
            state.thread = pthread_self()
            state.startReader = startReader
            return state.generation
        }
    }

    /// Makes the calling thread the reader of `generation`, started by a takeover.
    func claim(_ generation: UInt64) {
        state.withLock { state in
            if state.generation == generation { state.thread = pthread_self() }
        }
    }

    /// The reader of `generation` stops reading: calls queue nothing more.
    func resign(_ generation: UInt64) {
        state.withLock { state in
            if state.generation == generation { state.thread = nil }
        }
    }

    /// Queues `action` to run on the reading thread once the current call returns, when the
    /// calling thread is the reader.
    ///
    /// - Returns: Whether it was queued (false: the caller is not the reader; run it elsewhere).
    func runAfterCall(_ action: @escaping @Sendable () -> Void) -> Bool {
        let current = pthread_self()
        return state.withLock { state in
            guard let thread = state.thread, pthread_equal(thread, current) != 0 else { return false }
            state.queued.append(action)
            return true
        }
    }

    /// Runs the queued work, in order, under the watchdog. Called by the reading thread between
    /// events.
    ///
    /// - Returns: false when the calling thread is no longer the reader (another took over while
    ///   its work ran): it must end, touching nothing of the reader's.
    func runQueued(generation: UInt64) -> Bool {
        while true {
            let now = DispatchTime.now().uptimeNanoseconds
            let (action, armsWatchdog, isReader) = state.withLock {
                state -> ((@Sendable () -> Void)?, Bool, Bool) in
                guard state.generation == generation else { return (nil, false, false) }
                guard state.next < state.queued.count else {
                    if !state.queued.isEmpty {
                        state.queued.removeAll(keepingCapacity: true)
                        state.next = 0
                    }
                    state.runningSince = nil
                    return (nil, false, true)
                }
                let action = state.queued[state.next]
                state.queued[state.next] = {}
                state.next += 1
                state.runningSince = now
                let arms = !state.isWatchdogArmed
                state.isWatchdogArmed = true
                return (action, arms, true)
            }
            if armsWatchdog { armWatchdog(after: Self.takeOverAfter) }
            guard let action else { return isReader }
            action()
        }
    }

    private func armWatchdog(after delay: Duration) {
        let timer = state.withLock { $0.timer }
        timer(delay) { [self] in watchdogFired() }
    }

    /// The watchdog's deadline came: a new thread takes over when the work running now has run
    /// for ``takeOverAfter``; else the watchdog waits for the rest of that time, or stops when no
    /// work runs.
    private func watchdogFired() {
        enum Outcome {
            case idle
            case again(after: Duration)
            case takeOver(generation: UInt64, startReader: (@Sendable (UInt64) -> Void)?)
        }
        let now = DispatchTime.now().uptimeNanoseconds
        let limit = Self.takeOverAfter.wholeNanoseconds
        let outcome = state.withLock { state -> Outcome in
            guard let since = state.runningSince else {
                state.isWatchdogArmed = false
                return .idle
            }
            let elapsed = now &- since
            guard elapsed >= limit else { return .again(after: .nanoseconds(limit - elapsed)) }
            state.generation += 1
            state.thread = nil
            state.runningSince = nil
            state.isWatchdogArmed = false
            state.takeovers += 1
            return .takeOver(generation: state.generation, startReader: state.startReader)
        }
        switch outcome {
        case .idle: break
        case .again(let delay): armWatchdog(after: delay)
        case .takeOver(let generation, let startReader): startReader?(generation)
        }
    }
}
