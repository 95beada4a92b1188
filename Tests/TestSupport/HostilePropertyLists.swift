import Foundation

/// Property lists that break naive readers, shared by the codec's tests and the store's.
public enum HostilePropertyLists {
    /// A binary property list of `depth` arrays each holding the next (two-byte references, so
    /// at most 65,535 deep).
    public static func nestedBinaryArrays(depth: Int) -> Data {
        var bytes = Array("bplist00".utf8)
        var offsets: [Int] = []
        for index in 0..<depth {
            offsets.append(bytes.count)
            bytes += index < depth - 1 ? [0xA1, UInt8((index + 1) >> 8), UInt8((index + 1) & 0xFF)] : [0xA0]
        }
        let table = bytes.count
        for offset in offsets { bytes += [UInt8(offset >> 16), UInt8((offset >> 8) & 0xFF), UInt8(offset & 0xFF)] }
        bytes += [0, 0, 0, 0, 0, 0, 3, 2]
        func be(_ value: Int) -> [UInt8] { (0..<8).reversed().map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) } }
        bytes += be(depth) + be(0) + be(table)
        return Data(bytes)
    }
}
