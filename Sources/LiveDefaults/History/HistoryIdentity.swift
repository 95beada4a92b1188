import Foundation

/// This process as a writer of history entries (docs/design.md, "History: the writer"): read once,
/// then written once into each journal's header, never per change.
package enum HistoryIdentity {
    /// The `defaults` command's verb and arguments, secrets redacted, set before its first change;
    /// and the writer last made with them (made again when the command or the process ID changes).
    private static let command = Locked<(arguments: [String], writer: DefaultsHistoryEntry.Writer?)>(([], nil))
    /// The retention bounds this process applies to the logs it writes.
    private static let retentionBounds = Locked<DefaultsHistoryRetention>(fromEnvironment())

    private static let base: DefaultsHistoryEntry.Writer = {
        let user = geteuid()
        var name = ""
        if let entry = getpwuid(user), let text = entry.pointee.pw_name { name = String(cString: text) }
        var host = [UInt8](repeating: 0, count: 256)
        let hostName =
            host.withUnsafeMutableBufferPointer { buffer in
                buffer.baseAddress.map {
                    gethostname(UnsafeMutableRawPointer($0).assumingMemoryBound(to: CChar.self), 255)
                }
            } == 0 ? String(decoding: host.prefix { $0 != 0 }, as: UTF8.self) : ""
        var executable = ""
        var buffer = [UInt8](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = buffer.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress.map {
                readlink(
                    "/proc/self/exe", UnsafeMutableRawPointer($0).assumingMemoryBound(to: CChar.self), buffer.count - 1)
            } ?? -1
        }
        if count > 0 {
            executable = String(decoding: buffer.prefix(count), as: UTF8.self)
        } else if let first = CommandLine.arguments.first {
            executable = first
        }
        return DefaultsHistoryEntry.Writer(
            userID: user, userName: name, machineID: Defaults.Host.current.identifier, hostName: hostName,
            processID: getpid(), executable: executable)
    }()

    /// This process, with the command it runs (if any).
    package static var current: DefaultsHistoryEntry.Writer {
        let process = getpid()  // (a forked child is another writer)
        return command.withLock { command in
            if let writer = command.writer, writer.processID == process { return writer }
            var writer = base
            writer.processID = process
            writer.command = command.arguments
            command.writer = writer
            return writer
        }
    }

    /// The origin of this process's own changes: the command's, or a program's.
    package static var defaultOrigin: DefaultsHistoryEntry.Origin {
        command.withLock { $0.arguments.isEmpty } ? .program : .command
    }

    /// Names the command this process runs (its verb and arguments, secrets already redacted).
    package static func setCommand(_ arguments: [String]) {
        command.withLock { $0 = (arguments, nil) }
    }

    /// The bounds this process applies.
    package static var retention: DefaultsHistoryRetention {
        get { retentionBounds.withLock { $0 } }
        set { retentionBounds.withLock { $0 = newValue } }
    }

    /// `$LIVEDEFAULTS_HISTORY_MAX_ENTRIES` and `$LIVEDEFAULTS_HISTORY_MAX_BYTES`, else the defaults.
    private static func fromEnvironment() -> DefaultsHistoryRetention {
        func number(_ name: String) -> Int? { getenv(name).flatMap { Int(String(cString: $0)) } }
        return DefaultsHistoryRetention(
            maxEntries: number("LIVEDEFAULTS_HISTORY_MAX_ENTRIES") ?? DefaultsHistoryRetention.standard.maxEntries,
            maxBytes: number("LIVEDEFAULTS_HISTORY_MAX_BYTES") ?? DefaultsHistoryRetention.standard.maxBytes)
    }
}

extension Defaults {
    /// How much history this process keeps in the logs it writes: by default the last 10,000
    /// entries or 4 MiB, whichever comes first (`$LIVEDEFAULTS_HISTORY_MAX_ENTRIES` and
    /// `$LIVEDEFAULTS_HISTORY_MAX_BYTES` change the default).
    public static var historyRetention: DefaultsHistoryRetention {
        get { HistoryIdentity.retention }
        set { HistoryIdentity.retention = newValue }
    }
}
