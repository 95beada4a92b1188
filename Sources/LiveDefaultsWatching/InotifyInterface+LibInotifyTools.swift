#if LibInotifyTools && !KernelInotify
    import CInotifyTools
    import Foundation

    /// The inotify calls of the watcher, on libinotifytools (GPL-2): the default build, as the
    /// design asks (docs/design.md, "Live reload: the watcher's inotify interface"). The
    /// `KernelInotify` trait builds `InotifyInterface+Kernel.swift` instead.
    ///
    /// libinotifytools keeps its state in globals and is not thread-safe: only the inotify thread
    /// calls these.
    enum InotifyInterface {
        /// What the watcher runs on, for messages.
        static let name = "libinotifytools"
        /// The lowest descriptor number inotify cannot serve from: libinotifytools waits with
        /// `select()`, which aborts the process on descriptors from `FD_SETSIZE` on.
        static let descriptorLimit: Int32? = InotifyDescriptorCheck.selectLimit

        /// Initialises libinotifytools — unless its descriptor would be unusable.
        ///
        /// - Returns: The inotify descriptor when it could be told apart in `/proc/self/fd`, else
        ///   why inotify cannot serve.
        static func initialize() -> Result<Int32?, InotifySetUpFailure> {
            let limit = InotifyDescriptorCheck.selectLimit
            guard let next = InotifyDescriptorCheck.lowestFreeDescriptor() else {
                return .failure(InotifySetUpFailure(reason: "no file descriptor is free"))
            }
            guard next < limit else {
                return .failure(
                    InotifySetUpFailure(
                        reason: "the inotify descriptor would be number \(next), and libinotifytools aborts the "
                            + "process on descriptors from \(limit) on (it waits with select())"))
            }
            let before = InotifyDescriptorCheck.inotifyDescriptors()
            guard inotifytools_initialize() != 0 else {
                return .failure(InotifySetUpFailure(initialising: inotifytools_error()))
            }
            guard let before, let after = InotifyDescriptorCheck.inotifyDescriptors() else { return .success(nil) }
            let created = after.subtracting(before)
            if created.isEmpty {
                // `inotifytools_initialize` is a no-op the second time: someone else owns the library.
                return .failure(
                    InotifySetUpFailure(reason: "libinotifytools is already in use elsewhere in this process"))
            }
            if let high = created.first(where: { $0 >= limit }) {
                inotifytools_cleanup()
                return .failure(
                    InotifySetUpFailure(
                        reason: "the inotify descriptor got number \(high) (another thread opened descriptors "
                            + "meanwhile), and libinotifytools aborts the process on descriptors from \(limit) on"))
            }
            guard created.count == 1, let descriptor = created.first else { return .success(nil) }
            InotifyDescriptorCheck.setCloseOnExec(descriptor)
            return .success(descriptor)
        }

        /// The `errno` of the last call that failed (0 after a wait that timed out).
        static func error() -> Int32 { inotifytools_error() }

        /// Releases the library and its descriptor.
        static func cleanup() { inotifytools_cleanup() }

        /// Watches `path` for `events`. Returns whether it worked (``error()`` says why not).
        static func watch(_ path: String, events: UInt32) -> Bool {
            inotifytools_watch_file(path, Int32(bitPattern: events)) != 0
        }

        /// The watch descriptor registered for `path` (≤ 0 when there is none).
        static func watchDescriptor(of path: String) -> Int32 { inotifytools_wd_from_filename(path) }

        /// Waits up to `timeoutSeconds` (whole seconds; 0: forever) for the next event. nil on a
        /// timeout or a failure (``error()`` tells them apart). Valid until the next call.
        static func nextEvent(timeoutSeconds: Int) -> UnsafeMutablePointer<inotify_event>? {
            inotifytools_next_event(Int(timeoutSeconds))
        }

        /// Stops the watch `watch`. Returns whether it worked.
        static func removeWatch(_ watch: Int32) -> Bool { inotifytools_remove_watch_by_wd(watch) != 0 }
    }
#endif
