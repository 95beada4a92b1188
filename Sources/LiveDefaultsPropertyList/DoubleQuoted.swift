/// `text` in double quotes with the escapes that JSON and the OpenStep format share: `\"`, `\\`,
/// `\n`, `\r` and `\t`. Every other scalar goes to `other`, which appends it as it is or escaped in
/// its format's own way (JSON's `\u001f`, OpenStep's `\U001f`).
///
/// - Parameters:
///   - text: The text.
///   - other: Appends a scalar that has no shared escape to the output.
/// - Returns: The quoted text.
package func doubleQuoted(_ text: String, other: (Unicode.Scalar, inout String) -> Void) -> String {
    var output = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": output += "\\\""
        case "\\": output += "\\\\"
        case "\n": output += "\\n"
        case "\r": output += "\\r"
        case "\t": output += "\\t"
        default: other(scalar, &output)
        }
    }
    return output + "\""
}

/// `value` as four lower-case hexadecimal digits after `prefix` (`\u` for JSON, `\U` for OpenStep).
package func hexEscape(_ prefix: String, _ value: UInt32) -> String {
    let hex = String(value, radix: 16)
    return prefix + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
}
