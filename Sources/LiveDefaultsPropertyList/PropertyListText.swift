/// Making Strings from the bytes of a property-list file, for the readers' hot paths.
///
/// The generic validating initialisers cost several times more than the work needed when the
/// bytes are ASCII (almost every key and most values): ASCII is checked a word at a time and
/// the String is built by copying, without a second validation pass.
enum PropertyListText {
    /// Whether the `count` bytes at `start` are all ASCII.
    @inline(__always)
    static func isASCII(_ start: UnsafePointer<UInt8>, count: Int) -> Bool {
        var index = 0
        let raw = UnsafeRawPointer(start)
        while index + 8 <= count {
            if raw.loadUnaligned(fromByteOffset: index, as: UInt64.self) & 0x8080_8080_8080_8080 != 0 { return false }
            index += 8
        }
        while index < count {
            if start[index] >= 0x80 { return false }
            index += 1
        }
        return true
    }

    /// The `count` bytes at `start`, which must be ASCII, as a String.
    @inline(__always)
    static func string(ascii start: UnsafePointer<UInt8>, count: Int) -> String {
        if count == 0 { return "" }
        // Small strings are built in place; larger ones are copied into their storage once (the
        // initialiser's own check of ASCII is cheap).
        return String(unsafeUninitializedCapacity: count) { buffer in
            buffer.baseAddress.unsafelyUnwrapped.initialize(from: start, count: count)
            return count
        }
    }

    /// The `count` bytes at `start` as a String, nil when they are not valid UTF-8.
    @inline(__always)
    static func string(validatingUTF8 start: UnsafePointer<UInt8>, count: Int) -> String? {
        if isASCII(start, count: count) { return string(ascii: start, count: count) }
        return String(validating: UnsafeBufferPointer(start: start, count: count), as: UTF8.self)
    }
}
