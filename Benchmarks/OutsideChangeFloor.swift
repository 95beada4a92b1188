import Foundation
import LiveDefaultsPropertyList
import Synchronization

/// The floor of an outside change: what any live reload must do, and nothing else. An inotify watch
/// on the directory; on the rename of the suite file into it, the file is read and decoded (with the
/// library's decoder) and `onChange` is called with the value, on the watch's own thread.
///
/// No coalescing, no deletion grace, no comparison with the values held, no observers: the outside
/// change rows are measured against it (docs/performance.md).
final class OutsideChangeFloor: Sendable {
    private let descriptor: Int32
    private let stopping = Atomic<Bool>(false)
    private let stopped = DispatchSemaphore(value: 0)

    /// Starts watching `directory` for `fileName`, or nil when inotify cannot be used.
    init?(directory: URL, fileName: String, onChange: @escaping @Sendable (PropertyListValue) -> Void) {
        let descriptor = inotify_init1(Int32(IN_CLOEXEC))
        guard descriptor >= 0 else { return nil }
        guard inotify_add_watch(descriptor, directory.path, UInt32(IN_MOVED_TO)) >= 0 else {
            close(descriptor)
            return nil
        }
        self.descriptor = descriptor
        let path = directory.appendingPathComponent(fileName).path
        let name = Array(fileName.utf8)
        Thread.detachNewThread { [self] in
            watch(path: path, name: name, onChange: onChange)
            stopped.signal()
        }
    }

    /// Stops the watch and waits for its thread (within the poll's 50 ms).
    func stop() {
        stopping.store(true, ordering: .relaxed)
        stopped.wait()
        close(descriptor)
    }

    private func watch(path: String, name: [UInt8], onChange: @Sendable (PropertyListValue) -> Void) {
        let header = MemoryLayout<inotify_event>.size
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while !stopping.load(ordering: .relaxed) {
            // A timeout only so that `stop()` is noticed; an event ends the wait at once.
            var waiting = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&waiting, 1, 50) > 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { continue }
            var renamed = false
            var offset = 0
            while offset + header <= count {
                let event = buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: inotify_event.self) }
                let length = Int(event.len)
                // The name is NUL-padded to `len` bytes.
                if length > name.count, buffer[offset + header + name.count] == 0,
                    buffer[(offset + header)..<(offset + header + name.count)].elementsEqual(name)
                {
                    renamed = true
                }
                offset += header + length
            }
            guard renamed, let data = Self.contents(of: path),
                let value = try? PropertyListCodec.decode(data).value
            else { continue }
            onChange(value)
        }
    }

    /// The file's bytes, read as a reload reads them (open, fstat for the size, read).
    private static func contents(of path: String) -> Data? {
        let file = open(path, O_RDONLY | O_CLOEXEC)
        guard file >= 0 else { return nil }
        defer { close(file) }
        var info = stat()
        guard fstat(file, &info) == 0 else { return nil }
        var data = Data(count: Int(info.st_size))
        let read = data.withUnsafeMutableBytes { Glibc.read(file, $0.baseAddress, $0.count) }
        return read == data.count ? data : nil
    }
}
