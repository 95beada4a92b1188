import Foundation
import LiveDefaults

/// A domain as the `defaults` command names it.
package enum DomainReference: Hashable, Sendable {
    /// The global domain: `-g`, `-globalDomain`, `NSGlobalDomain` (file `NSGlobalDomain.plist`).
    case global
    /// A suite by name, stored at `<config directory>/<name>.plist`.
    case named(String)
    /// A plist file given by path, kept as typed without its `.plist` extension (macOS's messages name it so);
    /// the file is this path with `.plist` appended, as on macOS.
    case path(String)
    /// A suite kept in etcd: `etcd://<host>:<port>/[<root>/]<suite>` (``RemoteSuiteAddress``).
    case remote(RemoteSuiteAddress)

    /// The global domain's name and file base name (`Defaults.globalDomain`).
    package static let globalDomainName = "NSGlobalDomain"

    /// The domain as macOS names it in listings (`read`, `find`) and in most messages: the global domain is
    /// `Apple Global Domain`.
    package var displayName: String {
        switch self {
        case .global: "Apple Global Domain"
        case .named(let name): name
        case .path(let path): path
        case .remote(let address): address.text
        }
    }

    /// The domain as CFPreferences names it, which macOS prints where a key is missing (`read`, `read-type`,
    /// `delete`): the global domain is `kCFPreferencesAnyApplication`.
    package var preferencesName: String {
        self == .global ? "kCFPreferencesAnyApplication" : displayName
    }
}

/// A change that `defaults write` makes to one key.
package enum WriteOperation: Hashable, Sendable {
    /// Store this value (replacing any value).
    case set(PropertyListValue)
    /// `-array-add`: append to the array (a missing key starts an empty array).
    case arrayAdd([PropertyListValue])
    /// `-dict-add`: add or replace entries of the dictionary (a missing key starts an empty dictionary).
    case dictionaryAdd([String: PropertyListValue])
}

/// One invocation of the `defaults` command, fully parsed and validated.
///
/// Parsing checks everything that can be checked without touching a domain (verbs, flags, the number of
/// arguments, every value), so bad input is rejected before any file is opened.
package enum DefaultsCommand: Hashable, Sendable {
    case help
    case readAll
    case read(DomainReference, key: String?)
    case readType(DomainReference, key: String)
    case write(DomainReference, key: String, WriteOperation)
    case writeDomain(DomainReference, [String: PropertyListValue])
    case rename(DomainReference, from: String, to: String)
    case delete(DomainReference, key: String?)
    case domains
    case find(String)
    /// `source` is a file path, or `-` for standard input.
    case importDomain(DomainReference, source: String)
    /// `destination` is a file path (binary plist), or `-` for standard output (XML plist).
    case exportDomain(DomainReference, destination: String)
    case watch(DomainReference, keys: [String], json: Bool)
    /// `install-schema <file> [<domain>] [--system]`: the schema file, an `etcd://` domain (or the suite the file
    /// names), and whether it goes to the system directory instead of the user's.
    case installSchema(file: String, domain: DomainReference?, system: Bool)
    case describe(DomainReference, key: String?, json: Bool)
    case listKeys(DomainReference, json: Bool)
    case reset(DomainReference, key: String?, json: Bool)
    case schema(DomainReference, json: Bool)
    /// The command, printing secret values in full (`--show-secrets` after `read`, `watch`, `describe`, `find`, `explain`).
    indirect case showingSecrets(DefaultsCommand)
    /// `--version`: prints ``CommandVersion/text``.
    case version
    /// The hidden `__complete <word> …` of the shell completions (``CommandCompletion``).
    case complete([String])
    /// `read --system`: the domain's system-wide files (`$XDG_CONFIG_DIRS`).
    case readSystemWide(DomainReference, key: String?)
    /// `explain`: every layer that holds the key, the winner marked.
    case explain(DomainReference, key: String, json: Bool)
    /// `defaults history <domain> [key] [--since <time or entry>] [--limit N] [--json]`.
    case history(DomainReference, key: String?, since: DefaultsHistoryPoint?, limit: Int?, json: Bool)
    /// `defaults diff <domain> --since <time or entry> [--json]`.
    case diff(DomainReference, since: DefaultsHistoryPoint, json: Bool)
    /// `defaults rollback <domain> [key] --to <time or entry>`.
    case rollback(DomainReference, key: String?, to: DefaultsHistoryPoint)
}

/// Bad command-line input, found before any domain is opened.
///
/// Two kinds: a malformed command line, for which macOS prints its usage on standard output and exits 255
/// (here ``line`` says what is wrong, on standard error); and a mistake macOS names in its own words
/// (``macOSMessage``, printed as is on standard error, with ``status``).
package struct CommandLineError: Error, Hashable, Sendable {
    /// The problem, e.g. "'abc' is not an integer".
    package var problem: String
    /// The usage of the verb concerned (or the general usage).
    package var usage: String
    /// macOS's message for this mistake, line breaks included; nil for a malformed command line.
    package var macOSMessage: String?
    /// The exit status: 255 for a malformed command line, else macOS's status for the message.
    package var status: Int32

    package init(_ problem: String, usage: String) {
        self.problem = problem
        self.usage = usage
        self.macOSMessage = nil
        self.status = 255
    }

    /// A mistake macOS reports in its own words; a line break is added when `message` lacks one at its end
    /// (as `NSLog` does).
    package static func macOS(_ message: String, status: Int32 = 1) -> CommandLineError {
        var error = CommandLineError(message, usage: CommandVerb.generalUsage)
        error.macOSMessage = message.hasSuffix("\n") ? message : message + "\n"
        error.status = status
        return error
    }

    /// The one line printed on standard error for a malformed command line.
    package var line: String {
        "defaults: \(problem). Usage: \(usage) (see 'defaults help')"
    }
}

extension DefaultsCommand {
    /// Parses the arguments after the program name.
    ///
    /// ```swift
    /// try DefaultsCommand.parse(["write", "com.example", "count", "-int", "3"])
    /// // .write(.named("com.example"), key: "count", .set(.integer(3)))
    /// ```
    ///
    /// - Throws: ``CommandLineError`` naming the problem and the usage.
    package static func parse(_ arguments: [String]) throws(CommandLineError) -> DefaultsCommand {
        var remaining = arguments[...]
        if remaining.first == "--version" {
            guard remaining.count == 1 else {
                throw CommandLineError("unexpected argument '\(remaining[1])'", usage: "defaults --version")
            }
            return .version
        }
        if remaining.first == CommandCompletion.verb { return .complete(Array(remaining.dropFirst())) }
        // The host options select the domains' ByHost files; the runner reads them (`HostOption`).
        if remaining.first == "-currentHost" {
            remaining.removeFirst()
        } else if remaining.first == "-host" {
            remaining.removeFirst()
            guard remaining.popFirst() != nil else {
                throw CommandLineError("-host needs a host name", usage: CommandVerb.generalUsage)
            }
        }
        guard let verbName = remaining.popFirst() else {
            throw CommandLineError("no verb given", usage: CommandVerb.generalUsage)
        }
        guard let verb = CommandVerb.named(verbName.lowercased()) else {
            let problem =
                verbName.hasPrefix("-") ? "unknown option '\(verbName)'" : "unknown verb '\(verbName)'"
            throw CommandLineError(problem, usage: CommandVerb.generalUsage)
        }
        var arguments = Array(remaining)
        // A secret is printed in full only when asked for, after a verb that prints values.
        let showsSecrets =
            CommandVerb.printingValues.contains(verb.name)
            && arguments.prefix { !verb.endsOptionsAtDoubleDash || $0 != "--" }.contains("--show-secrets")
        if showsSecrets {
            // After `--`, which ends the history verbs' options, `--show-secrets` would be the key.
            let optionsEnd =
                verb.endsOptionsAtDoubleDash ? arguments.firstIndex(of: "--") ?? arguments.count : arguments.count
            arguments = arguments[..<optionsEnd].filter { $0 != "--show-secrets" } + arguments[optionsEnd...]
        }
        var cursor = ArgumentCursor(arguments: arguments, usage: verb.usage)
        let command = try verb.parse(&cursor)
        return showsSecrets ? .showingSecrets(command) : command
    }
}

/// The arguments of one verb, consumed left to right.
package struct ArgumentCursor {
    var arguments: [String]
    var index = 0
    /// The usage quoted in errors, made only when there is an error: joining a verb's forms costs a
    /// one-shot command's start-up (docs/design.md, "The `defaults` command's start-up").
    private let makeUsage: @Sendable () -> String
    var usage: String { makeUsage() }

    init(arguments: [String], usage: @autoclosure @escaping @Sendable () -> String) {
        self.arguments = arguments
        self.makeUsage = usage
    }

    var isAtEnd: Bool { index == arguments.count }
    var remainingCount: Int { arguments.count - index }
    var peek: String? { isAtEnd ? nil : arguments[index] }

    func error(_ problem: String) -> CommandLineError { CommandLineError(problem, usage: usage) }

    mutating func next(_ what: String) throws(CommandLineError) -> String {
        guard let argument = peek else { throw error("missing \(what)") }
        index += 1
        return argument
    }

    mutating func rest() -> [String] {
        defer { index = arguments.count }
        return Array(arguments[index...])
    }

    func expectEnd() throws(CommandLineError) {
        if let extra = peek { throw error("unexpected argument '\(extra)'") }
    }

    mutating func domain() throws(CommandLineError) -> DomainReference {
        let argument = try next("domain")
        switch argument {
        case "-g", "-globalDomain", "NSGlobalDomain", "Apple Global Domain":
            return .global
        case "-app":
            // There are no application bundles to look a name up in, so no application is ever found.
            let application = try next("application name after -app")
            throw .macOS("Couldn't find an application named \"\(application)\"; defaults unchanged")
        case "":
            throw error("the domain name is empty")
        case ".", "..":
            throw error("'\(argument)' is not a domain name")
        default:
            if RemoteSuiteAddress.isRemote(argument) {
                do {
                    return .remote(try RemoteSuiteAddress(argument))
                } catch {
                    throw self.error(error.description)
                }
            }
            if argument.contains("/") {
                return .path(argument.hasSuffix(".plist") ? String(argument.dropLast(".plist".count)) : argument)
            }
            if argument.hasPrefix("-") { throw error("unknown option '\(argument)'") }
            // The library's one rule for suite names (SuiteLocation).
            do throws(DefaultsError) {
                try SuiteLocation.validate(suiteName: argument)
            } catch {
                throw self.error(error.message)
            }
            return .named(argument)
        }
    }

    mutating func key(_ what: String = "key") throws(CommandLineError) -> String {
        try next(what)
    }
}
