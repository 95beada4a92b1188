import Foundation

/// The on-disk formats of a suite file.
public enum PropertyListFormat: String, Sendable, Hashable {
    /// Apple's binary format (`bplist00`).
    case binary
    /// The XML format Foundation's UserDefaults writes on Linux.
    case xml
    /// The old-style (OpenStep) text format the `defaults` command prints.
    case openStep
}

/// Reads and writes whole property lists.
///
/// A native codec: binary (`bplist00`), XML and old-style text, written for
/// ``PropertyListValue`` without going through Foundation's `PropertyListSerialization`
/// (over 20 times slower on Linux), and compatible with it both ways.
package enum PropertyListCodec {
    /// Detects the format of `data` from its first bytes.
    package static func detectFormat(of data: Data) -> PropertyListFormat {
        if data.starts(with: "bplist".utf8) { return .binary }
        // Skip a UTF-8 byte-order mark and leading white space.
        var index = data.startIndex
        if data.starts(with: [0xEF, 0xBB, 0xBF]) { index += 3 }
        while index < data.endIndex, [0x20, 0x09, 0x0A, 0x0D].contains(data[index]) { index += 1 }
        if index < data.endIndex, data[index] == UInt8(ascii: "<") { return .xml }
        return .openStep
    }

    /// Decodes a whole property list.
    ///
    /// - Returns: The value and the format it was in.
    /// - Throws: ``PropertyListError`` naming what could not be read, and where.
    package static func decode(_ data: Data) throws(PropertyListError) -> (
        value: PropertyListValue, format: PropertyListFormat
    ) {
        let format = detectFormat(of: data)
        switch format {
        case .openStep:
            guard let text = String(data: data, encoding: .utf8) else {
                throw PropertyListError("the text is not valid UTF-8")
            }
            do {
                return (try OpenStepParser.parse(text), .openStep)
            } catch let error as PropertyListError {
                throw error
            } catch {
                throw PropertyListError("\(error)")
            }
        case .binary:
            return (try BinaryPropertyListReader.decode(data), .binary)
        case .xml:
            return (try XMLPropertyListReader.decode(data), .xml)
        }
    }

    /// Encodes a whole property list in `format`.
    ///
    /// Every ``PropertyListValue`` has a form in each format, so no format fails today; the signature
    /// throws so that a format that cannot hold every value can be added without changing callers.
    package static func encode(_ value: PropertyListValue, format: PropertyListFormat) throws(PropertyListError) -> Data
    {
        switch format {
        case .openStep:
            return Data(OpenStepWriter.string(for: value, style: .typed).utf8)
        case .binary:
            return BinaryPropertyListWriter.encode(value)
        case .xml:
            return XMLPropertyListWriter.encode(value)
        }
    }
}
