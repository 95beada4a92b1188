import Foundation
import LiveDefaultsPropertyList

// A libFuzzer target for the property-list readers (binary, XML and old-style text).
//
// Build and run (see README, "The property-list codec"):
//   Fuzz/run.sh 60        # fuzz for 60 seconds
//
// Every input must either decode or throw PropertyListError; a crash, a trap, a sanitizer report
// or a timeout is a bug. A value that decodes must also survive an encode/decode round trip in
// the binary and XML formats.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    guard let start else { return 0 }
    let data = Data(bytes: start, count: count)
    guard let (value, _) = try? PropertyListCodec.decode(data) else { return 0 }
    for format in [PropertyListFormat.binary, .xml] {
        guard let encoded = try? PropertyListCodec.encode(value, format: format) else {
            fatalError("a decoded value could not be encoded as \(format)")
        }
        guard let back = try? PropertyListCodec.decode(encoded).value else {
            fatalError("our own \(format) output did not decode")
        }
        // NaN is never equal to itself; compare the rest.
        if !containsNaN(value), back != value, format == .binary {
            fatalError("binary round trip changed the value")
        }
    }
    // A dictionary's encoding kept between writes: encoded whole, then again after a change that
    // adds the whole value under a new key and one that removes a key (copied entries, new ones).
    if case .dictionary(let original) = value, !containsNaN(value) {
        var encoding = BinaryDictionaryEncoding(original)
        guard (try? PropertyListCodec.decode(encoding.data).value) == value else {
            fatalError("a kept dictionary encoding did not read back")
        }
        // The same value again: the same size, so its bytes are overwritten in place.
        if let (key, same) = original.first {
            guard (try? PropertyListCodec.decode(encoding.applying([(key, same)])).value) == value else {
                fatalError("a kept dictionary encoding did not read back after a change of the same size")
            }
        }
        var changes: [(key: String, value: PropertyListValue?)] = [("\u{1}fuzz", value)]
        if let removed = original.keys.first { changes.append((removed, nil)) }
        var expected = original
        for (key, change) in changes { expected[key] = change }
        guard (try? PropertyListCodec.decode(encoding.applying(changes)).value) == .dictionary(expected) else {
            fatalError("a kept dictionary encoding did not read back after changes")
        }
    }
    return 0
}
