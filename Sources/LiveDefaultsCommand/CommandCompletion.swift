/// The hidden verb `defaults __complete <word> …` that the shell completions call (packaging/completions), so
/// that no shell ever parses a property list: the words are those typed after the command, the last the one
/// being completed (empty for a new word); the answer is one candidate per line, filtered by that word.
///
/// Candidates: verbs; domains (`-g` and the suites in the config directory); the keys of the domain typed,
/// read through the store without watching it; value flags after `write`'s key; Booleans after `-bool`.
/// Nothing is completed over the network: an `etcd://` domain has no key candidates.
package enum CommandCompletion {
    /// The name of the hidden verb.
    package static let verb = "__complete"

    /// The candidates for the last of `words`, in the order they are shown.
    package static func candidates(_ words: [String], domains: CommandDomains) -> [String] {
        let current = words.last ?? ""
        var before = Array(words.dropLast())[...]
        if before.first == "-currentHost" {
            before.removeFirst()
        } else if before.first == "-host" {
            before.removeFirst()
            guard before.popFirst() != nil else { return [] }
        }
        guard let verb = before.popFirst()?.lowercased() else {
            let options = words.count == 1 && current.hasPrefix("-") ? ["-currentHost", "-host"] : []
            return filter(CommandVerb.all.map(\.name) + options, by: current)
        }
        let arguments = Array(before)
        switch verb {
        case "read", "read-type", "write", "rename", "delete", "remove", "import", "export", "watch", "history",
            "diff", "rollback":
            break
        default:
            return []
        }
        guard let domainArgument = arguments.first else {
            // A path is left to the shell's file completion.
            if current.contains("/") { return [] }
            return filter(["-g"] + domains.domainNames(), by: current)
        }
        let keyPosition = arguments.count == 1
        switch verb {
        case "read", "read-type", "delete", "remove", "rename":
            return keyPosition ? filter(keys(of: domainArgument, in: domains), by: current) : []
        case "watch":
            let typed = Set(arguments.dropFirst())
            return filter(
                keys(of: domainArgument, in: domains).filter { !typed.contains($0) } + ["--json"], by: current)
        case "write":
            if keyPosition { return filter(keys(of: domainArgument, in: domains), by: current) }
            return filter(valueWords(after: arguments.dropFirst(2)), by: current)
        case "history", "rollback":
            // After an option that takes a value (a time, an entry, a number), nothing to offer.
            if let last = arguments.last, ["--since", "--limit", "--to"].contains(last) { return [] }
            let options = verb == "history" ? ["--since", "--limit", "--json", "--show-secrets"] : ["--to"]
            let typed = Set(arguments.dropFirst())
            let key = typed.contains { !$0.hasPrefix("-") } ? [] : keys(of: domainArgument, in: domains)
            return filter(key + options.filter { !typed.contains($0) }, by: current)
        case "diff":
            if arguments.last == "--since" { return [] }
            let typed = Set(arguments.dropFirst())
            return filter(["--since", "--json", "--show-secrets"].filter { !typed.contains($0) }, by: current)
        default:
            // import and export take a file: the shell's own completion.
            return []
        }
    }

    /// What may follow `write <domain> <key>` and the value words already typed.
    private static func valueWords(after typed: ArraySlice<String>) -> [String] {
        let flags = ValueArguments.Flag.all
        guard let first = typed.first else { return flags.flatMap(\.names) }
        if let last = typed.last, last == "-bool" || last == "-boolean" { return ["YES", "NO"] }
        guard let flag = ValueArguments.Flag.named(first), flag.kind.isContainer else { return [] }
        // Inside -array or -dict, each element may have a scalar flag.
        if let last = typed.last, typed.count > 1, let scalar = ValueArguments.Flag.named(last),
            !scalar.kind.isContainer
        {
            return []
        }
        return flags.filter { !$0.kind.isContainer }.flatMap(\.names)
    }

    /// The keys of the domain named by `argument`, sorted; none when it cannot be read or is remote.
    private static func keys(of argument: String, in domains: CommandDomains) -> [String] {
        var cursor = ArgumentCursor(arguments: [argument], usage: "")
        guard let domain = try? cursor.domain() else { return [] }
        if case .remote = domain { return [] }
        let opened =
            try? domains.openForReading?(domain, domains.directoryPath)
            ?? domains.open(domain, domains.directoryPath, false)
        guard let store = opened else { return [] }
        return store.persistentValues().keys.filter { !$0.contains("\n") }
            .sorted { $0.utf16.lexicographicallyPrecedes($1.utf16) }
    }

    private static func filter(_ candidates: [String], by prefix: String) -> [String] {
        candidates.filter { $0.hasPrefix(prefix) }
    }
}
