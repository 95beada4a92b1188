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
        public init(
            name: String, type: ValueType, defaultValue: PropertyListValue? = nil, summary: String? = nil,
            choices: [PropertyListValue]? = nil, range: ClosedRange<Double>? = nil, isSecret: Bool = false
        ) {
            self.name = name
            self.type = type
            self.defaultValue = defaultValue
            self.summary = summary
            self.choices = choices
            self.range = range
            self.isSecret = isSecret
        }

        /// The entry of a typed key: its name, its type and default as the key stores them, and
        /// whether it is ``Defaults/AnyKey/isSecret``. A key of a `CaseIterable` enum allows its
        /// cases' raw values unless `choices` says otherwise.
        ///
        /// ```swift
        /// DefaultsSchema.Entry(.fontSize, summary: "Text size in points", range: 8...72)
        /// ```
        ///
        /// - Parameters:
        ///   - key: The key.
        ///   - summary: What the key means, in one line.
        ///   - choices: The only values allowed.
        ///   - range: The numbers allowed, for a number key.
        public init<Value>(
            _ key: Defaults.Key<Value>, summary: String? = nil, choices: [Value]? = nil,
            range: ClosedRange<Double>? = nil
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
        }

        /// The raw values of a `CaseIterable` enum's cases (an Optional's wrapped enum's), else nil.
        private static func caseChoices(of type: Any.Type) -> [PropertyListValue]? {
            if let optional = type as? any SchemaOptional.Type { return caseChoices(of: optional.wrappedType) }
            guard let iterable = type as? any CaseIterable.Type else { return nil }
            let values = rawValues(of: iterable)
            return values.isEmpty ? nil : values
        }

        private static func rawValues<Cases: CaseIterable>(of type: Cases.Type) -> [PropertyListValue] {
            Cases.allCases.compactMap { element in
                ((element as? any RawRepresentable)?.rawValue as? any PropertyListRepresentable)?.propertyListValue
            }
        }

        /// Whether `value` is allowed by the type (as stored, without conversion), the choices and
        /// the range; nil when it is, else the reason.
        package func problem(with value: PropertyListValue) -> String? {
            guard type.matches(value) else {
                return
                    "expects \(Self.article(type)) \(type.rawValue), not \(Self.article(.init(of: value))) \(value.typeName)"
            }
            if let choices, !choices.contains(value) {
                let listed = choices.map { String(describing: $0) }.joined(separator: ", ")
                return "allows only \(listed)"
            }
            if let range, let number = Self.number(value), !range.contains(number) {
                return "allows only \(Self.text(range.lowerBound)) to \(Self.text(range.upperBound))"
            }
            return nil
        }

        private static func article(_ type: ValueType) -> String {
            type == .integer || type == .array || type == .any ? "an" : "a"
        }

        private static func number(_ value: PropertyListValue) -> Double? {
            switch value {
            case .integer(let integer): Double(integer)
            case .unsignedInteger(let integer): Double(integer)
            case .real(let real): real
            case .float(let float): Double(float)
            default: nil
            }
        }

        /// A bound as people write it: `8`, not `8.0`.
        package static func text(_ bound: Double) -> String {
            bound.rounded() == bound && abs(bound) < 1e15 ? String(Int64(bound)) : String(bound)
        }
    }
}
