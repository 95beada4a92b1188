import Foundation

// The UserDefaults getters and setters, with the same names and conversions.
extension Defaults {
    /// The effective value of `key` as a Foundation object (`String`, `Int`, `Double`, `Bool`,
    /// `Date`, `Data`, `[Any]`, `[String: Any]`), or nil.
    public func object(forKey key: String) -> Any? {
        propertyList(forKey: key)?.foundationObject
    }

    /// The string value of `key`; a number is given as its text and a Boolean as "1" or "0", as
    /// UserDefaults does (a `Float` as its own text: "12.34").
    public func string(forKey key: String) -> String? {
        withEffectiveValue(forKey: key) { value in
            switch value {
            case .string(let value): value
            case .integer(let value): String(value)
            case .unsignedInteger(let value): String(value)
            case .real(let value): String(value)
            case .float(let value): String(value)
            case .bool(let value): value ? "1" : "0"
            default: nil
            }
        }
    }

    /// The array value of `key`, or nil when it is not an array.
    public func array(forKey key: String) -> [Any]? {
        propertyList(forKey: key)?.arrayValue?.map(\.foundationObject)
    }

    /// The array value of `key` when every element is a string, else nil.
    public func stringArray(forKey key: String) -> [String]? {
        guard let values = propertyList(forKey: key)?.arrayValue else { return nil }
        var strings: [String] = []
        strings.reserveCapacity(values.count)
        for value in values {
            guard case .string(let string) = value else { return nil }
            strings.append(string)
        }
        return strings
    }

    /// The dictionary value of `key`, or nil when it is not a dictionary.
    public func dictionary(forKey key: String) -> [String: Any]? {
        propertyList(forKey: key)?.dictionaryValue?.mapValues(\.foundationObject)
    }

    /// The data value of `key`, or nil when it is not data.
    public func data(forKey key: String) -> Data? {
        if case .data(let value) = propertyList(forKey: key) { return value }
        return nil
    }

    /// The integer value of `key`: numbers converted, Booleans as 0 or 1, strings parsed as
    /// UserDefaults does ("12abc" is 12); 0 when absent or not convertible.
    public func integer(forKey key: String) -> Int {
        withEffectiveValue(forKey: key) { value in
            if case .integer(let number)? = value { return Int(clamping: number) }
            return value.map(ValueConversion.integer) ?? 0
        }
    }

    /// The floating-point value of `key`, converted as ``integer(forKey:)``; 0 when absent.
    public func double(forKey key: String) -> Double {
        withEffectiveValue(forKey: key) { $0.map(ValueConversion.double) ?? 0 }
    }

    /// The floating-point value of `key` as a `Float`; 0 when absent.
    public func float(forKey key: String) -> Float {
        Float(double(forKey: key))
    }

    /// The Boolean value of `key`: numbers are true when not zero; strings are true when they
    /// start with Y, y, T, t or a digit 1–9 ("YES", "true", "1"), as UserDefaults reads them.
    public func bool(forKey key: String) -> Bool {
        withEffectiveValue(forKey: key) { value in
            // A stored Boolean is the common case: answered without the general conversion.
            if case .bool(let flag)? = value { return flag }
            return value.map(ValueConversion.bool) ?? false
        }
    }

    /// The URL value of `key`: a stored string with a scheme as that URL, else as a file path
    /// (`~` expanded).
    public func url(forKey key: String) -> URL? {
        guard case .string(let string) = propertyList(forKey: key) else { return nil }
        return URL(storedString: string)
    }

    /// Sets `key` to a Boolean.
    public func set(_ value: Bool, forKey key: String) { write(.bool(value), forKey: key) }
    /// Sets `key` to an integer.
    public func set(_ value: Int, forKey key: String) { write(.integer(Int64(value)), forKey: key) }
    /// Sets `key` to a floating-point number.
    public func set(_ value: Double, forKey key: String) { write(.real(value), forKey: key) }
    /// Sets `key` to a floating-point number.
    public func set(_ value: Float, forKey key: String) { write(.float(value), forKey: key) }
    /// Sets `key` to a string.
    public func set(_ value: String, forKey key: String) { write(.string(value), forKey: key) }

    /// Sets `key` to a URL: a file URL is stored as its path (as Foundation's UserDefaults on
    /// Linux does, so each reads the other's), any other URL as its absolute string. Nil removes.
    @_disfavoredOverload
    public func set(_ url: URL?, forKey key: String) {
        write(url.map { .string(URL.storedString($0)) }, forKey: key)
    }

    /// Sets `key` to any property-list value (`Date`, `Data`, arrays and `[String: …]`
    /// dictionaries of property-list types, …). A type that is not a property list does not compile.
    public func set<Value: PropertyListRepresentable>(_ value: Value, forKey key: String) {
        write(value.propertyListValue, forKey: key)
    }

    /// Sets `key` to a Foundation object, as `UserDefaults.set(_:forKey:)` takes it; nil removes.
    ///
    /// - Throws: ``DefaultsError/Code/notAPropertyList``, naming the offending part, when the object
    ///   is not a property list. Nothing is changed then.
    @_disfavoredOverload
    public func set(_ value: Any?, forKey key: String) throws {
        guard let value else {
            removeObject(forKey: key)
            return
        }
        write(try PropertyListValue(foundationObject: value), forKey: key)
    }
}

/// The conversions UserDefaults applies in `integer(forKey:)`, `double(forKey:)` and `bool(forKey:)`.
package enum ValueConversion {
    package static func integer(_ value: PropertyListValue) -> Int {
        switch value {
        case .integer(let number): Int(clamping: number)
        case .unsignedInteger(let number): Int(clamping: number)
        case .real(let number): truncated(number)
        case .float(let number): truncated(Double(number))
        case .bool(let flag): flag ? 1 : 0
        case .string(let text): Int(clamping: Int64(leadingNumber(in: text).rounded(.towardZero).clamped))
        default: 0
        }
    }

    private static func truncated(_ number: Double) -> Int {
        number.isFinite ? Int(clamping: Int64(number.rounded(.towardZero).clamped)) : 0
    }

    package static func double(_ value: PropertyListValue) -> Double {
        switch value {
        case .integer(let number): Double(number)
        case .unsignedInteger(let number): Double(number)
        case .real(let number): number
        case .float(let number): Double(number)
        case .bool(let flag): flag ? 1 : 0
        case .string(let text): leadingNumber(in: text)
        default: 0
        }
    }

    package static func bool(_ value: PropertyListValue) -> Bool {
        switch value {
        case .bool(let flag): return flag
        case .integer(let number): return number != 0
        case .unsignedInteger(let number): return number != 0
        case .real(let number): return number != 0
        case .float(let number): return number != 0
        case .string(let text):
            // NSString.boolValue: skip white space, a sign and leading zeros; then Y, T or 1–9.
            var characters = text.unicodeScalars.drop { $0 == " " || $0 == "\t" || $0 == "\n" }
            if let first = characters.first, first == "+" || first == "-" { characters = characters.dropFirst() }
            characters = characters.drop { $0 == "0" }
            guard let first = characters.first else { return false }
            return "YyTt123456789".unicodeScalars.contains(first)
        default: return false
        }
    }

    /// The number a string starts with, as NSString's `doubleValue` reads it ("12abc" → 12).
    static func leadingNumber(in text: String) -> Double {
        let trimmed = text.drop { $0 == " " || $0 == "\t" || $0 == "\n" }
        var end = trimmed.startIndex
        var seenDigit = false
        var seenDot = false
        var seenExponent = false
        for index in trimmed.indices {
            let character = trimmed[index]
            if character.isASCII, character.isNumber {
                seenDigit = true
            } else if (character == "+" || character == "-")
                && (index == trimmed.startIndex || "eE".contains(trimmed[trimmed.index(before: index)]))
            {
            } else if character == ".", !seenDot, !seenExponent {
                seenDot = true
            } else if "eE".contains(character), seenDigit, !seenExponent {
                seenExponent = true
            } else {
                break
            }
            end = trimmed.index(after: index)
        }
        var candidate = trimmed[..<end]
        while !candidate.isEmpty, Double(candidate) == nil { candidate = candidate.dropLast() }
        return Double(candidate) ?? 0
    }
}

extension Double {
    /// The value clamped into the range of `Int64`.
    fileprivate var clamped: Double {
        Swift.min(Swift.max(self, -9.223_372_036_854_775_807e18), 9.223_372_036_854_774_784e18)
    }
}
