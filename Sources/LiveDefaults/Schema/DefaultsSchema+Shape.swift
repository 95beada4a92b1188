import Foundation

// The shape of a `Codable` type, read from the type itself (docs/design.md, "Schemas", "The shape
// of a `Codable` value").
//
// Swift has no run-time reflection of a `Codable` type's fields, and `Mirror` needs an instance,
// which sees neither an optional field left nil nor the element type of an empty array. So the type
// is asked to decode itself from a decoder that holds no data: each `decode(_:forKey:)` its
// `init(from:)` makes names a field and its type, `decodeIfPresent` (which asks `contains` first)
// an optional one, and an unkeyed container's one element the elements' type. Every value handed
// back is a placeholder (0, "", false, the first case of a `CaseIterable` enum). A type whose
// `init(from:)` refuses those placeholders, or reads keys it only learns from the data (an enum with
// associated values), cannot be read this way: its entry is then a plain `dictionary`, unless the
// key's entry declares its fields.

extension DefaultsSchema.Entry {
    /// The shape of `type` (its value type, fields and elements); nil when the type cannot be read
    /// this way.
    static func shape(of type: Any.Type) -> DefaultsSchema.Entry? {
        if let optional = type as? any SchemaOptional.Type { return shape(of: optional.wrappedType) }
        guard let decodable = type as? any Decodable.Type else { return nil }
        let root = ShapeNode()
        do {
            _ = try ShapeNode.placeholder(decodable, into: root)
        } catch {
            return nil
        }
        return root.entry(name: "")
    }
}

/// What the probe learned about one value: its type, and its fields or elements.
private final class ShapeNode {
    var type: DefaultsSchema.ValueType = .any
    var fields: [String: ShapeNode] = [:]
    var optional: Set<String> = []
    var elements: ShapeNode?
    var choices: [PropertyListValue]?

    /// The key an empty decoder lists among a dictionary's keys (`allKeys`), so that a Swift
    /// `Dictionary` decodes one value and so tells its values' type; a structure's `CodingKeys`
    /// have no such case and list nothing.
    static let anyKey = "\u{0}*"

    func field(_ name: String) -> ShapeNode {
        type = .dictionary
        if name == Self.anyKey {
            if let elements { return elements }
            let node = ShapeNode()
            elements = node
            return node
        }
        if let node = fields[name] { return node }
        let node = ShapeNode()
        fields[name] = node
        return node
    }

    func element() -> ShapeNode {
        type = .array
        if let elements { return elements }
        let node = ShapeNode()
        elements = node
        return node
    }

    func entry(name: String) -> DefaultsSchema.Entry {
        var entry = DefaultsSchema.Entry(
            name: name, type: type, choices: choices, isOptional: false,
            fields: type == .dictionary && elements == nil
                ? fields.map { name, node in
                    var field = node.entry(name: name)
                    field.isOptional = optional.contains(name)
                    return field
                } : nil)
        entry.elements = elements?.entry(name: "")
        return entry
    }

    /// A placeholder value of `type`, recording its shape into `node`.
    static func placeholder<Value: Decodable>(_ type: Value.Type, into node: ShapeNode) throws -> Value {
        func scalar(_ kind: DefaultsSchema.ValueType, _ value: Any) throws -> Value {
            node.type = kind
            guard let value = value as? Value else {
                throw DecodingError.typeMismatch(type, .init(codingPath: [], debugDescription: "a placeholder"))
            }
            return value
        }
        switch type {
        case is String.Type: return try scalar(.string, "")
        case is Bool.Type: return try scalar(.boolean, false)
        case is Double.Type: return try scalar(.real, 0.0)
        case is Float.Type: return try scalar(.real, Float(0))
        case is Int.Type: return try scalar(.integer, 0)
        case is Int8.Type: return try scalar(.integer, Int8(0))
        case is Int16.Type: return try scalar(.integer, Int16(0))
        case is Int32.Type: return try scalar(.integer, Int32(0))
        case is Int64.Type: return try scalar(.integer, Int64(0))
        case is UInt.Type: return try scalar(.integer, UInt(0))
        case is UInt8.Type: return try scalar(.integer, UInt8(0))
        case is UInt16.Type: return try scalar(.integer, UInt16(0))
        case is UInt32.Type: return try scalar(.integer, UInt32(0))
        case is UInt64.Type: return try scalar(.integer, UInt64(0))
        case is Date.Type: return try scalar(.date, Date(timeIntervalSinceReferenceDate: 0))
        case is Data.Type: return try scalar(.data, Data())
        case is URL.Type: return try scalar(.string, URL(fileURLWithPath: "/"))
        default: break
        }
        if let iterable = type as? any CaseIterable.Type, let first = firstCase(of: iterable) as? Value {
            if let raw = first as? any RawRepresentable,
                let value = raw.rawValue as? any PropertyListRepresentable
            {
                node.type = DefaultsSchema.ValueType(of: value.propertyListValue)
            }
            let choices = DefaultsSchema.Entry.caseChoices(of: type)
            node.choices = choices
            return first
        }
        return try Value(from: ShapeDecoder(node: node))
    }

    private static func firstCase<Cases: CaseIterable>(of type: Cases.Type) -> Any? { Cases.allCases.first }
}

/// A decoder with no data, which records what a type asks of it (see the top of this file).
private struct ShapeDecoder: Decoder {
    let node: ShapeNode
    var codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        node.type = .dictionary
        return KeyedDecodingContainer(KeyedShape<Key>(node: node))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        node.type = .array
        return UnkeyedShape(node: node)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { SingleShape(node: node) }
}

private struct KeyedShape<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let node: ShapeNode
    var codingPath: [any CodingKey] { [] }
    var allKeys: [Key] { [Key(stringValue: ShapeNode.anyKey)].compactMap { $0 } }

    /// Asked first by `decodeIfPresent`: the field is optional.
    func contains(_ key: Key) -> Bool {
        _ = node.field(key.stringValue)
        node.optional.insert(key.stringValue)
        return true
    }

    func decodeNil(forKey key: Key) throws -> Bool { false }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try ShapeNode.placeholder(type, into: node.field(key.stringValue))
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try decode(type, key) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try decode(type, key) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try decode(type, key) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try decode(type, key) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try decode(type, key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try decode(type, key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try decode(type, key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try decode(type, key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try decode(type, key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try decode(type, key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try decode(type, key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try decode(type, key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try decode(type, key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try decode(type, key) }

    private func decode<T: Decodable>(_ type: T.Type, _ key: Key) throws -> T {
        try ShapeNode.placeholder(type, into: node.field(key.stringValue))
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try ShapeDecoder(node: node.field(key.stringValue)).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try ShapeDecoder(node: node.field(key.stringValue)).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder { ShapeDecoder(node: node.field("super")) }
    func superDecoder(forKey key: Key) throws -> any Decoder { ShapeDecoder(node: node.field(key.stringValue)) }
}

/// An array of one element: enough to learn the elements' type.
private struct UnkeyedShape: UnkeyedDecodingContainer {
    let node: ShapeNode
    var codingPath: [any CodingKey] { [] }
    var count: Int? { nil }
    var currentIndex = 0
    var isAtEnd: Bool { currentIndex > 0 }

    init(node: ShapeNode) { self.node = node }

    mutating func decodeNil() throws -> Bool { false }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        currentIndex += 1
        return try ShapeNode.placeholder(type, into: node.element())
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try next(type) }
    mutating func decode(_ type: String.Type) throws -> String { try next(type) }
    mutating func decode(_ type: Double.Type) throws -> Double { try next(type) }
    mutating func decode(_ type: Float.Type) throws -> Float { try next(type) }
    mutating func decode(_ type: Int.Type) throws -> Int { try next(type) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try next(type) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try next(type) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try next(type) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try next(type) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try next(type) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try next(type) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try next(type) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try next(type) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try next(type) }

    private mutating func next<T: Decodable>(_ type: T.Type) throws -> T {
        currentIndex += 1
        return try ShapeNode.placeholder(type, into: node.element())
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        currentIndex += 1
        return try ShapeDecoder(node: node.element()).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        currentIndex += 1
        return try ShapeDecoder(node: node.element()).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder {
        currentIndex += 1
        return ShapeDecoder(node: node.element())
    }
}

private struct SingleShape: SingleValueDecodingContainer {
    let node: ShapeNode
    var codingPath: [any CodingKey] { [] }

    func decodeNil() -> Bool { false }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try ShapeNode.placeholder(type, into: node) }
    func decode(_ type: Bool.Type) throws -> Bool { try ShapeNode.placeholder(type, into: node) }
    func decode(_ type: String.Type) throws -> String { try ShapeNode.placeholder(type, into: node) }
    func decode(_ type: Double.Type) throws -> Double { try ShapeNode.placeholder(type, into: node) }
    func decode(_ type: Float.Type) throws -> Float { try ShapeNode.placeholder(type, into: node) }
    func decode(_ type: Int.Type) throws -> Int { try ShapeNode.placeholder(type, into: node) }
    func decode(_ type: Int8.Type) throws -> Int8 { try ShapeNode.placeholder(type, into: node) }
    func decode(_ type: Int16.Type) throws -> Int16 { try ShapeNode.placeholder(type, into: node) }
    func decode(_ type: Int32.Type) throws -> Int32 { try ShapeNode.placeholder(type, into: node) }
    func decode(_ type: Int64.Type) throws -> Int64 { try ShapeNode.placeholder(type, into: node) }
    func decode(_ type: UInt.Type) throws -> UInt { try ShapeNode.placeholder(type, into: node) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try ShapeNode.placeholder(type, into: node) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try ShapeNode.placeholder(type, into: node) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try ShapeNode.placeholder(type, into: node) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try ShapeNode.placeholder(type, into: node) }
}
