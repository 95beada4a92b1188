import Foundation

/// How typed keys turn values into property-list values and back.
///
/// The conversions for property-list and raw-representable types are inlinable, so that a key made
/// in an app is specialised for its type there: unspecialised, reading a `Key<Bool>` spent most of
/// its time fetching the metadata of `Bool?`.
@usableFromInline
enum KeyCoding {
    @usableFromInline
    struct Mismatch: Error, CustomStringConvertible {
        let expected: String
        let found: PropertyListValue
        @usableFromInline var description: String { "expected \(expected), found \(found.typeName) \(found)" }

        @usableFromInline
        init(expected: String, found: PropertyListValue) {
            self.expected = expected
            self.found = found
        }
    }

    @inlinable
    static func plain<Value: PropertyListRepresentable>(_ stored: PropertyListValue) throws -> Value {
        guard let value = Value(propertyListValue: stored) else {
            throw Mismatch(expected: "\(Value.self)", found: stored)
        }
        return value
    }

    @inlinable
    static func plain<Wrapped: PropertyListRepresentable>(_ stored: PropertyListValue) throws -> Wrapped? {
        try plain(stored) as Wrapped
    }

    @inlinable
    static func raw<Value: RawRepresentable>(_ stored: PropertyListValue) throws -> Value
    where Value.RawValue: PropertyListRepresentable {
        guard let rawValue = Value.RawValue(propertyListValue: stored), let value = Value(rawValue: rawValue) else {
            throw Mismatch(expected: "a raw value of \(Value.self)", found: stored)
        }
        return value
    }

    @inlinable
    static func raw<Wrapped: RawRepresentable>(_ stored: PropertyListValue) throws -> Wrapped?
    where Wrapped.RawValue: PropertyListRepresentable {
        try raw(stored) as Wrapped
    }

    /// Encodes a Codable value as a property-list structure (not opaque data).
    @usableFromInline
    static func encodeCodable<Value: Encodable>(_ value: Value) throws -> PropertyListValue? {
        let encoder = PropertyListEncoder()
        encoder.outputFormat = .binary
        // Wrapped in an array so that single values (a String, an enum) encode at the top level too.
        let data = try encoder.encode([value])
        let decoded: PropertyListValue
        do throws(PropertyListError) {
            decoded = try PropertyListCodec.decode(data).value
        } catch {
            throw DefaultsError(error)
        }
        guard case .array(let values) = decoded, let first = values.first else {
            throw Mismatch(expected: "an encoded \(Value.self)", found: .array([]))
        }
        return first
    }

    /// Decodes a Codable value: strictly, as Foundation's `PropertyListDecoder` does, and when that
    /// fails with the typed getters' conversions inside it too (a stored "50" for an `Int` field),
    /// the rule a top-level typed key follows (``LenientValueDecoder``).
    @usableFromInline
    static func decodeCodable<Value: Decodable>(_ stored: PropertyListValue) throws -> Value {
        let data: Data
        do throws(PropertyListError) {
            data = try PropertyListCodec.encode(.array([stored]), format: .binary)
        } catch {
            throw DefaultsError(error)
        }
        do {
            guard let value = try PropertyListDecoder().decode([Value].self, from: data).first else {
                throw Mismatch(expected: "\(Value.self)", found: stored)
            }
            return value
        } catch {
            guard let value = try? LenientValueDecoder.decode(Value.self, from: stored) else {
                throw (error as? DecodingError).map(withoutWrapper) ?? error
            }
            return value
        }
    }

    /// A decoding error's path as the user's value has it: without the `[0]` of the array the
    /// value is wrapped in above, so a bad field reads `Path: percent`, not `Path: [0].percent`.
    static func withoutWrapper(_ error: DecodingError) -> DecodingError {
        func unwrapped(_ context: DecodingError.Context) -> DecodingError.Context {
            guard context.codingPath.first?.intValue == 0 else { return context }
            return DecodingError.Context(
                codingPath: Array(context.codingPath.dropFirst()), debugDescription: context.debugDescription,
                underlyingError: context.underlyingError)
        }
        switch error {
        case .typeMismatch(let type, let context): return .typeMismatch(type, unwrapped(context))
        case .valueNotFound(let type, let context): return .valueNotFound(type, unwrapped(context))
        case .keyNotFound(let key, let context): return .keyNotFound(key, unwrapped(context))
        case .dataCorrupted(let context): return .dataCorrupted(unwrapped(context))
        @unknown default: return error
        }
    }

    /// Where inside the value decoding failed and why, as the `defaults` command names a path
    /// (`rateLimit.burst: missing`, `servers[1].port: not a Int`); nil for the value as a whole
    /// when nothing more is known. Only made when a read has failed: never on the read path.
    static func failurePlace(_ error: DecodingError, key: String) -> String? {
        func path(_ codingPath: [any CodingKey], _ last: (any CodingKey)? = nil) -> String {
            (codingPath + [last].compactMap { $0 }).reduce(key) { path, component in
                component.intValue.map { "\(path)[\($0)]" } ?? "\(path).\(component.stringValue)"
            }
        }
        switch error {
        case .keyNotFound(let missing, let context): return path(context.codingPath, missing) + ": missing"
        case .valueNotFound(let type, let context): return path(context.codingPath) + ": no \(type)"
        case .typeMismatch(let type, let context): return path(context.codingPath) + ": not a \(type)"
        case .dataCorrupted(let context) where !context.codingPath.isEmpty:
            return path(context.codingPath) + ": " + context.debugDescription
        default: return nil
        }
    }

    /// The report of a stored value a key cannot read; a secret key's value (and the cause, which
    /// quotes it) is left out, its type named only.
    static func decodingError(
        key: String, suite: String, stored: PropertyListValue, cause: any Error, secret: Bool = false
    ) -> DefaultsError {
        let shown = secret ? "\(stored.typeName), secret value not shown" : "\(stored.typeName) \(stored)"
        let place = (cause as? DecodingError).flatMap { failurePlace($0, key: key) }.map { " (\($0))" } ?? ""
        return DefaultsError(
            .decodingFailed,
            "The value of key \"\(key)\" in suite \"\(suite)\" (\(shown)) cannot be read as the key's type\(place), "
                + "so the key reads as its default; the stored value is left as it is. "
                + "Write a value of the right type or remove the key.",
            suite: suite, underlying: secret ? nil : SendableDescription(cause))
    }
}
