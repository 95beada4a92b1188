#if KernelInotify || !LibInotifyTools
    import Foundation

    /// The inotify calls of the watcher, on the kernel's interface in glibc (`inotify_init1`,
    /// `inotify_add_watch`, `inotify_rm_watch`, `poll`, `read`): the `KernelInotify` trait's build,
    /// which links no GPL code (docs/design.md, "Live reload: the watcher's inotify interface").
    /// The same seven calls as `InotifyInterface+LibInotifyTools.swift`, with the same meaning, so
    /// one ``InotifyThread`` serves both builds.
    ///
    /// Only the inotify thread calls these, one at a time: that is what makes the state below safe.
    enum InotifyInterface {
        /// What the watcher runs on, for messages.
        static let name = "the kernel's inotify interface"
        /// The lowest descriptor number inotify cannot serve from: none (the wait is a `poll()`).
        static let descriptorLimit: Int32? = nil

        /// The state of the one inotify instance (the inotify thread's alone, as libinotifytools' globals are).
        private final class State: @unchecked Sendable {
            var descriptor: Int32 = -1
            var lastError: Int32 = 0
            /// The paths watched, and their watch descriptors (what `inotifytools_wd_from_filename` answers).
            var watches: [String: Int32] = [:]
            /// ``watches`` the other way round, so that dropping a watch costs its own paths only.
            var pathsByWatch: [Int32: [String]] = [:]

            func forget(_ watch: Int32) {
                for path in pathsByWatch.removeValue(forKey: watch) ?? [] where watches[path] == watch {
                    watches[path] = nil
                }
            }
            /// Events read and not handed out yet: `buffer[offset..<filled]`.
            let buffer = UnsafeMutableRawPointer.allocate(
                byteCount: State.bufferSize, alignment: MemoryLayout<inotify_event>.alignment)
            var offset = 0
            var filled = 0
            /// Room for many events per `read` (each at most the header and `NAME_MAX` + 1 bytes).
            static let bufferSize = 64 * 1024
        }

        // Only the inotify thread touches it (see the type's comment).
        private static let state = State()

        /// Makes the inotify instance (close-on-exec).
        ///
        /// - Returns: Its descriptor, else why inotify cannot serve.
        static func initialize() -> Result<Int32?, InotifySetUpFailure> {
            let descriptor = inotify_init1(Int32(IN_CLOEXEC))
            guard descriptor >= 0 else { return .failure(InotifySetUpFailure(initialising: errno)) }
            state.descriptor = descriptor
            return .success(descriptor)
        }

        /// The `errno` of the last call that failed (0 after a wait that timed out).
        static func error() -> Int32 { state.lastError }

        /// Closes the instance (the kernel drops its watches).
        static func cleanup() {
            if state.descriptor >= 0 { close(state.descriptor) }
            state.descriptor = -1
            state.watches = [:]
            state.pathsByWatch = [:]
            state.offset = 0
            state.filled = 0
        }

        /// Watches `path` for `events`. Returns whether it worked (``error()`` says why not).
        static func watch(_ path: String, events: UInt32) -> Bool {
            let watch = inotify_add_watch(state.descriptor, path, events)
            guard watch >= 0 else {
                state.lastError = errno
                return false
            }
            state.lastError = 0
            if let old = state.watches.updateValue(watch, forKey: path), old != watch {
                state.pathsByWatch[old]?.removeAll { $0 == path }
            }
            state.pathsByWatch[watch, default: []].append(path)
            return true
        }

        /// The watch descriptor registered for `path` (≤ 0 when there is none).
        static func watchDescriptor(of path: String) -> Int32 { state.watches[path] ?? -1 }

        /// Waits up to `timeoutSeconds` (whole seconds; 0: forever) for the next event. nil on a
        /// timeout or a failure (``error()`` tells them apart). Valid until the next call.
        static func nextEvent(timeoutSeconds: Int) -> UnsafeMutablePointer<inotify_event>? {
            if state.offset >= state.filled {
                guard fill(timeoutSeconds: timeoutSeconds) else { return nil }
            }
            let event = (state.buffer + state.offset).assumingMemoryBound(to: inotify_event.self)
            state.offset += MemoryLayout<inotify_event>.size + Int(event.pointee.len)
            if event.pointee.mask & UInt32(IN_IGNORED) != 0 {
                // The kernel dropped the watch: its paths name nothing any more.
                state.forget(event.pointee.wd)
            }
            return event
        }

        /// Waits for events and reads them into the buffer. Returns whether there are some.
        private static func fill(timeoutSeconds: Int) -> Bool {
            state.offset = 0
            state.filled = 0
            var waited = pollfd(fd: state.descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&waited, 1, timeoutSeconds == 0 ? -1 : Int32(timeoutSeconds * 1000))
            guard ready > 0 else {
                state.lastError = ready == 0 ? 0 : errno
                return false
            }
            let count = read(state.descriptor, state.buffer, State.bufferSize)
            guard count > 0 else {
                state.lastError = count == 0 ? EIO : errno
                return false
            }
            state.lastError = 0
            state.filled = count
            return true
        }

        /// Stops the watch `watch`. Returns whether it worked.
        static func removeWatch(_ watch: Int32) -> Bool {
            guard inotify_rm_watch(state.descriptor, watch) == 0 else {
                state.lastError = errno
                return false
            }
            state.forget(watch)
            return true
        }
    }
#endif
