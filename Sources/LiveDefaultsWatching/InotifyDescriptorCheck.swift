import Foundation

/// Checks around `inotifytools_initialize`, whose descriptor we never get to see.
///
/// libinotifytools waits with `select()`: if its descriptor number is 1024 (`FD_SETSIZE`) or
/// more, `FD_SET` aborts the whole process. The descriptor is also created without
/// `FD_CLOEXEC`, so child processes would inherit it.
enum InotifyDescriptorCheck {
    /// `FD_SETSIZE`: descriptors from here on cannot be given to `select()`.
    static let selectLimit: Int32 = 1024

    /// The number the next new descriptor will get (the lowest free one), found by opening
    /// `/dev/null` and closing it again; `nil` when nothing can be opened (out of descriptors).
    static func lowestFreeDescriptor() -> Int32? {
        var descriptor: Int32
        repeat { descriptor = open("/dev/null", O_RDONLY | O_CLOEXEC) } while descriptor < 0 && errno == EINTR
        guard descriptor >= 0 else { return nil }
        close(descriptor)
        return descriptor
    }

    /// The inotify descriptors open in this process, from `/proc/self/fd`; `nil` when `/proc`
    /// cannot be read.
    static func inotifyDescriptors() -> Set<Int32>? {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return nil }
        var found = Set<Int32>()
        var buffer = [CChar](repeating: 0, count: 64)
        for name in names {
            guard let descriptor = Int32(name) else { continue }
            let count = readlink("/proc/self/fd/\(name)", &buffer, buffer.count - 1)
            guard count > 0 else { continue }
            let target = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if target == "anon_inode:inotify" { found.insert(descriptor) }
        }
        return found
    }

    /// The watch descriptors the kernel still holds on the inotify `descriptor`, from
    /// `/proc/self/fdinfo`; `nil` when that cannot be read.
    static func liveWatches(on descriptor: Int32) -> Set<Int32>? {
        guard let text = try? String(contentsOfFile: "/proc/self/fdinfo/\(descriptor)", encoding: .utf8) else {
            return nil
        }
        var watches = Set<Int32>()
        for line in text.split(separator: "\n") where line.hasPrefix("inotify wd:") {
            let number = line.dropFirst("inotify wd:".count).prefix { $0.isHexDigit }
            if let watch = Int32(number, radix: 16) { watches.insert(watch) }
        }
        return watches
    }

    /// Marks `descriptor` close-on-exec.
    static func setCloseOnExec(_ descriptor: Int32) {
        let flags = fcntl(descriptor, F_GETFD)
        if flags >= 0 { _ = fcntl(descriptor, F_SETFD, flags | FD_CLOEXEC) }
    }
}
