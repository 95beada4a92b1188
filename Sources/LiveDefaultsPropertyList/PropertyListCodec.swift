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
    /// - Throws: ``DefaultsError`` with code ``DefaultsError/Code/malformedPropertyList``.
    package static func decode(_ data: Data) throws(DefaultsError) -> (
        value: PropertyListValue, format: PropertyListFormat
    ) {
        let format = detectFormat(of: data)
        switch format {
        case .openStep:
            guard let text = String(data: data, encoding: .utf8) else {
                throw DefaultsError(.malformedPropertyList, "the text is not valid UTF-8")
            }
            do {
                return (try OpenStepParser.parse(text), .openStep)
            } catch let error as DefaultsError {
                throw error
            } catch {
                throw DefaultsError(.malformedPropertyList, "\(error)", underlying: SendableDescription(error))
            }
        case .binary:
            return (try BinaryPropertyListReader.decode(data), .binary)
        case .xml:
            return (try XMLPropertyListReader.decode(data), .xml)
        }
    }

    /// Encodes a whole property list in `format`.
    package static func encode(_ value: PropertyListValue, format: PropertyListFormat) throws(DefaultsError) -> Data {
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

/// A non-Sendable error kept by its description, so it can travel inside ``DefaultsError``.
package struct SendableDescription: Error, Sendable, CustomStringConvertible {
    package let description: String
    package init(_ error: any Error) { description = String(describing: error) }
}
