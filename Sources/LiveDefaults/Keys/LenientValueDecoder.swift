import Foundation

/// Decodes a `Decodable` value from a property-list value, converting scalars the way the typed
/// getters do (``PropertyListRepresentable``): a stored `"50"` reads as the `Int` 50, `"YES"` as
/// `true`, a whole real as an integer.
///
/// Typed keys use it when Foundation's strict `PropertyListDecoder` fails, so a Codable value
/// written with `defaults write … '{ rateLimit = 50; }'` (old-style text, where every scalar is a
/// string) reads as it would at the top level: one rule for both (docs/design.md, "Typed keys:
/// one conversion rule").
struct LenientValueDecoder: Decoder {
    let value: PropertyListValue
    var codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    static func decode<Value: Decodable>(_ type: Value.Type, from value: PropertyListValue) throws -> Value {
        try LenientValueDecoder(value: value).decodeValue(type)
    }

    /// `Value` from this decoder's value: property-list scalars, dates, data and URLs directly,
    /// anything else through its own `init(from:)`.
    func decodeValue<Value: Decodable>(_ type: Value.Type) throws -> Value {
        if let representable = type as? any PropertyListRepresentable.Type {
            guard let decoded = representable.init(propertyListValue: value) as? Value else {
                throw mismatch(type)
            }
            return decoded
        }
        return try Value(from: self)
    }

    func mismatch(_ type: Any.Type) -> DecodingError {
        DecodingError.typeMismatch(
            type,
            DecodingError.Context(
                codingPath: codingPath, debugDescription: "expected \(type), found \(value.typeName) \(value)"))
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .dictionary(let entries) = value else { throw mismatch([String: Any].self) }
        return KeyedDecodingContainer(Keyed<Key>(entries: entries, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let elements) = value else { throw mismatch([Any].self) }
        return Unkeyed(elements: elements, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { Single(decoder: self) }

    /// Foundation's encoder writes a nil inside an array as this string.
    static func isNull(_ value: PropertyListValue) -> Bool { value == .string("$null") }

    private struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let entries: [String: PropertyListValue]
        let codingPath: [any CodingKey]
        var allKeys: [Key] { entries.keys.compactMap { Key(stringValue: $0) } }

        func contains(_ key: Key) -> Bool { entries[key.stringValue] != nil }

        func decoder(for key: Key) throws -> LenientValueDecoder {
            guard let value = entries[key.stringValue] else {
                throw DecodingError.keyNotFound(
                    key,
                    DecodingError.Context(codingPath: codingPath, debugDescription: "no value for \(key.stringValue)"))
            }
            return LenientValueDecoder(value: value, codingPath: codingPath + [key])
        }

        func decodeNil(forKey key: Key) throws -> Bool {
            entries[key.stringValue].map(LenientValueDecoder.isNull) ?? true
        }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            try decoder(for: key).decodeValue(type)
        }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
            -> KeyedDecodingContainer<NestedKey>
        { try decoder(for: key).container(keyedBy: type) }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            try decoder(for: key).unkeyedContainer()
        }

        func superDecoder() throws -> any Decoder {
            LenientValueDecoder(value: .dictionary(entries), codingPath: codingPath)
        }
        func superDecoder(forKey key: Key) throws -> any Decoder { try decoder(for: key) }
    }

    private struct Unkeyed: UnkeyedDecodingContainer {
        let elements: [PropertyListValue]
        let codingPath: [any CodingKey]
        var currentIndex = 0
        var count: Int? { elements.count }
        var isAtEnd: Bool { currentIndex >= elements.count }

        init(elements: [PropertyListValue], codingPath: [any CodingKey]) {
            self.elements = elements
            self.codingPath = codingPath
        }

        private struct Index: CodingKey {
            let intValue: Int?
            var stringValue: String { "\(intValue ?? 0)" }
            init(_ index: Int) { intValue = index }
            init?(stringValue: String) { nil }
            init?(intValue: Int) { self.intValue = intValue }
        }

        mutating func next() throws -> LenientValueDecoder {
            guard !isAtEnd else {
                throw DecodingError.valueNotFound(
                    Any.self, DecodingError.Context(codingPath: codingPath, debugDescription: "no more elements"))
            }
            defer { currentIndex += 1 }
            return LenientValueDecoder(value: elements[currentIndex], codingPath: codingPath + [Index(currentIndex)])
        }

        mutating func decodeNil() throws -> Bool {
            guard !isAtEnd, LenientValueDecoder.isNull(elements[currentIndex]) else { return false }
            currentIndex += 1
            return true
        }

        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next().decodeValue(type) }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
            -> KeyedDecodingContainer<NestedKey>
        { try next().container(keyedBy: type) }

        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { try next().unkeyedContainer() }
        mutating func superDecoder() throws -> any Decoder { try next() }
    }

    private struct Single: SingleValueDecodingContainer {
        let decoder: LenientValueDecoder
        var codingPath: [any CodingKey] { decoder.codingPath }
        func decodeNil() -> Bool { LenientValueDecoder.isNull(decoder.value) }
        func decode<T: Decodable>(_ type: T.Type) throws -> T { try decoder.decodeValue(type) }
    }
}
