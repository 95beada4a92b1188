import Foundation

/// Writes old-style (OpenStep) property-list text.
///
/// The default style, ``Style/defaultsRead``, is what macOS `defaults read` prints (which is
/// `-[NSDictionary description]`):
///
/// ```
/// {
///     count = 14;
///     "font-size" = "12.5";
///     recent =     (
///         a,
///         "b c"
///     );
/// }
/// ```
///
/// - Four spaces per level; a nested container starts on its key's line, after the indentation of its own
///   level (hence `recent =     (`), and inside an array each nested container is indented twice.
/// - Dictionary keys sorted in ascending order (`-[NSDictionary description]` sorts keys that respond to
///   `compare:`; ordering is by UTF-16 code units, as `compare:` without options does).
/// - Strings, numbers and dates inside a container are quoted unless they are non-empty and entirely ASCII
///   letters and digits (so `"tile-data"`, `"_CFURLString"`, `"0.5"`, `"-1"` and `""` are quoted). Inside
///   quotes `"` and `\` are escaped, line breaks and tabs appear as `\n`, `\r`, `\t`, and every other
///   character outside printable ASCII as `\U` and four hex digits per UTF-16 unit (`\U00e9`).
/// - Integers plainly, reals as `%.16g` (`NSNumber`'s format for doubles), Booleans as `1` and `0`, dates as
///   `2024-01-01 12:00:00 +0000`, data as `{length = 4, bytes = 0xdeadbeef}`, abbreviated past 24 bytes to
///   the first 16 and last 8 (`{length = 55, bytes = 0x636f6d2e 6170706c 652e7175 69636b74 ... 6f746f2d 696e666f }`).
/// - A value on its own (not inside a container) is printed without quotes, as `defaults read domain key` does.
///
/// ``Style/typed`` writes the same layout in a form ``OpenStepParser`` reads back to the same value: every
/// string quoted when CFPropertyList would need it, data in full (`<deadbeef 01>`), and GNUstep's typed
/// forms for the kinds old-style text lacks (`<*I14>`, `<*R1.5>`, `<*BY>`, `<*D2024-01-01 12:00:00 +0000>`).
/// Dates keep whole seconds only.
package enum OpenStepWriter {
    /// How values are spelled.
    package enum Style: Sendable, Hashable {
        /// Exactly as macOS `defaults read` prints; readable but lossy (types, long data).
        case defaultsRead
        /// Reads back to the same value with ``OpenStepParser`` (GNUstep typed extensions for numbers,
        /// Booleans and dates).
        case typed
    }

    /// The text `defaults read` prints for `value`.
    package static func string(for value: PropertyListValue) -> String {
        string(for: value, style: .defaultsRead)
    }

    /// The text for `value` in `style`.
    package static func string(for value: PropertyListValue, style: Style) -> String {
        var output = ""
        switch (style, value) {
        case (_, .array), (_, .dictionary):
            append(value, level: 0, style: style, to: &output)
        case (.defaultsRead, .string(let string)):
            output = string
        case (.defaultsRead, _):
            output = scalarText(value, style: style)
        case (.typed, _):
            output = element(value, style: style)
        }
        return output
    }

    /// `value` on one line in ``Style/defaultsRead`` spelling: `(a, "b c")`, `{k = 1; n = (x); }`; strings
    /// quoted when they need it even on their own (for one-line reports such as `defaults watch`).
    package static func singleLineString(for value: PropertyListValue) -> String {
        switch value {
        case .array(let elements):
            return "(" + elements.map(singleLineString).joined(separator: ", ") + ")"
        case .dictionary(let entries):
            let sorted = entries.sorted(by: { $0.key.utf16.lexicographicallyPrecedes($1.key.utf16) })
            return "{"
                + sorted.map { key, entry in
                    quotedIfNeeded(key, style: .defaultsRead) + " = " + singleLineString(for: entry) + "; "
                }.joined() + "}"
        default:
            return element(value, style: .defaultsRead)
        }
    }

    // MARK: Layout

    private static func indent(_ level: Int) -> String { String(repeating: "    ", count: level) }

    /// Appends a container as `-descriptionWithLocale:indent:` prints it at `level`, starting with that
    /// level's indentation.
    private static func append(_ value: PropertyListValue, level: Int, style: Style, to output: inout String) {
        switch value {
        case .dictionary(let entries):
            output += indent(level) + "{\n"
            for (key, entry) in entries.sorted(by: { $0.key.utf16.lexicographicallyPrecedes($1.key.utf16) }) {
                output += indent(level + 1) + quotedIfNeeded(key, style: style) + " = "
                appendElement(entry, level: level + 1, style: style, to: &output)
                output += ";\n"
            }
            output += indent(level) + "}"
        case .array(let elements):
            output += indent(level) + "(\n"
            for (index, element) in elements.enumerated() {
                output += indent(level + 1)
                appendElement(element, level: level + 1, style: style, to: &output)
                output += index + 1 < elements.count ? ",\n" : "\n"
            }
            output += indent(level) + ")"
        default:
            output += element(value, style: style)
        }
    }

    private static func appendElement(_ value: PropertyListValue, level: Int, style: Style, to output: inout String) {
        switch value {
        case .array, .dictionary: append(value, level: level, style: style, to: &output)
        default: output += element(value, style: style)
        }
    }

    /// A scalar as it appears inside a container.
    private static func element(_ value: PropertyListValue, style: Style) -> String {
        switch (style, value) {
        case (_, .string(let string)): quotedIfNeeded(string, style: style)
        case (.defaultsRead, .data): scalarText(value, style: style)
        case (.defaultsRead, _): quotedIfNeeded(scalarText(value, style: style), style: style)
        case (.typed, _): scalarText(value, style: style)
        }
    }

    /// A scalar's own text, unquoted.
    private static func scalarText(_ value: PropertyListValue, style: Style) -> String {
        switch (style, value) {
        case (_, .string(let string)): string
        case (.defaultsRead, .integer(let integer)): String(integer)
        case (.defaultsRead, .unsignedInteger(let integer)): String(integer)
        case (.defaultsRead, .real(let real)): String(format: "%.16g", real)
        case (.defaultsRead, .float(let real)): String(format: "%.7g", Double(real))
        case (.defaultsRead, .bool(let bool)): bool ? "1" : "0"
        case (.defaultsRead, .date(let date)): PropertyListDateFormat.string(from: date)
        case (.defaultsRead, .data(let data)): dataDescription(data)
        case (.typed, .integer(let integer)): "<*I\(integer)>"
        case (.typed, .unsignedInteger(let integer)): "<*I\(integer)>"
        case (.typed, .real(let real)): "<*R\(real)>"
        case (.typed, .float(let real)): "<*R\(real)>"
        case (.typed, .bool(let bool)): bool ? "<*BY>" : "<*BN>"
        case (.typed, .date(let date)): "<*D\(PropertyListDateFormat.string(from: date))>"
        case (.typed, .data(let data)): "<" + hexGroups(data[...]).joined(separator: " ") + ">"
        case (_, .array), (_, .dictionary): string(for: value, style: style)
        }
    }

    // MARK: Data

    /// `{length = 4, bytes = 0xdeadbeef}`, abbreviated past 24 bytes as `NSData`'s description is.
    private static func dataDescription(_ data: Data) -> String {
        let bytes = [UInt8](data)
        guard bytes.count > 24 else {
            return "{length = \(bytes.count), bytes = 0x\(bytes.map(hexByte).joined())}"
        }
        let head = hexGroups(bytes[0..<16]).map { $0 + " " }.joined()
        let tail = hexGroups(bytes[(bytes.count - 8)...]).map { $0 + " " }.joined()
        return "{length = \(bytes.count), bytes = 0x\(head)... \(tail)}"
    }

    private static func hexGroups<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> [String] {
        var groups: [String] = []
        var group = ""
        for (index, byte) in bytes.enumerated() {
            group += hexByte(byte)
            if index % 4 == 3 {
                groups.append(group)
                group = ""
            }
        }
        if !group.isEmpty { groups.append(group) }
        return groups
    }

    private static func hexByte(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0xF)]])
    }

    // MARK: Quoting

    /// `text` bare when the style allows it, else in double quotes with escapes.
    package static func quotedIfNeeded(_ text: String, style: Style) -> String {
        let bare: Bool
        switch style {
        case .defaultsRead:
            bare = !text.isEmpty && text.utf8.allSatisfy { isASCIILetterOrDigit($0) }
        case .typed:
            bare =
                !text.isEmpty
                && text.utf8.allSatisfy { isASCIILetterOrDigit($0) || Array("_$/:.-".utf8).contains($0) }
        }
        return bare ? text : quoted(text, style: style)
    }

    private static func isASCIILetterOrDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }

    private static func quoted(_ text: String, style: Style) -> String {
        doubleQuoted(text) { scalar, output in
            if (" "..."~").contains(scalar) || (style == .typed && scalar.value >= 0xA0) {
                output.unicodeScalars.append(scalar)  // The typed form is UTF-8 text; keep it readable.
            } else {
                for unit in scalar.utf16 { output += hexEscape("\\U", UInt32(unit)) }
            }
        }
    }
}
