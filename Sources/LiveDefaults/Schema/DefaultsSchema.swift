import Foundation

/// What a suite's keys are: each key's type, default, meaning, allowed values and whether it is
/// secret — built from the typed keys an app already declares, and installed where the `defaults`
/// command finds it (<doc:DescribingYourSettings>).
///
/// ```swift
/// let schema = DefaultsSchema(suite: "com.example.app", entries: [
///     .init(.fontSize, summary: "Text size in points", range: 8...72),
///     .init(.theme, summary: "Colour scheme"),
///     .init(.apiToken, summary: "Token for the sync service"),
/// ])
/// try schema.install()
/// ```
///
/// The document is a property list (``propertyListData()``): a dictionary with `format` (1),
/// `suite`, and `keys`, a dictionary from each key's name to its `type`, and where given its
/// `default`, `summary`, `choices` (an array), `range` (`min` and `max`) and `secret` (`true`).
/// A `dictionary` may list its `fields` (name to the same kind of dictionary, with `optional`
/// (`true`) for a field that may be absent), and an `array` (or a dictionary without fields) its
/// `elements`, to any depth:
///
/// ```
/// rateLimit = {
///     type = dictionary;
///     fields = {
///         perSecond = { type = integer; range = { min = 1; max = 10000; }; };
///         burst = { type = integer; };
///         note = { type = string; optional = true; };
///     };
/// };
/// ```
public struct DefaultsSchema: Sendable, Hashable {
    /// The suite the schema describes.
    public var suite: String
    /// The keys, sorted by name.
    public private(set) var entries: [Entry]

    /// The version of the document's layout this library writes and reads.
    static let format: Int64 = 1

    /// A schema of the given keys.
    ///
    /// - Parameters:
    ///   - suite: The suite's name.
    ///   - entries: One entry per key; for a name listed twice, the last one counts.
    public init(suite: String, entries: [Entry]) {
        self.suite = suite
        var byName: [String: Entry] = [:]
        for entry in entries { byName[entry.name] = entry }
        self.entries = byName.values.sorted { $0.name < $1.name }
    }

    /// The entry of the key named `name`, if the schema has one.
    public subscript(name: String) -> Entry? {
        entries.first { $0.name == name }
    }

    // MARK: The document

    /// The schema as a property-list value (the document's root dictionary).
    public var propertyList: PropertyListValue {
        var keys: [String: PropertyListValue] = [:]
        for entry in entries { keys[entry.name] = Self.description(of: entry) }
        return .dictionary(["format": .integer(Self.format), "suite": .string(suite), "keys": .dictionary(keys)])
    }

    /// An entry's dictionary in the document; a field's and an element's have the same form.
    package static func description(of entry: Entry) -> PropertyListValue {
        var fields: [String: PropertyListValue] = ["type": .string(entry.type.rawValue)]
        if let value = entry.defaultValue { fields["default"] = value }
        if let summary = entry.summary { fields["summary"] = .string(summary) }
        if let choices = entry.choices { fields["choices"] = .array(choices) }
        if let range = entry.range {
            fields["range"] = .dictionary([
                "min": Self.bound(range.lowerBound, entry.type), "max": Self.bound(range.upperBound, entry.type),
            ])
        }
        if entry.isSecret { fields["secret"] = .bool(true) }
        if entry.isOptional { fields["optional"] = .bool(true) }
        if let listed = entry.fields {
            var described: [String: PropertyListValue] = [:]
            for field in listed { described[field.name] = description(of: field) }
            fields["fields"] = .dictionary(described)
        }
        if let elements = entry.elements { fields["elements"] = description(of: elements) }
        return .dictionary(fields)
    }

    private static func bound(_ bound: Double, _ type: ValueType) -> PropertyListValue {
        if type == .integer, let whole = Int64(exactly: bound) { return .integer(whole) }
        return .real(bound)
    }

    /// The schema as an XML property-list document, as ``install()`` writes it.
    ///
    /// - Throws: ``DefaultsError`` when a value cannot be encoded (a non-finite real in XML).
    public func propertyListData() throws -> Data {
        do throws(PropertyListError) {
            return try PropertyListCodec.encode(propertyList, format: .xml)
        } catch {
            throw DefaultsError(error, suite: suite)
        }
    }

    /// Reads a schema document (XML, binary or old-style text).
    ///
    /// - Parameters:
    ///   - data: The document.
    ///   - source: Where it came from, for messages (a path, an etcd key).
    /// - Throws: ``DefaultsError`` (`invalidSchema`) naming the source, the key and what is wrong.
    public init(propertyListData data: Data, source: String = "the schema") throws {
        let root: PropertyListValue
        do throws(PropertyListError) {
            root = try PropertyListCodec.decode(data).value
        } catch {
            throw DefaultsError(.invalidSchema, "\(source) is not a property list: \(error.message)")
        }
        try self.init(propertyList: root, source: source)
    }

    /// Reads a schema from its property-list value (``propertyList``).
    ///
    /// - Parameters:
    ///   - root: The document's root dictionary.
    ///   - source: Where it came from, for messages.
    /// - Throws: ``DefaultsError`` (`invalidSchema`) naming the source, the key and what is wrong.
    public init(propertyList root: PropertyListValue, source: String = "the schema") throws {
        func invalid(_ problem: String) -> DefaultsError {
            DefaultsError(.invalidSchema, "\(source): \(problem)", path: source.hasPrefix("/") ? source : nil)
        }
        guard case .dictionary(let document) = root else { throw invalid("the root is not a dictionary") }
        if let format = document["format"], format.schemaNumber != Double(Self.format) {
            throw invalid("format \(format) is not one this version reads (\(Self.format))")
        }
        guard case .string(let suite)? = document["suite"], !suite.isEmpty else {
            throw invalid("no \"suite\" string names the suite")
        }
        guard case .dictionary(let keys)? = document["keys"] else { throw invalid("no \"keys\" dictionary") }
        var entries: [Entry] = []
        for (name, description) in keys.sorted(by: { $0.key < $1.key }) {
            entries.append(try Self.entry(named: name, description, what: "key \"\(name)\"", invalid: invalid))
        }
        self.init(suite: suite, entries: entries)
    }
}

extension DefaultsSchema {
    /// The entry a key's (or a field's, or the elements') dictionary in the document describes.
    ///
    /// - Parameters:
    ///   - name: The key's or field's name.
    ///   - description: Its dictionary.
    ///   - what: How messages name it: `key "rateLimit"`, `field "burst" of key "rateLimit"`.
    ///   - invalid: Makes the error for a problem.
    /// - Returns: The entry, its fields and elements read too.
    /// - Throws: What `invalid` makes, naming the key or field and what is wrong.
    private static func entry(
        named name: String, _ description: PropertyListValue, what: String, invalid: (String) -> DefaultsError
    ) throws -> Entry {
        guard case .dictionary(let fields) = description else { throw invalid("\(what) is not a dictionary") }
        let known = ValueType.allCases.map(\.rawValue).joined(separator: ", ")
        guard let typeValue = fields["type"] else { throw invalid("\(what) has no \"type\" (one of \(known))") }
        guard case .string(let typeName) = typeValue, let type = ValueType(rawValue: typeName) else {
            let shown = typeValue.stringValue?.debugDescription ?? OpenStepWriter.singleLineString(for: typeValue)
            throw invalid("\(what) has the type \(shown), which is not one of \(known)")
        }
        var entry = Entry(name: name, type: type)
        if let stored = fields["default"] {
            let value = Self.coerced(stored, to: type)
            guard type.matches(value) else {
                throw invalid("the default of \(what) is \(value.typeName) \(value), not \(type.rawValue)")
            }
            entry.defaultValue = value
        }
        if let summary = fields["summary"] {
            guard case .string(let text) = summary else { throw invalid("the summary of \(what) is not a string") }
            entry.summary = text
        }
        if let choices = fields["choices"] {
            guard case .array(let listed) = choices, case let values = listed.map({ Self.coerced($0, to: type) }),
                values.allSatisfy(type.matches)
            else {
                throw invalid("the choices of \(what) are not an array of \(type.rawValue) values")
            }
            entry.choices = values
        }
        if let range = fields["range"] {
            guard case .dictionary(let bounds) = range, let low = bounds["min"]?.schemaNumber,
                let high = bounds["max"]?.schemaNumber, low <= high
            else {
                throw invalid("the range of \(what) needs numbers \"min\" <= \"max\"")
            }
            entry.range = low...high
        }
        if let secret = fields["secret"] {
            guard case .bool(let flag) = Self.coerced(secret, to: .boolean) else {
                throw invalid("\"secret\" of \(what) is not a Boolean")
            }
            entry.isSecret = flag
        }
        if let optional = fields["optional"] {
            guard case .bool(let flag) = Self.coerced(optional, to: .boolean) else {
                throw invalid("\"optional\" of \(what) is not a Boolean")
            }
            entry.isOptional = flag
        }
        if let listed = fields["fields"] {
            guard type == .dictionary, case .dictionary(let described) = listed else {
                throw invalid("\"fields\" of \(what) needs the type dictionary and a dictionary of fields")
            }
            entry.fields = try described.sorted(by: { $0.key < $1.key }).map { field, description in
                try Self.entry(named: field, description, what: "field \"\(field)\" of \(what)", invalid: invalid)
            }
        }
        if let elements = fields["elements"] {
            guard type == .array || (type == .dictionary && entry.fields == nil) else {
                throw invalid("\"elements\" of \(what) needs the type array, or a dictionary without \"fields\"")
            }
            entry.elements = try Self.entry(named: "", elements, what: "the elements of \(what)", invalid: invalid)
        }
        return entry
    }

    /// A value of old-style text, where every scalar is a string, as the number or Boolean the type
    /// asks for; any other value as it is.
    static func coerced(_ value: PropertyListValue, to type: ValueType) -> PropertyListValue {
        guard case .string(let text) = value else { return value }
        switch type {
        case .integer: return Int64(text).map(PropertyListValue.integer) ?? value
        case .real: return Double(text).map(PropertyListValue.real) ?? value
        case .boolean: return Bool(propertyListValue: value).map(PropertyListValue.bool) ?? value
        default: return value
        }
    }
}

extension PropertyListValue {
    /// A number as a `Double`, whatever its width (a string of old-style text that is one included);
    /// nil for anything else.
    fileprivate var schemaNumber: Double? {
        switch self {
        case .integer(let integer): Double(integer)
        case .unsignedInteger(let integer): Double(integer)
        case .real(let real): real
        case .float(let float): Double(float)
        case .string(let text): Double(text)
        default: nil
        }
    }
}
