import Foundation
import LiveDefaults
import LiveDefaultsPropertyList

extension CommandDomains {
    /// The entries of `domain`'s history that `query` selects, oldest first, each secret value
    /// replaced by `<secret>` unless `revealingSecrets` (the domain's schema says which keys are
    /// secret): what `defaults history` prints and the console shows (docs/defaults-command.md,
    /// "History"). A local domain's log is read directly, without opening the store.
    ///
    /// - Throws: ``DefaultsError`` (`historyUnavailable`) for a domain that keeps no history here,
    ///   or when its schema cannot be read.
    package func historyEntries(of domain: DomainReference, _ query: HistoryQuery, revealingSecrets: Bool) throws
        -> [DefaultsHistoryEntry]
    {
        let (source, values) = try historyReading(of: domain)
        var entries = try source.entries(query)
        guard !revealingSecrets, let schema = try schema(of: domain, values: values) else { return entries }
        for index in entries.indices where schema.isSecret(entries[index].key) {
            entries[index].oldValue = schema.shown(entries[index].oldValue, forKey: entries[index].key)
            entries[index].newValue = schema.shown(entries[index].newValue, forKey: entries[index].key)
        }
        return entries
    }

    /// Where `domain`'s history is read: a local domain's log; a fleet suite's audit keys.
    package func historySource(of domain: DomainReference) throws -> any SuiteHistorySource {
        try historyReading(of: domain).source
    }

    /// `domain`'s history source, and the values its schema is found among: a fleet suite keeps
    /// its schema in etcd beside its values (read with its history); a local domain's schema is a
    /// file of its own, so none are read.
    private func historyReading(of domain: DomainReference) throws
        -> (source: any SuiteHistorySource, values: [String: PropertyListValue])
    {
        let location: SuiteLocation
        switch domain {
        case .global: location = try SuiteLocation(suiteName: Defaults.globalDomain, directory: directoryPath)
        case .named(let name): location = try SuiteLocation(suiteName: name, directory: directoryPath)
        case .path(let path): location = SuiteLocation(filePath: path + ".plist")
        case .remote:
            let store = try open(domain, directoryPath, false)
            try store.prepare(for: .read)
            guard let remote = store as? RemoteCommandDomain else {
                throw DefaultsError(.historyUnavailable, "\(domain.displayName) keeps no history here.")
            }
            return (ReadHistory(history: try remote.history()), remote.persistentValues())
        }
        return (HistoryLog(suitePath: location.path, suite: location.name), [:])
    }
}

/// A history already read (a fleet suite's audit keys, read in one range).
private struct ReadHistory: SuiteHistorySource {
    let history: SuiteHistory

    func readHistory() -> SuiteHistory { history }
}

extension DefaultsHistoryEntry.Writer {
    /// Who made a change, in the words `defaults history` and the console show: `user@host pid N:
    /// program` (the command's verb and arguments for the `defaults` command).
    package static func words(_ writer: DefaultsHistoryEntry.Writer?) -> String {
        guard let writer else { return "unknown writer (outside LiveDefaults)" }
        let user = writer.userName.isEmpty ? "uid \(writer.userID)" : writer.userName
        let what = writer.command.isEmpty ? writer.executable : "defaults " + writer.command.joined(separator: " ")
        return "\(user)@\(writer.hostName) pid \(writer.processID): \(what)"
    }
}

/// `defaults history`'s output, made as bytes: a 10,000-entry log prints in one buffer, without a
/// `String` per field (docs/design.md, "History: reading").
struct HistoryPrinter {
    var bytes: [UInt8] = []

    init(capacity: Int) { bytes.reserveCapacity(capacity) }

    mutating func append(_ text: String) {
        var text = text
        text.withUTF8 { bytes.append(contentsOf: $0) }
    }

    mutating func append(_ byte: UInt8) { bytes.append(byte) }

    mutating func decimal(_ value: UInt64) {
        var divisor: UInt64 = 1
        while value / divisor >= 10 { divisor &*= 10 }
        repeat {
            bytes.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value / divisor % 10))
            divisor /= 10
        } while divisor > 0
    }

    mutating func decimal(_ value: Int64) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        decimal(value.magnitude)
    }

    /// `number` (0 to 999) as `width` digits.
    private mutating func padded(_ number: Int, _ width: Int) {
        if width > 2 { bytes.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: number / 100 % 10)) }
        bytes.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: number / 10 % 10))
        bytes.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: number % 10))
    }

    /// The second last printed, and its text up to the fraction (`2026-12-03T17:14:36.`): entries
    /// come in order, so most share their second with the one before.
    private var second: (time: time_t, text: [UInt8])?

    /// A time as `2026-12-03T17:14:36.348Z` (UTC, milliseconds), made with `gmtime_r`.
    mutating func timestamp(_ date: Date) {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        let seconds = time_t(milliseconds / 1000)
        if let second, second.time == seconds {
            bytes.append(contentsOf: second.text)
        } else {
            let start = bytes.count
            var time = seconds
            var parts = tm()
            gmtime_r(&time, &parts)
            decimal(Int64(parts.tm_year) + 1900)
            append(UInt8(ascii: "-"))
            padded(Int(parts.tm_mon) + 1, 2)
            append(UInt8(ascii: "-"))
            padded(Int(parts.tm_mday), 2)
            append(UInt8(ascii: "T"))
            padded(Int(parts.tm_hour), 2)
            append(UInt8(ascii: ":"))
            padded(Int(parts.tm_min), 2)
            append(UInt8(ascii: ":"))
            padded(Int(parts.tm_sec), 2)
            append(UInt8(ascii: "."))
            second = (seconds, Array(bytes[start...]))
        }
        // A time before 1970 has a negative remainder, printed after "00" as it always was.
        let fraction = Int(milliseconds % 1000)
        if fraction < 0 {
            append("00\(fraction)")
        } else {
            padded(fraction, 3)
        }
        append(UInt8(ascii: "Z"))
    }

    /// A value as a line shows it: old-style text, `(none)` for no value.
    mutating func text(_ value: PropertyListValue?) {
        switch value {
        case nil: append("(none)")
        case .integer(let number)?: decimal(number)
        case .string(let string)? where string.utf8.allSatisfy({ (0x20...0x7E).contains($0) }):
            // As OpenStepWriter prints printable ASCII: bare when only letters and digits, else quoted.
            if !string.isEmpty && string.utf8.allSatisfy(Self.isLetterOrDigit) {
                append(string)
            } else {
                bytes.append(UInt8(ascii: "\""))
                for byte in string.utf8 {
                    if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { bytes.append(UInt8(ascii: "\\")) }
                    bytes.append(byte)
                }
                bytes.append(UInt8(ascii: "\""))
            }
        case let value?: append(OpenStepWriter.singleLineString(for: value))
        }
    }

    private static func isLetterOrDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }

    /// A value as JSON, as ``WatchReport/json(_:)-(PropertyListValue?)`` writes it.
    mutating func json(_ value: PropertyListValue?) {
        switch value {
        case nil: append("null")
        case .string(let string)?: json(string)
        case .integer(let number)?: decimal(number)
        case .bool(let flag)?: append(flag ? "true" : "false")
        case let value?: append(WatchReport.json(value))
        }
    }

    /// A string as a JSON string, as ``WatchReport/json(_:)-(String)`` writes it.
    mutating func json(_ string: String) {
        var string = string
        string.withUTF8 { text in
            bytes.append(UInt8(ascii: "\""))
            var index = 0
            while index < text.count {
                let byte = text[index]
                switch byte {
                case UInt8(ascii: "\""): append("\\\"")
                case UInt8(ascii: "\\"): append("\\\\")
                case UInt8(ascii: "\n"): append("\\n")
                case UInt8(ascii: "\r"): append("\\r")
                case UInt8(ascii: "\t"): append("\\t")
                case 0..<0x20:
                    append("\\u00")
                    let hex: [UInt8] = Array("0123456789abcdef".utf8)
                    append(hex[Int(byte >> 4)])
                    append(hex[Int(byte & 0xF)])
                // U+2028 and U+2029: E2 80 A8, E2 80 A9.
                case 0xE2
                where index + 2 < text.count && text[index + 1] == 0x80
                    && (text[index + 2] == 0xA8 || text[index + 2] == 0xA9):
                    append(text[index + 2] == 0xA8 ? "\\u2028" : "\\u2029")
                    index += 2
                default:
                    bytes.append(byte)
                }
                index += 1
            }
            bytes.append(UInt8(ascii: "\""))
        }
    }

    /// An entry as a line of `defaults history`: number, time, change, origin, who.
    mutating func line(_ entry: DefaultsHistoryEntry, who: String) {
        decimal(entry.id)
        append(UInt8(ascii: "\t"))
        timestamp(entry.date)
        append(UInt8(ascii: "\t"))
        append(entry.key)
        append(": ")
        text(entry.oldValue)
        append(" → ")
        text(entry.newValue)
        append(UInt8(ascii: "\t"))
        append(entry.origin.rawValue)
        append(UInt8(ascii: "\t"))
        append(who)
        append(UInt8(ascii: "\n"))
    }

    /// An entry as a member of `defaults history --json`'s list; `writer` is its writer as JSON.
    mutating func json(_ entry: DefaultsHistoryEntry, writer: String) {
        append("{\"id\":")
        decimal(entry.id)
        append(",\"date\":\"")
        timestamp(entry.date)
        append("\",\"suite\":")
        json(entry.suite)
        append(",\"key\":")
        json(entry.key)
        append(",\"old\":")
        json(entry.oldValue)
        append(",\"new\":")
        json(entry.newValue)
        append(",\"origin\":\"")
        append(entry.origin.rawValue)
        append("\",\"writer\":")
        append(writer)
        append(UInt8(ascii: "}"))
    }
}

extension DefaultsHistoryEntry {
    /// A time as `defaults history` prints it: `2026-12-03T17:14:36.348Z` (UTC, milliseconds).
    package static func timestamp(_ date: Date) -> String {
        var printer = HistoryPrinter(capacity: 24)
        printer.timestamp(date)
        return String(decoding: printer.bytes, as: UTF8.self)
    }

    /// A value as text, as the console's history shows it: a string (and a date, data, a real JSON
    /// has no number for) as `defaults history --json` writes it, without the quotes; `(none)` for no
    /// value; anything else as its JSON.
    package static func text(_ value: PropertyListValue?) -> String {
        switch value {
        case nil: "(none)"
        case .string(let text)?: text
        case .date(let date)?: date.formatted(.iso8601)
        case .data(let data)?: data.base64EncodedString()
        case .real(let real)? where !real.isFinite: real.isNaN ? "nan" : real < 0 ? "-inf" : "inf"
        case .float(let real)? where !real.isFinite: real.isNaN ? "nan" : real < 0 ? "-inf" : "inf"
        case let value?: WatchReport.json(value)
        }
    }
}
