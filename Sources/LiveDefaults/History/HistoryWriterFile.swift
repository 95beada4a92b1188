import Foundation

/// The writer of a journal, in a hidden file beside it: `.<journal name>.writer`, written once when
/// the journal is made (docs/design.md, "History: the writer"). A dead process's journal is
/// replayed with its writer, so its changes are recorded as its own.
package enum HistoryWriterFile {
    private static let magic: [UInt8] = Array("LDWRITER".utf8)

    /// The writer file of the journal at `journalPath`.
    package static func path(forJournal journalPath: String) -> String {
        SuiteFile.directory(of: journalPath) + "/." + SuiteFile.name(of: journalPath) + ".writer"
    }

    /// Writes `writer` beside the journal; a failure only leaves the writer unknown.
    static func write(
        _ writer: DefaultsHistoryEntry.Writer, forJournal journalPath: String, owner: FileOwner?,
        using operations: some FileOperations
    ) {
        var bytes = HistoryBytes()
        bytes.bytes = magic
        bytes.writer(writer)
        let path = path(forJournal: journalPath)
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        if let owner {
            do throws(SystemError) { try owner.give(descriptor, using: operations) } catch {
                unlink(path)
                return
            }
        }
        _ = bytes.bytes.withUnsafeBytes { Foundation.write(descriptor, $0.baseAddress, $0.count) }
    }

    /// The writer of the journal at `journalPath`, nil when unknown.
    package static func read(forJournal journalPath: String) -> DefaultsHistoryEntry.Writer? {
        guard let data = FileManager.default.contents(atPath: path(forJournal: journalPath)),
            data.count > magic.count, Array(data.prefix(magic.count)) == magic
        else { return nil }
        return data.withUnsafeBytes { bytes in
            var reader = HistoryReader(bytes, at: magic.count)
            return reader.writer()
        }
    }
}
