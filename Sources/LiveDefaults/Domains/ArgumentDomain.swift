/// The argument domain: `-key value` pairs in the process's arguments, highest in the search list.
///
/// Values are parsed as old-style property-list text, as macOS does: `-fontSize 14` gives the
/// string "14" (which `integer(forKey:)` reads as 14), `-names '(a, b)'` an array. A value that does
/// not parse is taken as the plain string.
package enum ArgumentDomain {
    /// The process's argument domain, parsed once.
    package static let current: [String: PropertyListValue] = parse(Array(CommandLine.arguments.dropFirst()))

    /// Parses `-key value` pairs; an argument that does not start with a single `-` is skipped.
    package static func parse(_ arguments: [String]) -> [String: PropertyListValue] {
        var values: [String: PropertyListValue] = [:]
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            guard argument.count > 1, argument.hasPrefix("-"), !argument.hasPrefix("--"), index + 1 < arguments.count
            else {
                index += 1
                continue
            }
            let text = arguments[index + 1]
            values[String(argument.dropFirst())] = (try? OpenStepParser.parse(text)) ?? .string(text)
            index += 2
        }
        return values
    }
}
