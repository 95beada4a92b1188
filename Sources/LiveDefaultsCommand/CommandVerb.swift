import LiveDefaults

/// One verb of the `defaults` command: its names, the forms `help` lists, and how its arguments are parsed.
///
/// ``all`` is the single table both parsing and `defaults help` are generated from.
package struct CommandVerb: Sendable {
    /// One line of help: the arguments after the verb and what that form does.
    package struct Form: Sendable {
        package let arguments: String
        package let summary: String
    }

    package let name: String
    /// Other names accepted (`remove` for `delete`, as macOS accepts).
    package let aliases: [String]
    package let forms: [Form]
    /// Whether `help` leaves a blank line after this verb's forms (macOS's grouping).
    let endsGroup: Bool
    let parse: @Sendable (inout ArgumentCursor) throws(CommandLineError) -> DefaultsCommand

    /// `defaults read | defaults read <domain> | …`, quoted in errors.
    package var usage: String {
        forms.map { ["defaults", name, $0.arguments].filter { !$0.isEmpty }.joined(separator: " ") }
            .joined(separator: " | ")
    }

    package static func named(_ name: String) -> CommandVerb? {
        all.first { $0.name == name || $0.aliases.contains(name) }
    }

    package static let generalUsage = "defaults [-currentHost] <verb> [<domain> [<key>] [<value>]]"

    init(
        _ name: String, aliases: [String] = [], _ forms: [(String, String)], endsGroup: Bool = true,
        parse: @escaping @Sendable (inout ArgumentCursor) throws(CommandLineError) -> DefaultsCommand
    ) {
        self.name = name
        self.aliases = aliases
        self.forms = forms.map { Form(arguments: $0.0, summary: $0.1) }
        self.endsGroup = endsGroup
        self.parse = parse
    }

    /// Every verb, in the order `help` lists them: macOS's, then the schema's (``schemaVerbs``), then the
    /// history's (``historyVerbs``).
    package static let all: [CommandVerb] = macOSVerbs + schemaVerbs + historyVerbs

    /// The verbs macOS's `defaults` has, and `watch`.
    private static let macOSVerbs: [CommandVerb] = [
        CommandVerb(
            "read",
            [
                ("", "shows all defaults"), ("<domain>", "shows defaults for given domain"),
                ("<domain> <key>", "shows defaults for given domain, key"),
                ("--system <domain> [<key>]", "shows the domain's system-wide defaults ($XDG_CONFIG_DIRS)"),
            ]
        ) { (cursor: inout ArgumentCursor) throws(CommandLineError) in
            if cursor.isAtEnd { return .readAll }
            if cursor.peek == "--system" || cursor.peek == "-system" {
                cursor.index += 1
                let domain = try cursor.domain()
                if cursor.isAtEnd { return .readSystemWide(domain, key: nil) }
                let key = try cursor.key()
                try cursor.expectEnd()
                return .readSystemWide(domain, key: key)
            }
            let domain = try cursor.domain()
            if cursor.isAtEnd { return .read(domain, key: nil) }
            let key = try cursor.key()
            try cursor.expectEnd()
            return .read(domain, key: key)
        },
        CommandVerb("read-type", [("<domain> <key>", "shows the type for the given domain, key")]) {
            (cursor: inout ArgumentCursor) throws(CommandLineError) in
            let domain = try cursor.domain()
            let key = try cursor.key()
            try cursor.expectEnd()
            return .readType(domain, key: key)
        },
        CommandVerb(
            "write",
            [
                ("<domain> <domain_rep>", "writes domain (overwrites existing)"),
                ("<domain> <key> <value>", "writes key for domain"),
            ]
        ) { (cursor: inout ArgumentCursor) throws(CommandLineError) in
            let domain = try cursor.domain()
            // As on macOS, the argument after the domain is the key whatever it looks like (`write d -array a b`
            // writes the key -array), unless it is the last: then it is the whole domain.
            let first = try cursor.next("key, or a dictionary for the whole domain")
            if cursor.isAtEnd {
                guard case .dictionary(let values) = try ValueArguments.bareValue(first) else {
                    throw .macOS("\nRep argument is not a dictionary\nDefaults have not been changed.\n")
                }
                return .writeDomain(domain, values)
            }
            return .write(domain, key: first, try ValueArguments.writeOperation(&cursor))
        },
        CommandVerb("rename", [("<domain> <old_key> <new_key>", "renames old_key to new_key")]) {
            (cursor: inout ArgumentCursor) throws(CommandLineError) in
            let domain = try cursor.domain()
            let old = try cursor.key("old key")
            let new = try cursor.key("new key")
            try cursor.expectEnd()
            return .rename(domain, from: old, to: new)
        },
        CommandVerb(
            "delete", aliases: ["remove"],
            [("<domain>", "deletes domain"), ("<domain> <key>", "deletes key in domain")]
        ) { (cursor: inout ArgumentCursor) throws(CommandLineError) in
            let domain = try cursor.domain()
            if cursor.isAtEnd { return .delete(domain, key: nil) }
            let key = try cursor.key()
            try cursor.expectEnd()
            return .delete(domain, key: key)
        },
        CommandVerb(
            "import",
            [
                ("<domain> <path to plist>", "writes the plist at path to domain"),
                ("<domain> -", "writes a plist from stdin to domain"),
            ], endsGroup: false
        ) { (cursor: inout ArgumentCursor) throws(CommandLineError) in
            let domain = try cursor.domain()
            guard let source = cursor.peek else { throw .macOS("\nNeed a path to read from") }
            cursor.index += 1
            try cursor.expectEnd()
            return .importDomain(domain, source: source)
        },
        CommandVerb(
            "export",
            [
                ("<domain> <path to plist>", "saves domain as a binary plist to path"),
                ("<domain> -", "writes domain as an xml plist to stdout"),
            ], endsGroup: false
        ) { (cursor: inout ArgumentCursor) throws(CommandLineError) in
            let domain = try cursor.domain()
            guard let destination = cursor.peek else { throw .macOS("\nNeed a path to write to") }
            cursor.index += 1
            try cursor.expectEnd()
            return .exportDomain(domain, destination: destination)
        },
        CommandVerb("domains", [("", "lists all domains")], endsGroup: false) {
            (cursor: inout ArgumentCursor) throws(CommandLineError) in
            try cursor.expectEnd()
            return .domains
        },
        CommandVerb("find", [("<word>", "lists all entries containing word")], endsGroup: false) {
            (cursor: inout ArgumentCursor) throws(CommandLineError) in
            let word = try cursor.next("word to find")
            try cursor.expectEnd()
            return .find(word)
        },
        CommandVerb(
            "watch",
            [("<domain> [<key> ...] [--json]", "prints each change of the domain's values as it happens")],
            endsGroup: false
        ) { (cursor: inout ArgumentCursor) throws(CommandLineError) in
            let domain = try cursor.domain()
            var keys: [String] = []
            var json = false
            for argument in cursor.rest() {
                if argument == "--json" || argument == "-json" {
                    json = true
                } else if argument.hasPrefix("-") {
                    throw cursor.error("unknown option '\(argument)'")
                } else {
                    keys.append(argument)
                }
            }
            return .watch(domain, keys: keys, json: json)
        },
        CommandVerb(
            "explain",
            [("<domain> <key> [--json]", "shows every layer that holds the key, and which one wins")]
        ) { (cursor: inout ArgumentCursor) throws(CommandLineError) in
            // `--json` may come anywhere after the verb, as for `watch`.
            let isFlag = { (argument: String) in argument == "--json" || argument == "-json" }
            let json = cursor.arguments[cursor.index...].contains(where: isFlag)
            cursor.arguments =
                Array(cursor.arguments[..<cursor.index])
                + cursor.arguments[cursor.index...].filter { !isFlag($0) }
            let domain = try cursor.domain()
            let key = try cursor.key()
            try cursor.expectEnd()
            return .explain(domain, key: key, json: json)
        },
        CommandVerb("help", [("", "print this help")]) { (cursor: inout ArgumentCursor) throws(CommandLineError) in
            try cursor.expectEnd()
            return .help
        },
    ]

    /// The text `defaults help` prints, generated from ``all`` and the value flags.
    package static var helpText: String {
        var lines = [
            "Command line interface to a user's defaults.",
            "Syntax:",
            "",
            "'defaults' [-currentHost | -host <hostname>] followed by one of the following:",
            "",
        ]
        for verb in all {
            for form in verb.forms {
                let left = [verb.name, form.arguments].filter { !$0.isEmpty }.joined(separator: " ")
                lines.append(
                    "  " + left.padding(toLength: max(37, left.count + 1), withPad: " ", startingAt: 0) + form.summary)
            }
            if verb.endsGroup { lines.append("") }
        }
        lines += [
            "<domain> is ( <domain_name> | -app <application_name> | -globalDomain )",
            "         or a path to a file omitting the '.plist' extension",
            "         or etcd://<host>:<port>[,<host>:<port>...]/[<root>/]<suite> for a suite kept in etcd",
            "         (etcds:// for TLS; user from ETCDCTL_USER=<name>:<password>)",
            "",
            "<value> is one of:",
            "  <value_rep>",
        ]
        lines += ValueArguments.Flag.all.map { "  \($0.helpName) \($0.helpArguments)" }
        lines += [
            "",
            "Domains are files <domain>.plist in $XDG_CONFIG_HOME (else ~/.config); schemas are files",
            "<domain>.plist in $XDG_DATA_HOME/livedefaults/schemas (else ~/.local/share/...), then in",
            "<dir>/livedefaults/schemas for each <dir> of $XDG_DATA_DIRS. Values a schema marks secret",
            "print as <secret>; --show-secrets after read, find, describe, watch or explain prints them.",
            "Exit status: 0 on success; 1 when a domain or key does not exist, a value is refused or a",
            "write fails; 255 for a malformed command line, after this help (nothing is changed).",
        ]
        return lines.joined(separator: "\n") + "\n"
    }
}
