import Dispatch
import Foundation
import LiveDefaultsLocking

/// The one thread that calls into inotify (``InotifyInterface``: libinotifytools, or the kernel's
/// interface in the `KernelInotify` build), for the whole process.
///
/// libinotifytools keeps its state in globals and is not thread-safe, so every call into it is
/// made here (the kernel build keeps the same rule). Other threads change the registry under its lock and wake this thread through an
/// ``InotifyWakeChannel``; it then reconciles the watched directories with the wanted ones, and
/// serves the barriers the registry asks for (``WatchRegistry/barriersRequested``) through a
/// second channel that only this thread writes to.
///
/// Directories are watched, never files (a file's own watch dies when an editor renames over
/// it). The thread keeps its own map from watch descriptor to directory, because the library's
/// map keeps stale entries after `IN_IGNORED`; a library key that may be stale is never used
/// again (the directory is re-armed under an equivalent spelling, `dir/./`).
///
/// Work that calls leave to run after them (``FileWatcher/runAfterCall(_:)``) runs here between
/// events; should it hold the thread past ``InotifyReader/takeOverAfter``, a new thread takes
/// over reading with this object's state, and the held one ends when its work returns
/// (``InotifyReader``). Unchecked `Sendable`: one thread at a time touches the state, and the
/// hand-over goes through the reader's lock.
final class InotifyThread: @unchecked Sendable {
    /// The events asked for on every watched directory (`IN_ATTRIB`: a `chmod` or `chown` can
    /// make a managed file trusted or not, docs/design.md, "Forced keys").
    static let directoryEvents =
        UInt32(IN_CLOSE_WRITE) | UInt32(IN_MOVED_TO) | UInt32(IN_MOVED_FROM) | UInt32(IN_CREATE) | UInt32(IN_DELETE)
        | UInt32(IN_ATTRIB) | UInt32(IN_DELETE_SELF) | UInt32(IN_MOVE_SELF) | UInt32(IN_ONLYDIR)
    /// The longest single wait for an event, in seconds. libinotifytools counts whole seconds and
    /// takes 0 to mean forever; waking early is the wake channel's job.
    ///
    /// Test knob, not API: `LIVEDEFAULTS_WATCHER_IDLE_WAIT=<seconds>` stretches it (see
    /// ``testKnobSeconds(_:)``), so that a test in a process of its own can tell a thread woken at
    /// once from one that slept out its wait by tens of seconds rather than by one.
    static let eventTimeoutSeconds = testKnobSeconds("LIVEDEFAULTS_WATCHER_IDLE_WAIT") ?? 1
    /// How often armed directories are checked to still be the directory at their path (an
    /// ancestor may have been renamed, which gives no event on the directory itself).
    ///
    /// Test knob, not API: `LIVEDEFAULTS_WATCHER_VERIFICATION_INTERVAL=<seconds>` stretches it, so
    /// that a test can tell a change seen through its own event from one found by this check.
    static let verificationInterval: Duration = .seconds(
        testKnobSeconds("LIVEDEFAULTS_WATCHER_VERIFICATION_INTERVAL") ?? 1)
    /// The longest value a test knob takes, in seconds.
    static let longestTestKnob = 3600

    /// A whole number of seconds from 1 to ``longestTestKnob`` in the environment variable `name`,
    /// else `nil` (the variable is ignored).
    ///
    /// Test knobs, not public API, and not for production: they stretch the watcher's fallbacks,
    /// which makes it slower to notice what only a fallback notices. They are read once, when the
    /// inotify thread starts (the first use of the constant), so only a process of the test's own
    /// (the TestHelper executable) sets them.
    static func testKnobSeconds(_ name: String) -> Int? {
        guard let text = ProcessInfo.processInfo.environment[name], let seconds = Int(text),
            (1...longestTestKnob).contains(seconds)
        else { return nil }
        return seconds
    }
    /// How long a directory nobody wants any more stays watched. A watch cancelled and made again
    /// soon reuses it, and a directory deleted right after its last watch was cancelled loses its
    /// watch to the kernel first — removing it then would fail and make the library print.
    static let lingerInterval: Duration = .seconds(1)

    private struct ArmedDirectory {
        var watch: Int32
        var libraryKey: String
        var device: UInt64
        var inode: UInt64
    }

    private let core: FileWatcherCore
    private let wakeChannel: InotifyWakeChannel
    private let wakeWatch: Int32
    /// The channel this thread writes to for a barrier, and its watch (nil: no barriers).
    private let barrier: (channel: InotifyWakeChannel, watch: Int32)?
    /// The barrier whose event is on its way: every barrier up to this number passes when it is read.
    private var barrierInFlight: UInt64?
    /// The highest barrier a write was made for.
    private var barrierWritten: UInt64 = 0
    /// The library's descriptor, when it could be told apart in `/proc/self/fd`.
    private let inotifyDescriptor: Int32?
    private var armed: [String: ArmedDirectory] = [:]
    private var directoriesByWatch: [Int32: [String]] = [:]
    /// Every library key registered for a watch descriptor, first (the library's own entry) first.
    private var libraryKeysByWatch: [Int32: [String]] = [:]
    private var staleLibraryKeys: Set<String> = []
    private var reconciledVersion: UInt64?
    /// Armed directories nobody wants any more, and since when.
    private var unwantedSince: [String: UInt64] = [:]
    private var lastVerification: UInt64 = 0

    private init(core: FileWatcherCore, setUp: SetUp) {
        self.core = core
        self.wakeChannel = setUp.wakeChannel
        self.wakeWatch = setUp.wakeWatch
        self.barrier = setUp.barrier
        self.inotifyDescriptor = setUp.inotifyDescriptor
    }

    // MARK: Starting

    /// Hands the outcome of the set-up from the new thread to the one that started it.
    private final class StartHandoff: Sendable {
        private let outcome = Locked<String?>(nil)
        private let done = DispatchSemaphore(value: 0)

        func finish(failure: String?) {
            outcome.withLock { $0 = failure }
            done.signal()
        }

        func wait() -> String? {
            done.wait()
            return outcome.withLock { $0 }
        }
    }

    /// Starts the thread for `core` and waits until inotify is set up.
    ///
    /// - Returns: `nil` when the thread serves `core`, else why inotify cannot serve.
    static func start(core: FileWatcherCore) -> String? {
        let handoff = StartHandoff()
        let thread = Thread {
            switch setUp() {
            case .failure(let failure):
                handoff.finish(failure: failure.reason)
            case .success(let setUp):
                core.inotifyWakeChannel.withLock { $0 = setUp.wakeChannel }
                core.registry.withLock { $0.servesBarriers = setUp.barrier != nil }
                handoff.finish(failure: nil)
                InotifyThread(core: core, setUp: setUp).start()
            }
        }
        thread.name = "LiveDefaults.FileWatcher.inotify"
        thread.start()
        return handoff.wait()
    }

    private struct SetUp {
        var wakeChannel: InotifyWakeChannel
        var wakeWatch: Int32
        var barrier: (channel: InotifyWakeChannel, watch: Int32)?
        var inotifyDescriptor: Int32?
    }

    /// Initialises inotify (``InotifyInterface/initialize()``) and a wake channel.
    private static func setUp() -> Result<SetUp, InotifySetUpFailure> {
        let inotifyDescriptor: Int32?
        switch InotifyInterface.initialize() {
        case .failure(let failure): return .failure(failure)
        case .success(let descriptor): inotifyDescriptor = descriptor
        }
        guard let (wakeChannel, wakeWatch) = workingChannel() else {
            InotifyInterface.cleanup()
            return .failure(InotifySetUpFailure(reason: "no wake-up channel works (is /proc mounted?)"))
        }
        // Without a barrier channel, absences are judged by looks alone.
        let barrier = workingChannel().map { (channel: $0.0, watch: $0.1) }
        let setUp = SetUp(
            wakeChannel: wakeChannel, wakeWatch: wakeWatch, barrier: barrier, inotifyDescriptor: inotifyDescriptor)
        return .success(setUp)
    }

    /// A wake channel that passed its self-test, and its watch.
    private static func workingChannel() -> (InotifyWakeChannel, Int32)? {
        for makeChannel in [InotifyWakeChannel.pipe, InotifyWakeChannel.temporaryFile] {
            guard let channel = makeChannel() else { continue }
            if let watch = selfTest(channel) { return (channel, watch) }
            channel.closeUnshared()
        }
        return nil
    }

    /// Watches `channel` and checks that waking it gives an event.
    ///
    /// - Returns: The watch descriptor, or `nil` when the channel does not work here.
    private static func selfTest(_ channel: InotifyWakeChannel) -> Int32? {
        guard InotifyInterface.watch(channel.watchPath, events: UInt32(IN_MODIFY)) else { return nil }
        let watch = InotifyInterface.watchDescriptor(of: channel.watchPath)
        channel.wake()
        let event = InotifyInterface.nextEvent(timeoutSeconds: eventTimeoutSeconds)
        channel.drain()
        if let event, event.pointee.wd == watch { return watch }
        _ = InotifyInterface.removeWatch(watch)
        return nil
    }

    private static func describe(_ error: Int32) -> String {
        String(cString: strerror(error))
    }

    // MARK: Running

    /// Becomes the process's reader, then reads.
    private func start() {
        let generation = InotifyReader.shared.start { [self] generation in
            let thread = Thread { [self] in
                InotifyReader.shared.claim(generation)
                run(generation: generation)
            }
            thread.name = "LiveDefaults.FileWatcher.inotify"
            thread.start()
        }
        run(generation: generation)
    }

    /// Reads events until inotify fails, or until another thread takes over reading (the work
    /// run after a call held this one, ``InotifyReader``): then it returns at once.
    private func run(generation: UInt64) {
        let reader = InotifyReader.shared
        while true {
            let (version, barriers) = core.registry.withLock { ($0.directoriesVersion, $0.barriersRequested) }
            if version != reconciledVersion { reconcile() }
            if barriers > barrierWritten, barrierInFlight == nil { writeBarrier(barriers) }
            if FileWatcherCore.now() &- lastVerification >= Self.verificationInterval.wholeNanoseconds {
                verifyArmedDirectories()
                disarmUnwanted()
            }
            // The work the calls of the last event (or of the steps above) left, before waiting.
            guard reader.runQueued(generation: generation) else { return }
            guard let event = InotifyInterface.nextEvent(timeoutSeconds: Self.eventTimeoutSeconds) else {
                let error = InotifyInterface.error()
                if error != 0, error != EINTR {
                    stop(reason: "reading inotify events failed: \(Self.describe(error))")
                    // Nothing queues here any more; what was queued runs now.
                    reader.resign(generation)
                    _ = reader.runQueued(generation: generation)
                    return
                }
                continue
            }
            handle(event)
        }
    }

    /// Writes barrier `number`: its event is queued behind every event queued before this call,
    /// and so behind every event of the looks that asked for barriers up to `number` (they asked,
    /// under the registry's lock, before this thread read the number).
    private func writeBarrier(_ number: UInt64) {
        guard let barrier else { return }
        barrierWritten = number
        barrierInFlight = number
        barrier.channel.wake()
    }

    /// The barrier's event is read, so every event before it was: the directories those events
    /// made wanted are tried first, then the barrier passes.
    private func passBarrier() {
        barrier?.channel.drain()
        guard let number = barrierInFlight else { return }
        barrierInFlight = nil
        if core.registry.withLock({ $0.directoriesVersion }) != reconciledVersion { reconcile() }
        core.deliver([.barrierPassed(number)])
    }

    /// Arms the directories that are wanted and pending; marks those no longer wanted for
    /// disarming after ``lingerInterval``.
    private func reconcile() {
        let (version, wanted) = core.registry.withLock { ($0.directoriesVersion, $0.directoryStatus) }
        reconciledVersion = version
        let now = FileWatcherCore.now()
        for directory in armed.keys where wanted[directory] == nil && unwantedSince[directory] == nil {
            unwantedSince[directory] = now
        }
        var events: [WatchRegistry.Event] = []
        for (directory, status) in wanted where status == .pending {
            unwantedSince[directory] = nil
            events.append(armed[directory] == nil ? arm(directory) : .directoryArmed(directory))
        }
        if !events.isEmpty { core.deliver(events) }
    }

    /// Disarms the directories that have been unwanted for ``lingerInterval``.
    private func disarmUnwanted() {
        let now = FileWatcherCore.now()
        let linger = Self.lingerInterval.wholeNanoseconds
        let due = unwantedSince.filter { now &- $0.value >= linger }.map(\.key)
        guard !due.isEmpty else { return }
        // One look at the kernel's watches for the whole batch: reading them per directory made
        // disarming n directories cost n² (thousands of stores closed at once took minutes).
        let live = inotifyDescriptor.flatMap(InotifyDescriptorCheck.liveWatches(on:))
        for directory in due {
            unwantedSince[directory] = nil
            disarm(directory, liveWatches: live)
        }
    }

    private func arm(_ directory: String) -> WatchRegistry.Event {
        var key = directory.hasSuffix("/") ? directory : directory + "/"
        while staleLibraryKeys.contains(key) { key += "./" }
        guard InotifyInterface.watch(key, events: Self.directoryEvents) else {
            let error = InotifyInterface.error()
            switch error {
            case ENOENT, ENOTDIR:
                return .directoryMissing(directory, awaitedAt: Self.awaitedEntry(of: directory))
            case ENOSPC:
                return .directoryFailed(
                    directory, reason: "the inotify watch limit is reached (sysctl fs.inotify.max_user_watches)")
            default:
                return .directoryFailed(directory, reason: "inotify cannot watch it: \(Self.describe(error))")
            }
        }
        let watch = InotifyInterface.watchDescriptor(of: key)
        guard watch > 0 else {
            return .directoryFailed(directory, reason: "\(InotifyInterface.name) lost the new watch")
        }
        var info = stat()
        let found = stat(directory, &info) == 0
        armed[directory] = ArmedDirectory(
            watch: watch, libraryKey: key, device: found ? UInt64(info.st_dev) : 0,
            inode: found ? UInt64(info.st_ino) : 0
        )
        directoriesByWatch[watch, default: []].append(directory)
        libraryKeysByWatch[watch, default: []].append(key)
        return .directoryArmed(directory)
    }

    /// Where a missing `directory` may appear from: the name, in its nearest existing ancestor, of
    /// the first component that is missing. nil when no ancestor is a directory.
    static func awaitedEntry(of directory: String) -> WatchedEntry? {
        var missing = directory
        while missing != "/" {
            let entry = WatchedPath.entry(for: missing)
            if FileStamp.isDirectory(entry.directory) { return entry }
            missing = entry.directory
        }
        return nil
    }

    /// Stops watching `directory`.
    ///
    /// - Parameters:
    ///   - directory: The directory.
    ///   - liveWatches: The watches the kernel holds, when just read; nil reads them.
    private func disarm(_ directory: String, liveWatches: Set<Int32>? = nil) {
        unwantedSince[directory] = nil
        guard let removed = armed.removeValue(forKey: directory) else { return }
        directoriesByWatch[removed.watch]?.removeAll { $0 == directory }
        guard directoriesByWatch[removed.watch]?.isEmpty ?? true else {
            // Another spelling of the same directory still uses the watch; the library keeps this key.
            staleLibraryKeys.insert(removed.libraryKey)
            return
        }
        directoriesByWatch[removed.watch] = nil
        let keys = libraryKeysByWatch.removeValue(forKey: removed.watch) ?? []
        // A directory deleted a moment ago has lost its watch already (its IN_IGNORED is still
        // queued); removing it again would fail and make the library print to standard error.
        let live = liveWatches ?? inotifyDescriptor.flatMap(InotifyDescriptorCheck.liveWatches(on:))
        let isLive = live?.contains(removed.watch) ?? true
        if isLive, InotifyInterface.removeWatch(removed.watch) {
            staleLibraryKeys.formUnion(keys.dropFirst())
        } else {
            staleLibraryKeys.formUnion(keys)
        }
    }

    /// The kernel dropped a watch (`IN_IGNORED`): forget it, keys included.
    private func forget(_ watch: Int32) -> [String] {
        let directories = directoriesByWatch.removeValue(forKey: watch) ?? []
        staleLibraryKeys.formUnion(libraryKeysByWatch.removeValue(forKey: watch) ?? [])
        for directory in directories {
            armed[directory] = nil
            unwantedSince[directory] = nil
        }
        return directories
    }

    /// Reports `directories` lost and re-arms the wanted ones that exist again at their path.
    private func lose(_ directories: [String]) {
        let wanted = core.registry.withLock { registry in directories.filter { registry.directoryUsers[$0] != nil } }
        guard !wanted.isEmpty else { return }
        var events: [WatchRegistry.Event] = wanted.map { .directoryLost($0) }
        // Armed again when it is there, else awaited through an ancestor.
        for directory in wanted { events.append(arm(directory)) }
        core.deliver(events)
    }

    private func verifyArmedDirectories() {
        lastVerification = FileWatcherCore.now()
        var lost: [String] = []
        for (directory, armedDirectory) in armed {
            var info = stat()
            let same =
                stat(directory, &info) == 0 && UInt64(info.st_dev) == armedDirectory.device
                && UInt64(info.st_ino) == armedDirectory.inode
            if !same { lost.append(directory) }
        }
        guard !lost.isEmpty else { return }
        for directory in lost { disarm(directory) }
        lose(lost)
    }

    private func handle(_ event: UnsafeMutablePointer<inotify_event>) {
        let watch = event.pointee.wd
        let mask = event.pointee.mask
        if mask & UInt32(IN_Q_OVERFLOW) != 0 {
            core.deliver([.overflow])
            // The barrier's event may be among the lost ones: write it again. (Should both come,
            // the second finds no barrier on its way, or passes a later one early; the overflow
            // made every absence start again, so nothing older than it can be confirmed.)
            if let number = barrierInFlight { writeBarrier(number) }
            return
        }
        if watch == wakeWatch {
            wakeChannel.drain()
            return
        }
        if let barrier, watch == barrier.watch {
            passBarrier()
            return
        }
        guard let directories = directoriesByWatch[watch] else { return }
        if mask & UInt32(IN_IGNORED) != 0 {
            lose(forget(watch))
            return
        }
        if mask & UInt32(IN_MOVE_SELF) != 0 {
            // The watch follows the directory to its new place; the path needs a new watch.
            for directory in directories { disarm(directory) }
            lose(directories)
            return
        }
        guard event.pointee.len > 0 else {
            if mask & UInt32(IN_ATTRIB) != 0 { core.deliver(directories.map { .directoryAttributesChanged($0) }) }
            return
        }
        let namePointer = UnsafeRawPointer(event).advanced(by: MemoryLayout<inotify_event>.size)
        let name = String(cString: namePointer.assumingMemoryBound(to: CChar.self))
        let change: WatchRegistry.EntryChange
        if mask & (UInt32(IN_CLOSE_WRITE) | UInt32(IN_MOVED_TO)) != 0 {
            change = .written
        } else if mask & (UInt32(IN_DELETE) | UInt32(IN_MOVED_FROM)) != 0 {
            change = .removed
        } else if mask & UInt32(IN_CREATE) != 0 {
            change = .appeared
        } else if mask & UInt32(IN_ATTRIB) != 0 {
            change = .attributesChanged
        } else {
            return
        }
        core.deliver(directories.map { .entry(WatchedEntry(directory: $0, name: name), change) })
    }

    /// inotify cannot serve any more: hand everything to polling and release the library.
    private func stop(reason: String) {
        core.inotifyWakeChannel.withLock { $0 = nil }
        core.deliver([.inotifyStopped(reason: reason)])
        InotifyInterface.cleanup()
    }
}
