import Foundation
import LiveDefaults

extension CommandVerb {
    /// Whether `--` ends the verb's options, the argument after it being the key (`history`,
    /// `rollback`: a key that starts with `-`). Elsewhere `--` is an argument like any, as on macOS.
    var endsOptionsAtDoubleDash: Bool { name == "history" || name == "rollback" }

    /// The verbs that read and undo a suite's history (docs/defaults-command.md, "History").
    static let historyVerbs: [CommandVerb] = [
        CommandVerb(
            "history",
            [
                (
                    "<domain> [<key>] [--since <time>] [--limit <n>] [--json] [-- <key>]",
                    "shows who changed what, when, from what"
                )
            ],
            endsGroup: false
        ) { (cursor: inout ArgumentCursor) throws(CommandLineError) in
            let domain = try cursor.domain()
            var key: String?
            var since: DefaultsHistoryPoint?
            var limit: Int?
            var json = false
            while let argument = cursor.peek {
                cursor.index += 1
                switch argument {
                case "--json", "-json":
                    json = true
                case "--since":
                    since = try cursor.historyPoint(after: "--since")
                case "--limit":
                    let text = try cursor.next("number after --limit")
                    guard let number = Int(text), number >= 0 else {
                        throw cursor.error("--limit takes a number of entries, not '\(text)'")
                    }
                    limit = number
                case "--":
                    key = try cursor.keyAfterOptions(replacing: key)
                default:
                    key = try cursor.positionalKey(argument, replacing: key)
                }
            }
            return .history(domain, key: key, since: since, limit: limit, json: json)
        },
        CommandVerb(
            "diff", [("<domain> --since <time or entry> [--json]", "shows each changed key's value then and now")],
            endsGroup: false
        ) { (cursor: inout ArgumentCursor) throws(CommandLineError) in
            let domain = try cursor.domain()
            var since: DefaultsHistoryPoint?
            var json = false
            while let argument = cursor.peek {
                cursor.index += 1
                switch argument {
                case "--json", "-json": json = true
                case "--since": since = try cursor.historyPoint(after: "--since")
                default: throw cursor.error("unexpected argument '\(argument)'")
                }
            }
            guard let since else { throw cursor.error("missing --since <time or entry>") }
            return .diff(domain, since: since, json: json)
        },
        CommandVerb(
            "rollback",
            [("<domain> [<key>] --to <time or entry> [-- <key>]", "undoes the changes made after a time or entry")]
        ) { (cursor: inout ArgumentCursor) throws(CommandLineError) in
            let domain = try cursor.domain()
            var key: String?
            var point: DefaultsHistoryPoint?
            while let argument = cursor.peek {
                cursor.index += 1
                switch argument {
                case "--to": point = try cursor.historyPoint(after: "--to")
                case "--": key = try cursor.keyAfterOptions(replacing: key)
                default: key = try cursor.positionalKey(argument, replacing: key)
                }
            }
            guard let point else { throw cursor.error("missing --to <time or entry>") }
            return .rollback(domain, key: key, to: point)
        },
    ]
}

extension ArgumentCursor {
    /// The key after `--`, which ends the options (a key that starts with `-`): it must be the last
    /// argument, and no key may have come before it.
    mutating func keyAfterOptions(replacing key: String?) throws(CommandLineError) -> String {
        let found = try next("key after --")
        if key != nil { throw error("unexpected argument '\(found)': the key was already given") }
        try expectEnd()
        return found
    }

    /// `argument` as the key: the first argument that is not an option. One that starts with `-` is
    /// refused as an unknown option (a key like that goes after `--`).
    func positionalKey(_ argument: String, replacing key: String?) throws(CommandLineError) -> String {
        if argument.hasPrefix("-") {
            throw error("unknown option '\(argument)' (a key that starts with '-' goes after '--')")
        }
        guard key == nil else { throw error("unexpected argument '\(argument)'") }
        return argument
    }

    /// A point of a history, as typed after `option`: an entry's number (`42`, `#42`), a moment in
    /// ISO 8601 (`2026-12-03T17:00:00Z`, `2026-12-03`), or a time ago (`90s`, `15m`, `2h`, `7d`).
    mutating func historyPoint(after option: String) throws(CommandLineError) -> DefaultsHistoryPoint {
        let text = try next("time or entry after \(option)")
        if let point = Self.historyPoint(text, now: Date()) { return point }
        throw error(
            "\(option) takes an entry number (42), a time in ISO 8601 (2026-12-03T17:00:00Z) or a time ago "
                + "(15m, 2h, 7d), not '\(text)'")
    }

    /// `text` as a point of a history, nil when it is none.
    static func historyPoint(_ text: String, now: Date) -> DefaultsHistoryPoint? {
        let number = text.hasPrefix("#") ? String(text.dropFirst()) : text
        if let entry = UInt64(number) { return .entry(entry) }
        if let unit = text.last, let amount = Double(text.dropLast()), amount >= 0 {
            let seconds: Double? =
                switch unit {
                case "s": 1
                case "m": 60
                case "h": 3600
                case "d": 86400
                default: nil
                }
            if let seconds { return .date(now.addingTimeInterval(-amount * seconds)) }
        }
        for style in [
            Date.ISO8601FormatStyle(includingFractionalSeconds: true), Date.ISO8601FormatStyle(),
            Date.ISO8601FormatStyle().year().month().day(),
        ] {
            if let date = try? style.parse(text) { return .date(date) }
        }
        return nil
    }
}
