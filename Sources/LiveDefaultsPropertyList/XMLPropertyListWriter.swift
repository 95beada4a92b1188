import Foundation

/// Writes Apple's XML property-list format the way Foundation does: the standard header, tab
/// indentation, dictionary keys sorted, `<`, `>` and `&` escaped.
package enum XMLPropertyListWriter {
    package static func encode(_ value: PropertyListValue) -> Data {
        var output: [UInt8] = []
        output.reserveCapacity(4096)
        output.append(contentsOf: Self.header.utf8)
        write(value, depth: 0, into: &output)
        output.append(contentsOf: "</plist>\n".utf8)
        return Data(output)
    }

    private static let header = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">

        """

    private static func indent(_ depth: Int, _ output: inout [UInt8]) {
        for _ in 0..<depth { output.append(0x09) }
    }

    private static func element(_ name: String, _ text: String, depth: Int, _ output: inout [UInt8]) {
        indent(depth, &output)
        output.append(contentsOf: "<\(name)>".utf8)
        appendEscaped(text, &output)
        output.append(contentsOf: "</\(name)>\n".utf8)
    }

    private static func appendEscaped(_ text: String, _ output: inout [UInt8]) {
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "<"): output.append(contentsOf: "&lt;".utf8)
            case UInt8(ascii: ">"): output.append(contentsOf: "&gt;".utf8)
            case UInt8(ascii: "&"): output.append(contentsOf: "&amp;".utf8)
            default: output.append(byte)
            }
        }
    }

    private static func write(_ value: PropertyListValue, depth: Int, into output: inout [UInt8]) {
        switch value {
        case .string(let string):
            element("string", string, depth: depth, &output)
        case .integer(let number):
            element("integer", String(number), depth: depth, &output)
        case .unsignedInteger(let number):
            element("integer", String(number), depth: depth, &output)
        case .real, .float:
            // Foundation writes a Float as the Double it widens to; XML has one kind of real.
            let number = value.widenedReal ?? 0
            let text =
                number.isNaN ? "nan" : number.isInfinite ? (number < 0 ? "-infinity" : "+infinity") : realText(number)
            element("real", text, depth: depth, &output)
        case .bool(let flag):
            indent(depth, &output)
            output.append(contentsOf: (flag ? "<true/>\n" : "<false/>\n").utf8)
        case .date(let date):
            element("date", dateText(date), depth: depth, &output)
        case .data(let data):
            element("data", data.base64EncodedString(), depth: depth, &output)
        case .array(let elements):
            indent(depth, &output)
            if elements.isEmpty {
                output.append(contentsOf: "<array/>\n".utf8)
                return
            }
            output.append(contentsOf: "<array>\n".utf8)
            for element in elements { write(element, depth: depth + 1, into: &output) }
            indent(depth, &output)
            output.append(contentsOf: "</array>\n".utf8)
        case .dictionary(let entries):
            indent(depth, &output)
            if entries.isEmpty {
                output.append(contentsOf: "<dict/>\n".utf8)
                return
            }
            output.append(contentsOf: "<dict>\n".utf8)
            for (key, entry) in entries.sorted(by: { $0.key < $1.key }) {
                element("key", key, depth: depth + 1, &output)
                write(entry, depth: depth + 1, into: &output)
            }
            indent(depth, &output)
            output.append(contentsOf: "</dict>\n".utf8)
        }
    }

    /// The shortest text that reads back as the same Double, without Swift's trailing ".0".
    static func realText(_ number: Double) -> String {
        let text = String(number)
        return text.hasSuffix(".0") ? String(text.dropLast(2)) : text
    }

    /// `YYYY-MM-DDTHH:MM:SSZ` in UTC, whole seconds (as the XML format stores dates).
    static func dateText(_ date: Date) -> String {
        let seconds = Int(date.timeIntervalSince1970.rounded(.down))
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = CalendarArithmetic.civilFromDays(Int64(days))
        func two<Value: BinaryInteger>(_ value: Value) -> String { value < 10 ? "0\(value)" : String(value) }
        // Four characters at least, a sign counted, as Foundation writes them ("-001" for 2 BC):
        // what its reader and ours read back.
        let digits = String(year.magnitude)
        let yearText =
            (year < 0 ? "-" : "") + String(repeating: "0", count: max(0, (year < 0 ? 3 : 4) - digits.count)) + digits
        return
            "\(yearText)-\(two(month))-\(two(day))T\(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60))Z"
    }
}
