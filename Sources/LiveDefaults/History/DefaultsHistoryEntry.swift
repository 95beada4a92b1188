import Foundation

/// One change of a suite's value, as its history records it (docs/design.md, "History").
///
/// A suite kept in a file keeps a log of the changes LiveDefaults wrote to it, appended by the
/// flush that wrote them, under the suite's lock: the log's order is the file's order. Each entry
/// says what changed (the key, the value before and after, nil for none), when, how
/// (``origin-swift.property``) and who (``writer``: nil for an outside change, whose writer
/// inotify cannot name).
public struct DefaultsHistoryEntry: Sendable, Hashable, Identifiable {
    /// Where a change came from.
    public enum Origin: String, Sendable, Hashable, CaseIterable {
        /// A program's call (``Defaults/set(_:forKey:)-(PropertyListValue?,_)``, ``Defaults/removeObject(forKey:)`` and
        /// the other setters).
        case program
        /// The `defaults` command (``Writer/command`` holds its verb and arguments).
        case command
        /// A migration step (``Defaults/migrate(to:_:)``).
        case migration
        /// A rollback (``Defaults/rollBack(_:to:schema:)``), itself a change.
        case rollback
        /// An edit of the suite file outside LiveDefaults (an editor, Foundation, a script), seen
        /// by the next LiveDefaults process to look at the file; its writer is unknown.
        case outside
    }

    /// Who made a change: the user, the machine and the process.
    public struct Writer: Sendable, Hashable {
        /// The user's ID (the process's effective user).
        public var userID: UInt32
        /// The user's name, empty when the user has none in the password database.
        public var userName: String
        /// The machine's ID (`/etc/machine-id`; the ID ``Defaults/Host/current`` names).
        public var machineID: String
        /// The machine's host name.
        public var hostName: String
        /// The process's ID.
        public var processID: Int32
        /// The process's executable.
        public var executable: String
        /// For the `defaults` command: its verb and arguments, secret values replaced by
        /// `<secret>`; empty for other programs.
        public var command: [String]

        /// A writer.
        ///
        /// - Parameters:
        ///   - userID: The user's ID.
        ///   - userName: The user's name.
        ///   - machineID: The machine's ID.
        ///   - hostName: The machine's host name.
        ///   - processID: The process's ID.
        ///   - executable: The process's executable.
        ///   - command: The `defaults` command's verb and arguments; empty for others.
        public init(
            userID: UInt32, userName: String, machineID: String, hostName: String, processID: Int32,
            executable: String, command: [String] = []
        ) {
            self.userID = userID
            self.userName = userName
            self.machineID = machineID
            self.hostName = hostName
            self.processID = processID
            self.executable = executable
            self.command = command
        }

        /// This process.
        public static var current: Writer { HistoryIdentity.current }
    }

    /// The entry's number in its suite's history: numbers grow by one per change and are never
    /// reused, so a number names one change even after older ones are pruned.
    public var id: UInt64
    /// When the change was written to the suite (for an outside change: the file's modification time).
    public var date: Date
    /// The suite.
    public var suite: String
    /// The key.
    public var key: String
    /// The value before the change; nil when the key had none.
    public var oldValue: PropertyListValue?
    /// The value after the change; nil when the key was removed.
    public var newValue: PropertyListValue?
    /// Where the change came from.
    public var origin: Origin
    /// Who made the change; nil for an outside change.
    public var writer: Writer?

    /// An entry.
    ///
    /// - Parameters:
    ///   - id: Its number in the suite's history.
    ///   - date: When the change was written.
    ///   - suite: The suite.
    ///   - key: The key.
    ///   - oldValue: The value before; nil for none.
    ///   - newValue: The value after; nil for a removal.
    ///   - origin: Where the change came from.
    ///   - writer: Who made it; nil when unknown.
    public init(
        id: UInt64, date: Date, suite: String, key: String, oldValue: PropertyListValue?,
        newValue: PropertyListValue?, origin: Origin, writer: Writer?
    ) {
        self.id = id
        self.date = date
        self.suite = suite
        self.key = key
        self.oldValue = oldValue
        self.newValue = newValue
        self.origin = origin
        self.writer = writer
    }
}

/// How much of a suite's history is kept: the newest entries, at most ``maxEntries`` and at most
/// ``maxBytes`` of log, whichever bound comes first.
///
/// The log is pruned (rewritten, under the suite's lock) once it is a quarter past a bound, so a
/// log may briefly hold up to 25 % more. A process's bounds apply to the logs it writes.
public struct DefaultsHistoryRetention: Sendable, Hashable {
    /// The most entries kept (10,000 by default).
    public var maxEntries: Int
    /// The most bytes of log kept (4 MiB by default).
    public var maxBytes: Int

    /// Bounds of your own.
    ///
    /// - Parameters:
    ///   - maxEntries: The most entries kept (at least 1).
    ///   - maxBytes: The most bytes of log kept (at least 4 KiB).
    public init(maxEntries: Int = 10_000, maxBytes: Int = 4 * 1024 * 1024) {
        self.maxEntries = max(1, maxEntries)
        self.maxBytes = max(4096, maxBytes)
    }

    /// The default bounds: 10,000 entries or 4 MiB.
    public static let standard = DefaultsHistoryRetention()
}

/// A point in a suite's history to roll back to: every change after it is undone.
public enum DefaultsHistoryPoint: Sendable, Hashable {
    /// Right after the entry with this number (``DefaultsHistoryEntry/id``).
    case entry(UInt64)
    /// The moment given: changes written after it are undone.
    case date(Date)
}
