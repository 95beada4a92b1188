import Foundation

/// A key of the in-memory tables every read and write looks up: a `String` with its hash computed
/// once, by a fast word-at-a-time hash instead of `Hasher`.
///
/// A `String` key costs a SipHash of its normalised contents on every lookup: two thirds of the
/// instructions of a read. Equality is still `String` equality (canonical equivalence), and the hash
/// agrees with it: an ASCII string hashes its bytes; a string that is canonically equivalent to an
/// ASCII one (only three scalars decompose to ASCII: U+037E, U+1FEF and U+212A KELVIN SIGN) hashes
/// as that ASCII string; any other string uses `String`'s own hash.
///
/// The fast hash is not keyed: the tables hold a process's own settings, which someone able to
/// choose the keys could make slow anyway by making them many.
struct HashedKey: Hashable, Sendable, CustomStringConvertible {
    let string: String
    private let hash: UInt64

    @inline(__always)
    init(_ string: String) {
        self.string = string
        // A small ASCII string (up to 15 bytes, the usual key) holds its bytes in its own two words:
        // they are hashed where they are, with no call to reach them. The hash is the one `hash(_:)`
        // gives the same bytes in any other representation.
        // (The layout of a 64-bit little-endian `String`: elsewhere every string takes the general path.)
        #if _pointerBitWidth(_64) && _endian(little)
            let words = unsafeBitCast(string, to: (UInt64, UInt64).self)
            let discriminator = words.1 &>> 56
            if discriminator & 0xF0 == 0xE0 {
                hash = Self.hashSmall(words.0, words.1 & 0x00FF_FFFF_FFFF_FFFF, count: discriminator & 0x0F)
                return
            }
        #endif
        hash = Self.hashOfLarge(string)
    }

    var description: String { string }

    @inline(__always)
    static func == (lhs: HashedKey, rhs: HashedKey) -> Bool {
        guard lhs.hash == rhs.hash else { return false }
        // The same representation is the same string: the usual case (a literal looked up against
        // the same literal, or a short string, stored inline) needs no comparison of contents.
        if unsafeBitCast(lhs.string, to: (UInt, UInt).self) == unsafeBitCast(rhs.string, to: (UInt, UInt).self) {
            return true
        }
        return lhs.string == rhs.string
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(hash)
    }

    /// What `Dictionary` and `Set` use to place a key: the stored hash mixed with the table's seed,
    /// without a `Hasher`.
    @inline(__always)
    func _rawHashValue(seed: Int) -> Int {
        Int(truncatingIfNeeded: Self.mix(hash ^ UInt64(truncatingIfNeeded: seed), 0xA076_1D64_78BD_642F))
    }

    @inline(__always)
    private static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var union: UInt8 = 0
        for byte in bytes { union |= byte }
        return union < 0x80
    }

    /// The hash of the bytes of a small ASCII string: `leading` holds its first eight bytes and
    /// `trailing` the next seven, each little-endian, and a small string's unused bytes are zero, so
    /// these are the words `hash(_:)` loads from the same bytes.
    @inline(__always)
    private static func hashSmall(_ leading: UInt64, _ trailing: UInt64, count: UInt64) -> UInt64 {
        let state: UInt64 = 0xE703_7ED1_A0B4_28DB ^ count
        if count > 8 {
            return mix(mix(state ^ leading, 0x8EBC_6AF0_9C88_C6E3) ^ trailing, 0x5899_65CC_7537_4CC3)
        }
        if count == 8 { return mix(state ^ leading, 0x8EBC_6AF0_9C88_C6E3) }
        if count > 0 { return mix(state ^ leading, 0x5899_65CC_7537_4CC3) }
        return state
    }

    /// The hash of a string that is not small and ASCII: of its bytes when they are ASCII, else that
    /// of `hashOfNonASCII(_:)`.
    @inline(never)
    private static func hashOfLarge(_ string: String) -> UInt64 {
        let ascii: UInt64?? = string.utf8.withContiguousStorageIfAvailable { bytes in
            isASCII(bytes) ? hash(bytes) : nil
        }
        return (ascii ?? nil) ?? hashOfNonASCII(string)
    }

    /// The hash of a string with non-ASCII scalars: that of its ASCII equivalent when it has one,
    /// else `String`'s (which agrees with `String` equality).
    private static func hashOfNonASCII(_ string: String) -> UInt64 {
        var ascii: [UInt8] = []
        ascii.reserveCapacity(string.utf8.count)
        for scalar in string.unicodeScalars {
            switch scalar.value {
            case 0..<0x80: ascii.append(UInt8(scalar.value))
            case 0x037E: ascii.append(UInt8(ascii: ";"))  // GREEK QUESTION MARK
            case 0x1FEF: ascii.append(UInt8(ascii: "`"))  // GREEK VARIA
            case 0x212A: ascii.append(UInt8(ascii: "K"))  // KELVIN SIGN
            default: return UInt64(truncatingIfNeeded: string.hashValue)
            }
        }
        return ascii.withUnsafeBufferPointer { hash($0) }
    }

    /// A wyhash-style hash of `bytes`, eight at a time.
    private static func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
        let count = bytes.count
        var state: UInt64 = 0xE703_7ED1_A0B4_28DB ^ UInt64(truncatingIfNeeded: count)
        guard count > 0, let base = bytes.baseAddress else { return state }
        let raw = UnsafeRawPointer(base)
        var offset = 0
        while count - offset >= 8 {
            let word = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            state = mix(state ^ word, 0x8EBC_6AF0_9C88_C6E3)
            offset += 8
        }
        if offset < count {
            var tail: UInt64 = 0
            var shift: UInt64 = 0
            while offset < count {
                tail |= UInt64(bytes[offset]) &<< shift
                shift += 8
                offset += 1
            }
            state = mix(state ^ tail, 0x5899_65CC_7537_4CC3)
        }
        return state
    }

    /// Multiplies in full width and folds the halves: every bit of the result depends on every bit
    /// of both inputs.
    @inline(__always)
    private static func mix(_ left: UInt64, _ right: UInt64) -> UInt64 {
        let product = left.multipliedFullWidth(by: right)
        return product.high ^ product.low
    }
}
