import Foundation
import LiveDefaultsWatching

/// Where a change came from.
public enum ChangeOrigin: Sendable, Hashable {
    /// This process changed the value (a set, a removal, a registration, a domain change).
    case local
    /// Another process, a tool or an editor changed the suite file and it was reloaded.
    case external
}

/// Hears which keys of a suite store changed, in the order the changes were applied.
package protocol SuiteStoreListener: AnyObject, Sendable {
    /// Called under the ``ChangeLock``, right after the store's values changed (its own state lock
    /// is released): update what depends on them and queue observers' changes, calling no user code.
    ///
    /// - Parameter keys: The keys whose stored value changed.
    /// - Returns: What to run once the change lock is released (delivering to observers), or nil.
    func suiteStore(_ store: SuiteStore, didChange keys: ChangedKeys, origin: ChangeOrigin) -> (() -> Void)?
}

/// The keys a change touched: one key for a write (the common case, without building a set),
/// a set for a reload or a replaced domain.
package enum ChangedKeys: Sendable {
    case one(String)
    case many(Set<String>)

    /// Calls `body` with each key.
    @inline(__always)
    func forEach(_ body: (String) -> Void) {
        switch self {
        case .one(let key): body(key)
        case .many(let keys): for key in keys { body(key) }
        }
    }
}

/// One suite file's values in this process: the cache, this process's changes not yet written,
/// and the flush and reload that keep it and the file in step (contracts 3–5).
///
/// There is one store per file per process (``SuiteStore/open(_:watching:)``); every ``Defaults``
/// that searches the suite shares it.
package final class SuiteStore: Sendable {
    package let location: SuiteLocation
    package let file: SuiteFile
    private let state: Locked<State>
    /// Serialises flushes and reloads of this store (never held while calling listeners). It
    /// counts them: the thread sanitizer mistakes accesses to an empty (`Void`) guarded value in
    /// two different objects for a race, so the lock guards a real one.
    private let inputOutput = Locked<Int>(0)

    private struct State {
        /// What reads see: the file's values with this process's pending changes applied.
        var values: [String: PropertyListValue] = [:]
        /// The file's values as last read or written.
        var diskValues: [String: PropertyListValue] = [:]
        /// This process's changes not yet written: nil is a removal. The number orders them.
        var pending: [String: (value: PropertyListValue?, generation: UInt64)] = [:]
        /// Set when the whole domain was replaced or removed: the next flush writes `values` whole.
        var replacesWholeFile = false
        var generation: UInt64 = 0
        /// The bytes last read from or written to the file: a reload of the same bytes is no change
        /// (this is how the store's own writes are not echoed).
        var diskBytes: Data?
        var diskIdentity: FileIdentity?
        var format: PropertyListFormat = .binary
        /// The file on disk did not parse: it is kept aside before anything replaces it.
        var diskIsCorrupt = false
        var lastError: DefaultsError?
        var flushScheduled = false
        var retryDelay: Double = 0
        var cleanedTemporaryFiles = false
        var listeners: [WeakListener] = []
        var watch: FileWatch?
        var reloadScheduled = false
    }

    private struct WeakListener {
        weak var listener: (any SuiteStoreListener)?
    }

    /// How long a change waits before the background flush writes it, so bursts coalesce.
    package static let flushDelay: DispatchTimeInterval = .milliseconds(20)

    private init(location: SuiteLocation) {
        self.location = location
        self.file = SuiteFile(location: location)
        self.state = Locked(State())
    }

    deinit {
        // The last user is gone: write what it changed rather than lose it.
        // No one listens any more, and this may run under the change lock (the last reference
        // to a `Defaults` dropped there): the flush does not take it.
        if hasPendingChanges {
            do { try flush(tellingListeners: false) } catch { DefaultsErrorReporting.report(error) }
        }
        Self.forget(location.path)
    }

    // MARK: Reading

    /// The stored value of `key`, nil when the suite has none.
    package func value(forKey key: String) -> PropertyListValue? {
        state.withLock { $0.values[key] }
    }

    /// Every stored value.
    package func values() -> [String: PropertyListValue] {
        state.withLock { $0.values }
    }

    /// The last problem with this suite's file (a corrupt file, a failed write), nil when none.
    package var lastError: DefaultsError? { state.withLock { $0.lastError } }

    /// The format the file is written in.
    package var format: PropertyListFormat { state.withLock { $0.format } }

    // MARK: Writing

    /// Sets (or, with nil, removes) `key`: memory at once, the file at the next flush.
    ///
    /// - Parameter beforeApplying: Run under the change lock just before the value changes (a
    ///   `Defaults` queues its prior calls there, so they come right before their change).
    package func set(_ value: PropertyListValue?, forKey key: String, beforeApplying: (() -> Void)? = nil) {
        let followUps = ChangeLock.withLock { () -> FollowUps in
            beforeApplying?()
            var listeners: [WeakListener] = []
            let changed = state.withLock { state -> Bool in
                state.generation += 1
                state.pending[key] = (value, state.generation)
                // One lookup, not a comparison and then a store (a SipHash each).
                let old: PropertyListValue?
                if let value {
                    old = state.values.updateValue(value, forKey: key)
                } else {
                    old = state.values.removeValue(forKey: key)
                }
                scheduleFlush(&state)
                guard old != value else { return false }
                listeners = state.listeners
                return true
            }
            return changed ? tell(listeners, .one(key), origin: .local) : FollowUps()
        }
        followUps.run()
    }

    /// Replaces every value of the suite (nil or empty removes them all).
    ///
    /// - Parameter beforeApplying: As for ``set(_:forKey:beforeApplying:)``.
    package func replaceAll(with values: [String: PropertyListValue], beforeApplying: (() -> Void)? = nil) {
        let followUps = ChangeLock.withLock { () -> FollowUps in
            beforeApplying?()
            let (changedKeys, listeners) = state.withLock { state in
                let changed = Self.differingKeys(state.values, values)
                state.values = values
                state.pending = [:]
                state.replacesWholeFile = true
                state.generation += 1
                scheduleFlush(&state)
                return (changed, state.listeners)
            }
            return changedKeys.isEmpty ? FollowUps() : tell(listeners, .many(changedKeys), origin: .local)
        }
        followUps.run()
    }

    // MARK: Listeners

    package func addListener(_ listener: any SuiteStoreListener) {
        state.withLock { state in
            state.listeners.removeAll { $0.listener == nil }
            state.listeners.append(WeakListener(listener: listener))
        }
    }

    package func removeListener(_ listener: any SuiteStoreListener) {
        state.withLock { state in
            state.listeners.removeAll { $0.listener == nil || $0.listener === listener }
        }
    }

    /// Tells `listeners` that `keys` changed. Called under the change lock, in the same step as the
    /// change itself, so every listener sees every change in the order it was applied.
    private func tell(_ listeners: [WeakListener], _ keys: ChangedKeys, origin: ChangeOrigin) -> FollowUps {
        var followUps = FollowUps()
        for entry in listeners {
            followUps.append(entry.listener?.suiteStore(self, didChange: keys, origin: origin))
        }
        return followUps
    }

    /// Changes the store's values with `body` and tells the listeners which keys changed, as one
    /// step under the change lock.
    ///
    /// - Returns: The listeners' follow-ups, for the caller to run once it holds no lock.
    private func applyChange(origin: ChangeOrigin, _ body: (inout State) -> Set<String>) -> FollowUps {
        ChangeLock.withLock {
            let (keys, listeners) = state.withLock { state in (body(&state), state.listeners) }
            return keys.isEmpty ? FollowUps() : tell(listeners, .many(keys), origin: origin)
        }
    }

    static func differingKeys(_ old: [String: PropertyListValue], _ new: [String: PropertyListValue]) -> Set<String> {
        var keys = Set<String>()
        for (key, value) in old where new[key] != value { keys.insert(key) }
        for key in new.keys where old[key] == nil { keys.insert(key) }
        return keys
    }
}

// MARK: - Loading, flushing and reloading

extension SuiteStore {
    /// Reads the file for the first time. A bad file leaves the store empty and usable, with the
    /// error in ``lastError`` and reported.
    ///
    /// - Returns: The problems to report, which the caller reports once it holds no lock (a
    ///   handler may open a suite itself).
    fileprivate func load() -> [DefaultsError] {
        let error: DefaultsError? = inputOutput.withLock { operations -> DefaultsError? in
            operations += 1
            do throws(DefaultsError) {
                let contents = try file.read()
                let parsed = try contents.map { contents throws(DefaultsError) in try parse(contents.data) }
                state.withLock { state in
                    state.diskBytes = contents?.data
                    state.diskIdentity = contents?.identity
                    if let parsed {
                        state.diskValues = parsed.values
                        state.values = parsed.values
                        state.format = parsed.format
                    }
                }
                return nil
            } catch {
                state.withLock { state in
                    state.diskIsCorrupt = error.code == .corruptFile
                    state.lastError = error
                }
                return error
            }
        }
        return [error, directoryWarning()].compactMap { $0 }
    }

    /// Directories already warned about (``DefaultsError/Code/insecureDirectory``): once each per process.
    private static let insecureDirectoriesReported = Locked<Set<String>>([])

    /// The warning to give when others could replace the suite file (the store is still used),
    /// once per directory.
    private func directoryWarning() -> DefaultsError? {
        guard let warning = file.directoryInsecurity(), let directory = warning.path else { return nil }
        let isNew = Self.insecureDirectoriesReported.withLock { $0.insert(directory).inserted }
        return isNew ? warning : nil
    }

    /// Parses suite bytes: the values and the format to write them back in.
    private func parse(_ data: Data) throws(DefaultsError) -> (
        values: [String: PropertyListValue], format: PropertyListFormat
    ) {
        if data.isEmpty {
            throw corruptFileError("is empty (0 bytes), so it is not a property list", cause: nil)
        }
        let decoded: (value: PropertyListValue, format: PropertyListFormat)
        do {
            decoded = try PropertyListCodec.decode(data)
        } catch {
            throw corruptFileError("does not parse as a property list", cause: error)
        }
        guard case .dictionary(let values) = decoded.value else {
            throw corruptFileError("holds a \(decoded.value.typeName) at its root, not a dictionary", cause: nil)
        }
        // Written back as XML when it was XML, else binary (old-style text is read, not written).
        return (values, decoded.format == .xml ? .xml : .binary)
    }

    private func corruptFileError(_ problem: String, cause: (any Error)?) -> DefaultsError {
        DefaultsError(
            .corruptFile,
            "The suite file \(location.path) for suite \"\(location.name)\" \(problem). Its values were not loaded; "
                + "it will be kept aside as \(location.path).corrupt-<time> before it is replaced. "
                + "Fix or remove the file to use its values again.",
            suite: location.name, path: location.path, underlying: cause.map { SendableDescription($0) })
    }

    /// Writes this process's pending changes now: lock ▸ re-read if changed ▸ merge ▸ atomic replace.
    ///
    /// - Throws: ``DefaultsError`` when the file cannot be locked or written. The values stay in
    ///   memory and pending, and a later flush writes them.
    package func flush() throws(DefaultsError) {
        try flush(tellingListeners: true)
    }

    private func flush(tellingListeners: Bool) throws(DefaultsError) {
        var followUps = FollowUps()
        defer { followUps.run() }
        try inputOutput.withLock { operations throws(DefaultsError) in
            operations += 1
            let snapshot = state.withLock { state in
                (
                    pending: state.pending, whole: state.replacesWholeFile, values: state.values,
                    clean: state.cleanedTemporaryFiles
                )
            }
            if snapshot.pending.isEmpty && !snapshot.whole { return }
            if !snapshot.clean {
                file.removeOrphanedTemporaryFiles()
                state.withLock { $0.cleanedTemporaryFiles = true }
            }
            do throws(DefaultsError) {
                try file.withLock { () throws(DefaultsError) in
                    followUps = try flushLocked(
                        snapshot.pending, wholeFile: snapshot.whole ? snapshot.values : nil,
                        tellingListeners: tellingListeners)
                }
                state.withLock { state in
                    state.retryDelay = 0
                    if state.lastError?.code == .writeFailed || state.lastError?.code == .lockFailed {
                        state.lastError = nil
                    }
                }
            } catch {
                state.withLock { $0.lastError = error }
                throw error
            }
        }
    }

    /// The part of a flush done under the file lock.
    ///
    /// - Returns: What the listeners ask to run for the values other processes changed, once no
    ///   lock is held.
    private func flushLocked(
        _ pending: [String: (value: PropertyListValue?, generation: UInt64)], wholeFile: [String: PropertyListValue]?,
        tellingListeners: Bool
    ) throws(DefaultsError) -> FollowUps {
        // The values on disk are taken out of the state while the flush runs (every use of them is
        // under `inputOutput`, as this is), so that the pending changes are merged into them in
        // place: left in the state, the merge would copy the whole dictionary on every flush. A
        // failed flush puts them back as they were.
        var merged: [String: PropertyListValue] = [:]
        let known = state.withLock { state in
            swap(&merged, &state.diskValues)
            return (identity: state.diskIdentity, corrupt: state.diskIsCorrupt, format: state.format)
        }
        var format = known.format
        let rereads = FileIdentity.of(path: location.path) != known.identity || known.corrupt
        /// The taken values when they were replaced rather than changed in place, else the values
        /// the pending changes replaced: either way, enough to put them back.
        var original: [String: PropertyListValue]? = nil
        var replacedValues: [(key: String, value: PropertyListValue?)] = []
        var data: Data?
        var identity: FileIdentity?
        do throws(DefaultsError) {
            if rereads || wholeFile != nil { original = merged }
            if rereads {
                // Someone else wrote since we last looked (or the file is bad): start from what is there now.
                let contents = try file.read()
                if let contents {
                    do throws(DefaultsError) {
                        let parsed = try parse(contents.data)
                        merged = parsed.values
                        format = parsed.format
                    } catch {
                        // Contract 4: never replace a bad file without keeping it.
                        if let kept = try file.keepAside() {
                            DefaultsErrorReporting.report(
                                DefaultsError(
                                    .corruptFile,
                                    "The suite file \(location.path) for suite \"\(location.name)\" did not parse; it was "
                                        + "kept as \(kept) and replaced by this process's values.",
                                    suite: location.name, path: location.path, underlying: error))
                        }
                    }
                } else {
                    merged = [:]
                }
            }
            if let wholeFile {
                merged = wholeFile
            } else {
                replacedValues.reserveCapacity(original == nil ? pending.count : 0)
                for (key, change) in pending {
                    let old =
                        if let value = change.value { merged.updateValue(value, forKey: key) } else {
                            merged.removeValue(forKey: key)
                        }
                    if original == nil { replacedValues.append((key, old)) }
                }
            }
            // Replacing the whole domain with nothing removes it, as `defaults delete <domain>` does.
            if wholeFile?.isEmpty == true {
                try file.remove()
            } else {
                do throws(DefaultsError) {
                    data = try PropertyListCodec.encode(.dictionary(merged), format: format)
                } catch {
                    throw DefaultsError(
                        .writeFailed, "Could not encode suite \"\(location.name)\": \(error.message)",
                        suite: location.name, path: location.path, underlying: error)
                }
                identity = try file.replace(with: data!)
            }
        } catch {
            if let original {
                merged = original
            } else {
                for (key, value) in replacedValues.reversed() { merged[key] = value }
            }
            state.withLock { swap(&merged, &$0.diskValues) }
            throw error
        }
        let update = { (state: inout State) -> Set<String> in
            state.diskBytes = data
            state.diskIdentity = identity
            state.diskValues = merged
            state.diskIsCorrupt = false
            if state.lastError?.code == .corruptFile { state.lastError = nil }
            state.format = format
            if wholeFile != nil { state.replacesWholeFile = false }
            for (key, change) in pending where state.pending[key]?.generation == change.generation {
                state.pending[key] = nil
            }
            // When the file was not re-read, what reads see is already the written values plus the
            // changes made since: nothing to compare (a thousand-key comparison on every flush).
            if !rereads && wholeFile == nil && !state.replacesWholeFile { return [] }
            // Values other processes wrote, plus this process's changes made during the write.
            var values = merged
            for (key, change) in state.pending { values[key] = change.value }
            if state.replacesWholeFile { values = state.values }
            let changed = Self.differingKeys(state.values, values)
            state.values = values
            return changed
        }
        guard tellingListeners else {
            _ = state.withLock(update)
            return FollowUps()
        }
        return applyChange(origin: .external, update)
    }

    /// Re-reads the file after an outside change and delivers the difference (origin `.external`).
    /// Keys this process changed and has not written keep their local value.
    package func reload() {
        var followUps = FollowUps()
        var problem: DefaultsError?
        inputOutput.withLock { operations in
            operations += 1
            let contents: SuiteFile.Contents?
            do throws(DefaultsError) {
                contents = try file.read()
            } catch {
                problem = error
                return
            }
            let (same, watch) = state.withLock {
                ($0.diskBytes == contents?.data && ($0.diskBytes != nil || contents == nil), $0.watch)
            }
            if same { return }
            // Gone for a moment only (its directory made again, an editor saving) is no deletion:
            // the watcher calls again when the file is back or has stayed away for the grace.
            if contents == nil, let watch, !watch.absenceCounts() { return }
            let parsed: [String: PropertyListValue]
            var format: PropertyListFormat?
            if let contents {
                do throws(DefaultsError) {
                    let result = try parse(contents.data)
                    parsed = result.values
                    format = result.format
                } catch {
                    // Keep the last good values; the file is kept aside only if this process must write
                    // before it is fixed (a person may still be editing it).
                    let isNew = state.withLock { state -> Bool in
                        let isNew = state.diskBytes != contents.data
                        state.diskBytes = contents.data
                        state.diskIdentity = contents.identity
                        state.diskIsCorrupt = true
                        state.lastError = error
                        return isNew
                    }
                    if isNew { problem = error }
                    return
                }
            } else {
                parsed = [:]
            }
            followUps = applyChange(origin: .external) { state in
                state.diskBytes = contents?.data
                state.diskIdentity = contents?.identity
                state.diskValues = parsed
                state.diskIsCorrupt = false
                if let format { state.format = format }
                if state.lastError?.code == .corruptFile { state.lastError = nil }
                var values = parsed
                for (key, change) in state.pending { values[key] = change.value }
                if state.replacesWholeFile { values = state.values }
                let changed = Self.differingKeys(state.values, values)
                state.values = values
                return changed
            }
        }
        if let problem { DefaultsErrorReporting.report(problem) }
        followUps.run()
    }

    /// Asks for a reload soon, off the calling thread; requests made before it starts coalesce.
    package func scheduleReload() {
        let shouldSchedule = state.withLock { state -> Bool in
            if state.reloadScheduled { return false }
            state.reloadScheduled = true
            return true
        }
        guard shouldSchedule else { return }
        DispatchQueue.global(qos: .utility).async { [weak self] in
            guard let self else { return }
            self.state.withLock { $0.reloadScheduled = false }
            self.reload()
        }
    }

    private func scheduleFlush(_ state: inout State) {
        guard !state.flushScheduled else { return }
        state.flushScheduled = true
        let delay: DispatchTimeInterval =
            state.retryDelay > 0 ? .milliseconds(Int(state.retryDelay * 1000)) : Self.flushDelay
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + delay) { [weak self] in
            self?.backgroundFlush()
        }
    }

    private func backgroundFlush() {
        state.withLock { $0.flushScheduled = false }
        do {
            try flush()
        } catch {
            // Keep the values and try again later, backing off; report once per distinct problem.
            let firstTime = state.withLock { state -> Bool in
                let firstTime = state.retryDelay == 0
                state.retryDelay = min(max(state.retryDelay * 2, 0.25), 30)
                scheduleFlush(&state)
                return firstTime
            }
            if firstTime { DefaultsErrorReporting.report(error) }
        }
    }

    /// Whether this process has changes not yet written.
    package var hasPendingChanges: Bool {
        state.withLock { !$0.pending.isEmpty || $0.replacesWholeFile }
    }
}

// MARK: - One store per file per process

extension SuiteStore {
    private struct WeakStore {
        weak var store: SuiteStore?
    }

    private static let registry = Locked<[String: WeakStore]>([:])

    /// The process's store for `location`, opened (and loaded) on first use.
    ///
    /// - Parameter watching: Whether the store follows outside changes to its file.
    package static func open(_ location: SuiteLocation, watching: Bool) -> SuiteStore {
        installExitFlush
        // Loaded inside the registry's lock, so no one sees a store before its values are in; its
        // problems are reported after, since a handler may open a suite (and take that lock).
        var problems: [DefaultsError] = []
        let store = registry.withLock { registry -> SuiteStore in
            if let existing = registry[location.path]?.store { return existing }
            let store = SuiteStore(location: location)
            problems = store.load()
            registry[location.path] = WeakStore(store: store)
            return store
        }
        for problem in problems { DefaultsErrorReporting.report(problem) }
        if watching { store.startWatching() }
        return store
    }

    /// Drops the registry's entry for `path` once its store is gone (a new store for the same
    /// file may have taken the entry meanwhile; that one stays).
    private static func forget(_ path: String) {
        let survivor = registry.withLock { registry -> SuiteStore? in
            let store = registry[path]?.store
            if store == nil { registry[path] = nil }
            // Released after the lock: were it the last reference, its deinit would take the lock.
            return store
        }
        _ = survivor
    }

    /// Whether the registry of open stores has an entry for `location` (for tests of leaks).
    package static func isRegistered(_ location: SuiteLocation) -> Bool {
        registry.withLock { $0[location.path] != nil }
    }

    private func startWatching() {
        let needsWatch = state.withLock { $0.watch == nil }
        guard needsWatch else { return }
        let watch = FileWatcher.shared.watch(path: location.path) { [weak self] in
            self?.scheduleReload()
        }
        state.withLock { state in
            if state.watch == nil { state.watch = watch } else { watch.cancel() }
        }
    }

    /// Flushes every open store: run at normal process exit.
    package static func flushAll() {
        let stores = registry.withLock { $0.values.compactMap(\.store) }
        for store in stores where store.hasPendingChanges {
            do { try store.flush() } catch { DefaultsErrorReporting.report(error) }
        }
    }

    private static let installExitFlush: Void = {
        atexit { SuiteStore.flushAll() }
    }()
}
