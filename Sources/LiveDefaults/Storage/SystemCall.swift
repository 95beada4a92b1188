import Foundation

/// Small wrappers over the system calls the store makes: each retries on `EINTR` and turns a
/// failure into ``SystemError``.
package enum SystemCall {
    /// Runs `body` until it does not fail with `EINTR`; a result of -1 throws the `errno` it left.
    @discardableResult
    package static func retrying(_ operation: String, _ body: () -> Int32) throws(SystemError) -> Int32 {
        while true {
            let result = body()
            if result != -1 { return result }
            let code = errno
            if code != EINTR { throw SystemError(errno: code, operation: operation) }
        }
    }

    /// The names in the directory at `path` but `.` and `..`, in the directory's order; nil when it
    /// cannot be opened. `readdir` rather than `FileManager`: its first listing costs a one-shot
    /// `defaults write` a tenth of its instructions (docs/design.md, "The `defaults` command's start-up").
    package static func directoryEntries(_ path: String) -> [String]? {
        guard let stream = opendir(path) else { return nil }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != ".", name != ".." { names.append(name) }
        }
        return names
    }

    /// Writes all of `data` to `descriptor`.
    package static func writeAll(_ descriptor: Int32, _ data: Data) throws(SystemError) {
        try writeAll(descriptor, data, using: SystemFileOperations())
    }

    /// Writes all of `data` to `descriptor` through `operations` (``FileOperations``).
    package static func writeAll<Operations: FileOperations>(
        _ descriptor: Int32, _ data: Data, using operations: Operations
    ) throws(SystemError) {
        var failure: SystemError?
        data.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) in
            guard let start = buffer.baseAddress else { return }  // no bytes (and no address): nothing to write
            var offset = 0
            while offset < buffer.count {
                let written = operations.write(descriptor, start + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    failure = SystemError(errno: errno, operation: "write")
                    return
                }
                offset += written
            }
        }
        if let failure { throw failure }
    }

    /// Reads the whole file open at `descriptor`, `sizeHint` bytes expected.
    package static func readAll(_ descriptor: Int32, sizeHint: Int) throws(SystemError) -> Data {
        var data = Data(count: max(sizeHint, 0) + 1)
        var length = 0
        while true {
            if length == data.count { data.count = data.count * 2 }
            let capacity = data.count - length
            let count = data.withUnsafeMutableBytes { buffer in
                guard let start = buffer.baseAddress else {
                    preconditionFailure("the read buffer is never empty (\(buffer.count) bytes)")
                }
                return Glibc.read(descriptor, start + length, capacity)
            }
            if count < 0 {
                if errno == EINTR { continue }
                throw SystemError(errno: errno, operation: "read")
            }
            if count == 0 { break }
            length += count
        }
        data.count = length
        return data
    }
}
