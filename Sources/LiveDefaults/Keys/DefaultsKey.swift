import Foundation

extension Defaults {
    /// The namespace for typed keys: declare them as static members so they read as `.theme`.
    ///
    /// ```swift
    /// extension Defaults.Keys {
    ///     static let theme = Defaults.Key<Theme>("theme", default: .system)   // RawRepresentable
    ///     static let profile = Defaults.Key<Profile?>("profile")             // Codable, optional
    /// }
    /// defaults[.theme] = .dark
    /// ```
    public typealias Keys = AnyKey

    /// The untyped base of ``Key``; its static members are the app's keys.
    // Safe as Sendable: every stored property is an immutable `let` of a Sendable type.
    public class AnyKey: @unchecked Sendable {
        /// The key's name in the suite file.
        public let name: String
        /// Whether the key's value is secret (a token, a password): the `defaults` command and the
        /// library's messages never show it in full (``Defaults/Key/secret()``).
        public let isSecret: Bool
        /// The name as the effective-value table keys it, hashed once for every lookup.
        let hashedName: HashedKey

        @usableFromInline
        init(name: String, isSecret: Bool = false) {
            self.name = name
            self.isSecret = isSecret
            self.hashedName = HashedKey(name)
        }

        /// The key's default as stored, nil when it has none to store (an optional key's nil).
        func encodedDefault() throws -> PropertyListValue? { nil }
    }

    /// A typed key: a name, a default value, and how values of `Value` are stored.
    ///
    /// `Value` may be a property-list type, an Optional, a `RawRepresentable` type whose raw value
    /// is a property-list type (stored as the raw value), or a `Codable` type (stored as a
    /// property-list structure — dictionaries and arrays — so the file stays readable and editable).
    // Safe as Sendable: immutable, and every stored closure is @Sendable.
    public final class Key<Value: Sendable>: AnyKey, @unchecked Sendable {
        /// The value read when the key has none, or when what is stored cannot be read as `Value`.
        public let defaultValue: Value
        @usableFromInline
        let encode: @Sendable (Value) throws -> PropertyListValue?
        @usableFromInline
        let decode: @Sendable (PropertyListValue) throws -> Value

        @usableFromInline
        init(
            name: String, defaultValue: Value, encode: @escaping @Sendable (Value) throws -> PropertyListValue?,
            decode: @escaping @Sendable (PropertyListValue) throws -> Value, isSecret: Bool = false
        ) {
            self.defaultValue = defaultValue
            self.encode = encode
            self.decode = decode
            super.init(name: name, isSecret: isSecret)
        }

        override func encodedDefault() throws -> PropertyListValue? { try encode(defaultValue) }

        /// The same key, marked secret: its value is never shown in full — not in a
        /// ``DefaultsError/Code/decodingFailed`` message, and not by the `defaults` command once the
        /// key is in an installed ``DefaultsSchema``.
        ///
        /// ```swift
        /// static let apiToken = Defaults.Key<String>("apiToken", default: "").secret()
        /// ```
        ///
        /// - Returns: A key with the same name, default and coding, whose ``Defaults/AnyKey/isSecret`` is true.
        public func secret() -> Key<Value> {
            Key(name: name, defaultValue: defaultValue, encode: encode, decode: decode, isSecret: true)
        }
    }
}

// MARK: - Making keys

extension Defaults.Key where Value: PropertyListRepresentable {
    /// A key of a property-list type (`String`, `Int`, `Bool`, `Double`, `Date`, `Data`, `URL`,
    /// arrays and dictionaries of them).
    @inlinable
    public convenience init(_ name: String, default defaultValue: Value) {
        self.init(name: name, defaultValue: defaultValue, encode: { $0.propertyListValue }, decode: KeyCoding.plain)
    }
}

extension Defaults.Key where Value: PropertyListRepresentable & Codable {
    /// A key of a property-list type (preferred over the Codable form for types that are both).
    @inlinable
    public convenience init(_ name: String, default defaultValue: Value) {
        self.init(name: name, defaultValue: defaultValue, encode: { $0.propertyListValue }, decode: KeyCoding.plain)
    }
}

extension Defaults.Key where Value: RawRepresentable, Value.RawValue: PropertyListRepresentable {
    /// A key of a `RawRepresentable` type (an enum with `String` or `Int` raw values), stored as
    /// its raw value.
    @inlinable
    public convenience init(_ name: String, default defaultValue: Value) {
        self.init(
            name: name, defaultValue: defaultValue, encode: { $0.rawValue.propertyListValue }, decode: KeyCoding.raw)
    }
}

extension Defaults.Key where Value: RawRepresentable & Codable, Value.RawValue: PropertyListRepresentable {
    /// A key of a `RawRepresentable` type that is also `Codable`: stored as its raw value.
    @inlinable
    public convenience init(_ name: String, default defaultValue: Value) {
        self.init(
            name: name, defaultValue: defaultValue, encode: { $0.rawValue.propertyListValue }, decode: KeyCoding.raw)
    }
}

extension Defaults.Key where Value: Codable {
    /// A key of a `Codable` type, stored as a property-list structure.
    @inlinable
    public convenience init(_ name: String, default defaultValue: Value) {
        self.init(
            name: name, defaultValue: defaultValue, encode: KeyCoding.encodeCodable, decode: KeyCoding.decodeCodable)
    }
}

extension Defaults.Key {
    /// An optional key of a property-list type: nil when absent; setting nil removes it.
    @inlinable
    public convenience init<Wrapped: PropertyListRepresentable>(_ name: String) where Value == Wrapped? {
        self.init(name: name, defaultValue: nil, encode: { $0?.propertyListValue }, decode: KeyCoding.plain)
    }

    /// An optional key of a property-list type that is also Codable.
    @inlinable
    public convenience init<Wrapped: PropertyListRepresentable & Codable>(_ name: String) where Value == Wrapped? {
        self.init(name: name, defaultValue: nil, encode: { $0?.propertyListValue }, decode: KeyCoding.plain)
    }

    /// An optional key of a `RawRepresentable` type.
    @inlinable
    public convenience init<Wrapped: RawRepresentable>(_ name: String)
    where Value == Wrapped?, Wrapped.RawValue: PropertyListRepresentable {
        self.init(name: name, defaultValue: nil, encode: { $0?.rawValue.propertyListValue }, decode: KeyCoding.raw)
    }

    /// An optional key of a `RawRepresentable` and `Codable` type, stored as its raw value.
    @inlinable
    public convenience init<Wrapped: RawRepresentable & Codable>(_ name: String)
    where Value == Wrapped?, Wrapped.RawValue: PropertyListRepresentable {
        self.init(name: name, defaultValue: nil, encode: { $0?.rawValue.propertyListValue }, decode: KeyCoding.raw)
    }

    /// An optional key of a `Codable` type, stored as a property-list structure.
    @inlinable
    public convenience init<Wrapped: Codable & Sendable>(_ name: String) where Value == Wrapped? {
        self.init(
            name: name, defaultValue: nil, encode: { try $0.map(KeyCoding.encodeCodable) ?? nil },
            decode: { try KeyCoding.decodeCodable($0) as Wrapped })
    }
}

// MARK: - Using keys

extension Defaults {
    /// The value of a typed key: its effective value through the search list, or the key's default
    /// when there is none or when the stored value cannot be read as the key's type (the failure
    /// is then reported through ``DefaultsErrorReporting`` — once per bad value, whether the key is
    /// observed or not — and readable with ``decodingError(for:)``).
    /// Setting writes the suite; setting nil (for an optional key) removes the value.
    @inlinable
    public subscript<Value>(key: Key<Value>) -> Value {
        get {
            guard let stored = storedValue(of: key) else { return key.defaultValue }
            do {
                return try key.decode(stored)
            } catch {
                noteUndecodable(key, stored, error)
                return key.defaultValue
            }
        }
        set {
            do {
                write(try key.encode(newValue), forKey: key.name)
            } catch {
                reportEncodingFailure(of: key, error)
            }
        }
    }

    /// The effective value of a typed key's name, looked up by the hash the key keeps.
    @usableFromInline
    func storedValue(of key: AnyKey) -> PropertyListValue? {
        let name = key.hashedName
        return state.withLock { state in
            if _fastPath(state.effective.isTableMade) { return state.effective.tableValue(name) }
            return state.effective.countedRead(name)
        }
    }

    @usableFromInline
    func reportEncodingFailure(of key: AnyKey, _ error: any Error) {
        DefaultsErrorReporting.report(
            DefaultsError(
                .encodingFailed,
                "The value for key \"\(key.name)\" in suite \"\(suiteName)\" could not be encoded; nothing was written.",
                suite: suiteName, underlying: SendableDescription(error)))
    }

    /// Why the stored value of `key` cannot be read as the key's type, or nil when it can (or
    /// there is none).
    public func decodingError<Value>(for key: Key<Value>) -> DefaultsError? {
        guard let stored = propertyList(forKey: key.name) else { return nil }
        do {
            _ = try key.decode(stored)
            return nil
        } catch {
            return KeyCoding.decodingError(
                key: key.name, suite: suiteName, stored: stored, cause: error, secret: key.isSecret)
        }
    }

    /// Removes the suite's value of a typed key, so it reads as its default again.
    public func reset<Value>(_ key: Key<Value>) {
        removeObject(forKey: key.name)
    }
}
