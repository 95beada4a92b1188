import Foundation

extension DefaultsSchema {
    /// What a schema says about one key: its type, its default, what it means, the values it
    /// allows, and whether it is secret.
    public struct Entry: Sendable, Hashable {
        /// The key's name in the suite.
        public var name: String
        /// The kind of value the key holds.
        public var type: ValueType
        /// The value read when the suite has none; nil for a key without one (an optional key).
        public var defaultValue: PropertyListValue?
        /// One line saying what the key means, for people (`defaults describe` shows it).
        public var summary: String?
        /// The only values allowed, when the key has a fixed set (an enum's raw values); nil for any.
        public var choices: [PropertyListValue]?
        /// The smallest and largest numbers allowed, for an `integer` or `real` key; nil for any.
        public var range: ClosedRange<Double>?
        /// Whether the value is secret: the `defaults` command never prints it in full.
        public var isSecret: Bool
        /// For a field of a dictionary: whether it may be absent (a Swift `Optional` field). A key
        /// may always be absent (it then reads as its default), so a key's entry leaves it false.
        public var isOptional: Bool
        /// For a `dictionary`: its fields, by name (a `Codable` structure's), each with its own type,
        /// range, choices, summary and whether it is optional; a value must have every field that is
        /// not optional, and no other. Nil for a dictionary whose keys are free (a Swift
        /// `Dictionary`: then ``elements`` describes each value, if anything does).
        public var fields: [Entry]? {
            didSet { fields = fields.map(Self.sortedByName) }
        }
        /// What each element of an `array` is, or each value of a `dictionary` without ``fields``;
        /// nil when the schema does not say.
        public var elements: Entry? {
            get { elementStorage.first }
            set { elementStorage = newValue.map { [$0] } ?? [] }
        }
        /// ``elements``, in an array because a structure cannot hold a value of its own type.
        private var elementStorage: [Entry] = []

        /// An entry as written.
        ///
        /// - Parameters:
        ///   - name: The key's name.
        ///   - type: The kind of value it holds.
        ///   - defaultValue: Its default, if it has one.
        ///   - summary: What it means, in one line.
        ///   - choices: The only values allowed, if there is a fixed set.
        ///   - range: The numbers allowed, for a number.
        ///   - isSecret: Whether the value is secret.
        ///   - isOptional: For a field: whether it may be absent.
        ///   - fields: For a dictionary with a fixed set of fields: one entry per field.
        ///   - elements: For an array, each element; for a dictionary without fields, each value.
        public init(
            name: String, type: ValueType, defaultValue: PropertyListValue? = nil, summary: String? = nil,
            choices: [PropertyListValue]? = nil, range: ClosedRange<Double>? = nil, isSecret: Bool = false,
            isOptional: Bool = false, fields: [Entry]? = nil, elements: Entry? = nil
        ) {
            self.name = name
            self.type = type
            self.defaultValue = defaultValue
            self.summary = summary
            self.choices = choices
            self.range = range
            self.isSecret = isSecret
            self.isOptional = isOptional
            self.fields = fields.map(Self.sortedByName)
            self.elements = elements
        }

        private static func sortedByName(_ entries: [Entry]) -> [Entry] {
            var byName: [String: Entry] = [:]
            for entry in entries { byName[entry.name] = entry }
            return byName.values.sorted { $0.name < $1.name }
        }

        /// The entry of a typed key: its name, its type and default as the key stores them, and
        /// whether it is ``Defaults/AnyKey/isSecret``. A key of a `CaseIterable` enum allows its
        /// cases' raw values unless `choices` says otherwise.
        ///
        /// A key of a `Codable` type (a structure, an array or a dictionary of them) gets its shape
        /// from the type itself: each field's name, type and whether it is optional, to any depth,
        /// and each element's type (<doc:DescribingYourSettings>, "Values with fields"). Add a
        /// field's summary, range or choices with ``field(_:summary:choices:range:isSecret:)``; a type
        /// whose shape cannot be read this way (its `init(from:)` refuses the placeholder values)
        /// is a plain `dictionary` unless `fields` declares its fields.
        ///
        /// ```swift
        /// DefaultsSchema.Entry(.fontSize, summary: "Text size in points", range: 8...72)
        /// DefaultsSchema.Entry(.rateLimit, summary: "Requests allowed")
        ///     .field("perSecond", summary: "Sustained rate", range: 1...10_000)
        /// ```
        ///
        /// - Parameters:
        ///   - key: The key.
        ///   - summary: What the key means, in one line.
        ///   - choices: The only values allowed.
        ///   - range: The numbers allowed, for a number key.
        ///   - fields: The fields, for a `Codable` structure whose shape the type cannot give;
        ///     nil to take them from the type.
        public init<Value>(
            _ key: Defaults.Key<Value>, summary: String? = nil, choices: [Value]? = nil,
            range: ClosedRange<Double>? = nil, fields: [Entry]? = nil
        ) {
            let encodedDefault = (try? key.encode(key.defaultValue)) ?? nil
            var type = ValueType.of(Value.self)
            if type == .any, Value.self != PropertyListValue.self, Value.self != PropertyListValue?.self,
                let encodedDefault
            {
                type = ValueType(of: encodedDefault)
            }
            let listed = choices?.compactMap { (try? key.encode($0)) ?? nil }
            self.init(
                name: key.name, type: type, defaultValue: encodedDefault, summary: summary,
                choices: listed ?? Self.caseChoices(of: Value.self), range: range, isSecret: key.isSecret)
            if type == .any || type == .array || type == .dictionary, let shape = Self.shape(of: Value.self) {
                if type == .any || shape.type == type {
                    self.type = shape.type
                    self.fields = shape.fields
                    self.elements = shape.elements
                }
            }
            if let fields {
                self.type = .dictionary
                self.fields = Self.sortedByName(fields)
                self.elements = nil
            }
        }

        /// The same entry with one field described further: its summary, choices, range or
        /// secrecy (what a `Codable` type cannot say). `path` names the field, through
        /// dictionaries by their field names joined with `.` (`"limits.perSecond"`); an array on
        /// the way stands for its elements (`"servers.port"`, for each server's port).
        ///
        /// - Parameters:
        ///   - path: The field, from this entry's value.
        ///   - summary: What it means, in one line.
        ///   - choices: The only values allowed.
        ///   - range: The numbers allowed.
        ///   - isSecret: Whether it is secret.
        /// - Returns: The entry, changed.
        /// - Precondition: The value has a field at `path` (a mistake in the app's own code).
        public func field(
            _ path: String, summary: String? = nil, choices: [PropertyListValue]? = nil,
            range: ClosedRange<Double>? = nil, isSecret: Bool? = nil
        ) -> Entry {
            var changed = self
            let names = path.split(separator: ".").map(String.init)
            let found = changed.withField(names[...]) { field in
                if let summary { field.summary = summary }
                if let choices { field.choices = choices }
                if let range { field.range = range }
                if let isSecret { field.isSecret = isSecret }
            }
            precondition(found, "key \"\(name)\" has no field \"\(path)\"")
            return changed
        }

        private mutating func withField(_ names: ArraySlice<String>, _ change: (inout Entry) -> Void) -> Bool {
            guard let first = names.first else {
                change(&self)
                return true
            }
            if fields == nil, var element = elements {
                defer { elements = element }
                return element.withField(names, change)
            }
            guard var listed = fields, let index = listed.firstIndex(where: { $0.name == first }) else { return false }
            let found = listed[index].withField(names.dropFirst(), change)
            fields = listed
            return found
        }

        /// The raw values of a `CaseIterable` enum's cases (an Optional's wrapped enum's), else nil.
        static func caseChoices(of type: Any.Type) -> [PropertyListValue]? {
            if let optional = type as? any SchemaOptional.Type { return caseChoices(of: optional.wrappedType) }
            guard let iterable = type as? any CaseIterable.Type else { return nil }
            let values = rawValues(of: iterable)
            return values.isEmpty ? nil : values
        }

        static func rawValues<Cases: CaseIterable>(of type: Cases.Type) -> [PropertyListValue] {
            Cases.allCases.compactMap { element in
                ((element as? any RawRepresentable)?.rawValue as? any PropertyListRepresentable)?.propertyListValue
            }
        }
    }
}
