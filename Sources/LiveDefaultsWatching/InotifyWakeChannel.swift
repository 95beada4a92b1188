import Foundation

/// How other threads wake the inotify thread out of ``InotifyInterface/nextEvent(timeoutSeconds:)``.
///
/// libinotifytools gives no access to its descriptor, so it cannot go into `poll` with an
/// eventfd (the kernel build keeps the same channel: one watcher for both builds). Instead the inotify thread also watches an object of its own for `IN_MODIFY`:
/// writing one byte to it queues an event at once and the blocked `select()` returns. The
/// object has no name in any directory — a pipe, or else an unnamed temporary file — watched
/// through `/proc/self/fd/N`, so nothing is left behind when the process ends.
///
/// The descriptors live as long as the process: a waker may still hold the number, and writing
/// to a closed and reused descriptor would write into someone else's file.
struct InotifyWakeChannel: Sendable {
    /// The descriptor written to.
    let writeDescriptor: Int32
    /// The descriptor drained by the inotify thread (the read end of a pipe), if any.
    let readDescriptor: Int32?
    /// The path the inotify thread watches.
    var watchPath: String { "/proc/self/fd/\(writeDescriptor)" }

    /// A pipe whose write end does not block (a full pipe already has a wake-up on its way).
    static func pipe() -> InotifyWakeChannel? {
        var descriptors: [Int32] = [-1, -1]
        guard Glibc.pipe(&descriptors) == 0 else { return nil }
        for descriptor in descriptors {
            _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
            _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
        }
        return InotifyWakeChannel(writeDescriptor: descriptors[1], readDescriptor: descriptors[0])
    }

    /// An unnamed temporary file (`O_TMPFILE`) in the temporary directory; always one byte long.
    static func temporaryFile() -> InotifyWakeChannel? {
        let unnamedTemporaryFile: Int32 = 0o2000_0000 | O_DIRECTORY  // O_TMPFILE, which Glibc's module hides
        let directory = ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp"
        let descriptor = open(directory, unnamedTemporaryFile | O_RDWR | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return nil }
        return InotifyWakeChannel(writeDescriptor: descriptor, readDescriptor: nil)
    }

    /// Makes the watched object report `IN_MODIFY`. Safe from any thread.
    func wake() {
        var byte: UInt8 = 1
        if readDescriptor == nil {
            while pwrite(writeDescriptor, &byte, 1, 0) < 0 && errno == EINTR {}
        } else {
            while write(writeDescriptor, &byte, 1) < 0 && errno == EINTR {}
        }
    }

    /// Empties the pipe (inotify thread only).
    func drain() {
        guard let readDescriptor else { return }
        var buffer = [UInt8](repeating: 0, count: 512)
        while true {
            let count = read(readDescriptor, &buffer, buffer.count)
            if count > 0 || (count < 0 && errno == EINTR) { continue }
            return
        }
    }

    /// Closes the descriptors of a channel that failed its self-test and was never shared.
    func closeUnshared() {
        close(writeDescriptor)
        if let readDescriptor { close(readDescriptor) }
    }
}
