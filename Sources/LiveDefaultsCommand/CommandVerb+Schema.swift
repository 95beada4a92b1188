import LiveDefaults

extension CommandVerb {
    /// The verbs after which `--show-secrets` prints secret values in full.
    static let printingValues: Set<String> = [
        "read", "watch", "describe", "find", "explain", "history", "diff", "rollback",
    ]

    /// The verbs that read and install schemas (docs/defaults-command.md, "Schemas").
    static let schemaVerbs: [CommandVerb] = [
        CommandVerb(
            "describe",
            [("<domain> [<key>] [--json]", "shows each key's type, default, allowed values, summary and value")],
            endsGroup: false
        ) { (cursor: inout ArgumentCursor) throws(CommandLineError) in
            let domain = try cursor.domain()
            let (arguments, json) = try cursor.restWithJSONFlag()
            guard arguments.count <= 1 else { throw cursor.error("unexpected argument '\(arguments[1])'") }
            return .describe(domain, key: arguments.first, json: json)
        },
        CommandVerb("list-keys", [("<domain> [--json]", "lists the keys of the domain's schema")], endsGroup: false) {
            (cursor: inout ArgumentCursor) throws(CommandLineError) in
            let domain = try cursor.domain()
            let (arguments, json) = try cursor.restWithJSONFlag()
            if let extra = arguments.first { throw cursor.error("unexpected argument '\(extra)'") }
            return .listKeys(domain, json: json)
        },
        CommandVerb(
            "reset",
            [("<domain> [<key>] [--json]", "sets key (or every key of the schema) back to its default")],
            endsGroup: false
        ) { (cursor: inout ArgumentCursor) throws(CommandLineError) in
            let domain = try cursor.domain()
            let (arguments, json) = try cursor.restWithJSONFlag()
            guard arguments.count <= 1 else { throw cursor.error("unexpected argument '\(arguments[1])'") }
            return .reset(domain, key: arguments.first, json: json)
        },
        CommandVerb("schema", [("<domain> [--json]", "prints the domain's schema")], endsGroup: false) {
            (cursor: inout ArgumentCursor) throws(CommandLineError) in
            let domain = try cursor.domain()
            let (arguments, json) = try cursor.restWithJSONFlag()
            if let extra = arguments.first { throw cursor.error("unexpected argument '\(extra)'") }
            return .schema(domain, json: json)
        },
        CommandVerb(
            "install-schema",
            [("<schema file> [<etcd domain>] [--system]", "installs a schema for the suite it names (or in etcd)")]
        ) { (cursor: inout ArgumentCursor) throws(CommandLineError) in
            let file = try cursor.next("schema file")
            var system = false
            var domain: DomainReference?
            while let argument = cursor.peek {
                if argument == "--system" {
                    system = true
                    cursor.index += 1
                } else if domain == nil {
                    domain = try cursor.domain()
                } else {
                    throw cursor.error("unexpected argument '\(argument)'")
                }
            }
            if system, domain != nil { throw cursor.error("--system installs a file; a domain names etcd") }
            return .installSchema(file: file, domain: domain, system: system)
        },
    ]
}

extension ArgumentCursor {
    /// The remaining arguments without `--json` (or `-json`), and whether it was there; any other option is refused.
    mutating func restWithJSONFlag() throws(CommandLineError) -> (arguments: [String], json: Bool) {
        var arguments: [String] = []
        var json = false
        for argument in rest() {
            if argument == "--json" || argument == "-json" {
                json = true
            } else if argument.hasPrefix("-") {
                throw error("unknown option '\(argument)'")
            } else {
                arguments.append(argument)
            }
        }
        return (arguments, json)
    }
}
