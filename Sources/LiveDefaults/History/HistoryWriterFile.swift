import Foundation

/// The writer of a journal, kept with the journal file itself as its extended attribute
/// `user.livedefaults.writer`, set once when the journal is made (docs/design.md, "History: the
/// writer"): no change to the journal's format and no file beside it. A dead process's journal is
/// replayed with its writer, so its changes are recorded as its own. Where the file system keeps
/// no user attributes, the writer of a replayed journal is unknown.
package enum HistoryWriterFile {
    private static let name = "user.livedefaults.writer"
    /// An attribute fits in a block on ext4: a longer command line is cut.
    private static let limit = 3072

    private typealias SetAttribute =
        @convention(c) (
            Int32, UnsafePointer<CChar>, UnsafeRawPointer?, Int, Int32
        ) -> Int32
    private typealias GetAttribute =
        @convention(c) (
            Int32, UnsafePointer<CChar>, UnsafeMutableRawPointer?, Int
        ) -> Int
    /// glibc's `fsetxattr` and `fgetxattr` (their header is not in Swift's Glibc module).
    private static let setAttribute: SetAttribute? = dlsym(
        UnsafeMutableRawPointer(bitPattern: 0), "fsetxattr"
    ).map { unsafeBitCast($0, to: SetAttribute.self) }
    private static let getAttribute: GetAttribute? = dlsym(
        UnsafeMutableRawPointer(bitPattern: 0), "fgetxattr"
    ).map { unsafeBitCast($0, to: GetAttribute.self) }

    /// Sets `writer` on the journal open at `descriptor`; a failure only leaves the writer unknown.
    static func write(_ writer: DefaultsHistoryEntry.Writer, toJournal descriptor: Int32) {
        var writer = writer
        var bytes = HistoryBytes()
        bytes.writer(writer)
        while bytes.bytes.count > limit, !writer.command.isEmpty {
            writer.command.removeLast()
            bytes = HistoryBytes()
            bytes.writer(writer)
        }
        guard bytes.bytes.count <= limit else { return }
        guard let setAttribute else { return }
        _ = bytes.bytes.withUnsafeBytes { setAttribute(descriptor, name, $0.baseAddress, $0.count, 0) }
    }

    /// The writer of the journal open at `descriptor`, nil when unknown.
    package static func read(journal descriptor: Int32) -> DefaultsHistoryEntry.Writer? {
        guard let getAttribute else { return nil }
        var bytes = [UInt8](repeating: 0, count: limit)
        let count = bytes.withUnsafeMutableBytes { getAttribute(descriptor, name, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        return bytes.withUnsafeBytes { bytes in
            var reader = HistoryReader(UnsafeRawBufferPointer(rebasing: bytes[0..<count]))
            return reader.writer()
        }
    }
}
