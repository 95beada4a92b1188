/// When a store's background work runs: the flush a change asks for (after ``flushDelay``, so
/// bursts coalesce), the back-off after a failed flush, and reloads. It is the one owner of "when
/// to reload": the watcher only says what it saw, and requests that come before the armed reload
/// starts coalesce here (docs/design.md, "Live reload: coalescing").
///
/// A pure value, kept under the store's state lock; the store arms what it says on its
/// ``StoreClock`` (docs/design.md, "Store model and backends"). Each part is a state machine:
/// an event goes in, and what to arm comes out.
package struct StoreSchedule: Sendable, Equatable {
    /// How long a change waits before the background flush writes it, so bursts coalesce.
    package static let flushDelay: Duration = .milliseconds(20)
    /// The first delay after a failed flush; it doubles on each failure, up to ``longestRetryDelay``.
    package static let firstRetryDelay: Duration = .milliseconds(250)
    package static let longestRetryDelay: Duration = .seconds(30)

    /// Where the background flush stands.
    package enum Flush: Sendable, Equatable {
        /// Nothing armed, and the last flush (if any) wrote.
        case idle
        /// A flush is armed and has not started; the last flush (if any) wrote.
        case armed
        /// The last flush failed and nothing is armed: the next change arms a retry after `retryDelay`.
        case failed(retryDelay: Duration)
        /// The last flush failed and a retry is armed after `retryDelay`.
        case retryArmed(retryDelay: Duration)
    }

    /// Where reloads stand.
    package enum Reload: Sendable, Equatable {
        /// None armed (one may be running).
        case idle
        /// One is armed and has not started.
        case armed
    }

    /// What the backend's watch asked a reload for.
    package enum ReloadRequest: Sendable, Equatable {
        /// The suite may have changed: a suite found absent is no change.
        case mayHaveChanged
        /// The suite is gone and its absence counts: a suite found absent reads as empty.
        case goneForGood
    }

    /// Where reloads run (docs/design.md, "Live reload: where reloads run").
    package enum ReloadPlace: Sendable, Equatable {
        /// On the watcher's inotify thread, once its call returns: no hand-off.
        case inline
        /// On a Dispatch worker, so that a slow reload or observer holds up no watching.
        /// `fastInARow` of the `needed` fast reloads in a row that bring the suite back inline.
        case worker(fastInARow: Int, needed: Int)
    }

    /// A reload (with its observers) that takes longer than this moves the suite to a worker.
    package static let slowReload: Duration = .milliseconds(1)
    /// The fast reloads in a row that bring a suite back inline after its first move to a worker;
    /// each further move doubles it, up to ``mostFastReloadsToReturn`` (a flapping suite stays on
    /// the worker).
    package static let fewestFastReloadsToReturn = 16
    package static let mostFastReloadsToReturn = 1_024

    package private(set) var flush = Flush.idle
    package private(set) var reload = Reload.idle
    /// The last request not yet taken by a reload: a reload takes it when it runs (not when it was
    /// armed, ``takeReloadRequest()``), so a "gone for good" that later news overtook (the file came
    /// back) is not applied.
    package private(set) var lastRequest = ReloadRequest.mayHaveChanged
    package private(set) var reloadPlace = ReloadPlace.inline
    /// The fast reloads in a row the next move to a worker asks for before coming back.
    private var fastReloadsToReturn = Self.fewestFastReloadsToReturn
    /// What counts as a slow reload for this suite: ``slowReload``. Tests raise it for a suite of
    /// their own where they need its reloads to count as fast on any machine (a thread-sanitizer
    /// build on a loaded machine takes over 1 ms for any reload), with ``judgeReloads(slowAfter:)``.
    package private(set) var slowReloadLimit = Self.slowReload

    package init() {}

    /// A change was made. Returns the delay to arm the flush after, nil when one is already armed.
    @inline(__always)
    package mutating func changeMade() -> Duration? {
        switch flush {
        case .idle:
            flush = .armed
            return Self.flushDelay
        case .failed(let delay):
            flush = .retryArmed(retryDelay: delay)
            return delay
        case .armed, .retryArmed:
            return nil
        }
    }

    /// The armed flush started: changes made from now on arm another.
    package mutating func flushStarted() {
        switch flush {
        case .armed: flush = .idle
        case .retryArmed(let delay): flush = .failed(retryDelay: delay)
        case .idle, .failed: break
        }
    }

    /// A flush wrote: the back-off is over.
    package mutating func flushSucceeded() {
        switch flush {
        case .failed: flush = .idle
        case .retryArmed: flush = .armed
        case .idle, .armed: break
        }
    }

    /// The background flush failed: the values stay pending and a later flush retries, backing off.
    ///
    /// - Returns: The delay to arm the retry after (nil when one is already armed), and whether
    ///   this is the first failure in a row (the one to report).
    package mutating func flushFailed() -> (retryAfter: Duration?, isFirstFailure: Bool) {
        func backedOff(_ delay: Duration) -> Duration {
            min(max(delay * 2, Self.firstRetryDelay), Self.longestRetryDelay)
        }
        switch flush {
        case .idle:
            flush = .retryArmed(retryDelay: Self.firstRetryDelay)
            return (Self.firstRetryDelay, true)
        case .armed:
            flush = .retryArmed(retryDelay: Self.firstRetryDelay)
            return (nil, true)
        case .failed(let delay):
            let next = backedOff(delay)
            flush = .retryArmed(retryDelay: next)
            return (next, false)
        case .retryArmed(let delay):
            flush = .retryArmed(retryDelay: backedOff(delay))
            return (nil, false)
        }
    }

    /// Someone asked for a reload (the backend's watch). Returns whether to arm one: requests made
    /// before it starts coalesce into it, and the last one says what the reload is for.
    package mutating func reloadRequested(_ request: ReloadRequest = .mayHaveChanged) -> Bool {
        lastRequest = request
        switch reload {
        case .idle:
            reload = .armed
            return true
        case .armed:
            return false
        }
    }

    /// The armed reload started: requests from now on arm another.
    package mutating func reloadStarted() {
        reload = .idle
    }

    /// A reload runs now (it holds the store's I/O lock): what it is for. The request is taken, so
    /// a "gone for good" is applied by one reload only: the first to run after it, which looks at
    /// the file then. Another reload that was already on its way (started before the request, and
    /// running after that one) finds a "may have changed", and so cannot empty the suite when the
    /// file is away again for a moment later on (docs/design.md, "Live reload: coalescing").
    package mutating func takeReloadRequest() -> ReloadRequest {
        defer { lastRequest = .mayHaveChanged }
        return lastRequest
    }

    /// Makes `limit` what counts as a slow reload from now on, and judges the suite afresh: it
    /// runs inline again, with the fewest fast reloads to come back should it move. A place
    /// chosen by the old limit says nothing under the new one (a reload that took 2 ms before a
    /// test raised the limit to 10 s moved its suite to a worker for 16 reloads).
    package mutating func judgeReloads(slowAfter limit: Duration) {
        slowReloadLimit = limit
        reloadPlace = .inline
        fastReloadsToReturn = Self.fewestFastReloadsToReturn
    }

    /// Whether the next reload runs inline (on the watcher's thread, when it can).
    package var reloadsInline: Bool { reloadPlace == .inline }

    /// A reload and its observers ran, taking `duration`: one over ``slowReloadLimit`` moves the suite
    /// to a worker; fast ones in a row bring it back (see ``ReloadPlace``).
    package mutating func reloadFinished(taking duration: Duration) {
        let isSlow = duration > slowReloadLimit
        switch reloadPlace {
        case .inline:
            guard isSlow else { return }
            reloadPlace = .worker(fastInARow: 0, needed: fastReloadsToReturn)
            fastReloadsToReturn = min(fastReloadsToReturn * 2, Self.mostFastReloadsToReturn)
        case .worker(let fastInARow, let needed):
            if isSlow {
                reloadPlace = .worker(fastInARow: 0, needed: needed)
            } else if fastInARow + 1 >= needed {
                reloadPlace = .inline
            } else {
                reloadPlace = .worker(fastInARow: fastInARow + 1, needed: needed)
            }
        }
    }
}
