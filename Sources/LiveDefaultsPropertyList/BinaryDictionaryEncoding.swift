import Foundation

/// The binary property list of a dictionary, kept with where each entry's objects lie in it, so
/// that encoding the dictionary again after a few changes re-encodes only the changed entries
/// and copies the others' bytes (docs/design.md, "The codec: the binary encoder").
///
/// An entry whose value holds no references (a string, a number, data…) is its key's object and
/// its value's, side by side in the file: copied as they are, since such objects do not depend on
/// anything else in the file. An entry whose value is an array or a dictionary is encoded again
/// each time (its references are object numbers, which move). The containers, the offset table
/// and the trailer are written anew each time, as ``BinaryPropertyListWriter`` writes them.
///
/// The encoding is exactly the dictionary it was made from with the changes applied since; what
/// keeps it in step with a suite's values is the caller's (the file backend keeps it only for the
/// values it wrote, at their version).
package struct BinaryDictionaryEncoding {
    /// One entry of the dictionary, and where its objects lie in ``data``.
    private struct Entry {
        var key: String
        var value: PropertyListValue
        /// Where the key's object starts in ``data``.
        var start: Int
        /// The key object's bytes.
        var keyLength: Int
        /// The key's and the value's bytes together, or -1 when they are to be encoded (a new or
        /// changed value, or one that holds references).
        var length: Int
    }

    /// The file, as last encoded.
    package private(set) var data: Data
    private var entries: [Entry]
    /// Each key's place in `entries`; made at the first change (a whole encode does not need it).
    private var places: [String: Int]?

    /// Encodes `values` whole.
    package init(_ values: [String: PropertyListValue]) {
        entries = []
        entries.reserveCapacity(values.count)
        for (key, value) in values { entries.append(Entry(key: key, value: value, start: 0, keyLength: 0, length: -1)) }
        data = Data()
        data = encode(copyingFrom: nil)
    }

    /// The number of entries.
    package var count: Int { entries.count }

    /// The dictionary this encodes.
    package var values: [String: PropertyListValue] {
        Dictionary(uniqueKeysWithValues: entries.lazy.map { ($0.key, $0.value) })
    }

    /// Sets `key` to `value` (nil removes it) and returns the new file; every other entry's bytes
    /// are copied from the last one.
    package mutating func applying<Changes: Collection>(
        _ changes: Changes
    ) -> Data where Changes.Element == (key: String, value: PropertyListValue?) {
        var places = self.places ?? Self.places(of: entries)
        self.places = nil  // (uniquely referenced while it changes)
        defer { self.places = places }
        if patch(with: changes, places: places) {
            for (key, value) in changes { if let place = places[key], let value { entries[place].value = value } }
            return data
        }
        for (key, value) in changes {
            if let place = places[key] {
                if let value {
                    entries[place].value = value
                    entries[place].length = -1
                } else {
                    // The last entry takes the removed one's place.
                    let last = entries.removeLast()
                    places[key] = nil
                    if place < entries.count {
                        places[last.key] = place
                        entries[place] = last
                    }
                }
            } else if let value {
                places[key] = entries.count
                entries.append(Entry(key: key, value: value, start: 0, keyLength: 0, length: -1))
            }
        }
        data = encode(copyingFrom: data)
        return data
    }

    /// Overwrites each changed value's bytes in ``data`` and returns true, when every change
    /// replaces a value without references by one that encodes to as many bytes (a counter, a flag,
    /// a date, a real): no object moves, so every offset, reference and the trailer stay as they
    /// were, and the file is the one a whole encode in the same order would write. Returns false,
    /// changing nothing, otherwise.
    ///
    /// The bytes change in place when this encoding holds the only reference to them (the file
    /// backend lets go of its own first): a flush then touches the changed objects' bytes only,
    /// not a copy of the whole file. Any other holder of the last file's `Data` keeps it as it was.
    private mutating func patch<Changes: Collection>(
        with changes: Changes, places: [String: Int]
    ) -> Bool where Changes.Element == (key: String, value: PropertyListValue?) {
        var patches: [(at: Int, object: [UInt8])] = []
        for (key, value) in changes {
            guard let value, let place = places[key], entries[place].length > 0,
                let object = BinaryPropertyListWriter.objectBytes(value),
                object.count == entries[place].length - entries[place].keyLength
            else { return false }
            patches.append((entries[place].start + entries[place].keyLength, object))
        }
        data.withUnsafeMutableBytes { file in
            for (at, object) in patches {
                object.withUnsafeBytes { source in
                    // (Slicing checks the bounds: an entry outside the file stops here.)
                    UnsafeMutableRawBufferPointer(rebasing: file[at..<(at + source.count)]).copyMemory(from: source)
                }
            }
        }
        return true
    }

    private static func places(of entries: [Entry]) -> [String: Int] {
        var places: [String: Int] = [:]
        places.reserveCapacity(entries.count)
        for (place, entry) in entries.enumerated() { places[entry.key] = place }
        return places
    }

    /// Writes the file: entries with bytes in `old` copied, the others encoded, then the root
    /// dictionary, the offset table and the trailer. Notes where each entry now lies.
    private mutating func encode(copyingFrom old: Data?) -> Data {
        let count = entries.count
        var writer = BinaryPropertyListWriter.Writer(estimatedObjects: 2 * count + 1, estimatedBytes: old?.count ?? 0)
        let (place, first) = writer.beginContainer(0xD, count: count, slots: 2 * count)
        let old = old ?? Data()
        old.withUnsafeBytes { (oldBytes: UnsafeRawBufferPointer) in
            entries.withUnsafeMutableBufferPointer { entries in
                for index in 0..<count {
                    let start = writer.position
                    let length = entries[index].length
                    let keyReference: Int
                    let valueReference: Int
                    if length > 0, let oldStart = oldBytes.baseAddress {
                        // Unchanged, and holds no references: the same bytes, at a new offset.
                        let from = entries[index].start
                        precondition(
                            from >= 8 && from + length <= oldBytes.count, "binary encoding: entry outside the file")
                        keyReference = writer.begin(size: length)
                        writer.put(oldStart + from, count: length)
                        valueReference = writer.note(objectAt: start + entries[index].keyLength)
                    } else {
                        keyReference = writer.write(string: entries[index].key)
                        let keyLength = writer.position - start
                        valueReference = writer.write(entries[index].value)
                        // A reference below 0 is a container's: encoded again next time.
                        entries[index].keyLength = keyLength
                        entries[index].length = valueReference >= 0 ? writer.position - start : -1
                    }
                    entries[index].start = start
                    writer.references[first + index] = keyReference
                    writer.references[first + count + index] = valueReference
                }
            }
        }
        return writer.finish(top: ~place)
    }
}
