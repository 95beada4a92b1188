import Foundation

extension PropertyListValue {
    /// Converts a Foundation property-list object (`String`, `NSNumber`, `Date`, `Data`, `URL`,
    /// arrays and `[String: Any]` dictionaries of them) into a value.
    ///
    /// - Parameter object: The object to convert.
    /// - Throws: ``DefaultsError`` with code ``DefaultsError/Code/notAPropertyList`` naming the first
    ///   part that is not a property list (for example a dictionary with a non-string key).
    public init(foundationObject object: Any) throws {
        self = try Self.convert(object, at: "value")
    }

    private static func convert(_ object: Any, at path: String) throws -> PropertyListValue {
        // An NSNumber instance first, by its dynamic type: on Linux every Swift number and Bool also
        // casts to NSNumber (and an NSNumber casts to Bool), so only the instance's type is reliable.
        if type(of: object) is NSNumber.Type, let number = object as? NSNumber {
            return convert(number: number)
        }
        switch object {
        case let value as PropertyListValue: return value
        case let value as String: return .string(value)
        case let value as NSString: return .string(String(value))
        case let value as Bool: return .bool(value)
        case let value as Int: return .integer(Int64(value))
        case let value as Int8: return .integer(Int64(value))
        case let value as Int16: return .integer(Int64(value))
        case let value as Int32: return .integer(Int64(value))
        case let value as Int64: return .integer(value)
        case let value as UInt: return PropertyListValue(integer: value)
        case let value as UInt8: return .integer(Int64(value))
        case let value as UInt16: return .integer(Int64(value))
        case let value as UInt32: return .integer(Int64(value))
        case let value as UInt64: return PropertyListValue(integer: value)
        case let value as Double: return .real(value)
        case let value as Float: return .float(value)
        case let value as Date: return .date(value)
        case let value as Data: return .data(value)
        case let value as URL: return .string(URL.storedString(value))
        case let value as [Any]:
            return .array(try value.enumerated().map { try convert($0.element, at: "\(path)[\($0.offset)]") })
        case let value as [String: Any]:
            var result: [String: PropertyListValue] = [:]
            result.reserveCapacity(value.count)
            for (key, element) in value { result[key] = try convert(element, at: "\(path)[\(key.debugDescription)]") }
            return .dictionary(result)
        case let value as NSDictionary:
            var result: [String: PropertyListValue] = [:]
            for (key, element) in value {
                guard let key = key as? String else {
                    throw DefaultsError(
                        .notAPropertyList,
                        "\(path) has a key of type \(type(of: key)); property-list dictionary keys must be strings")
                }
                result[key] = try convert(element, at: "\(path)[\(key.debugDescription)]")
            }
            return .dictionary(result)
        default:
            throw DefaultsError(
                .notAPropertyList,
                "\(path) is a \(type(of: object)), which is not a property-list type "
                    + "(use String, a number, Bool, Date, Data, URL, or arrays and [String: …] dictionaries of them)")
        }
    }

    private static func convert(number: NSNumber) -> PropertyListValue {
        switch String(cString: number.objCType) {
        case "c", "B": return .bool(number.boolValue)  // CFBoolean reports "c"; no other NSNumber does here
        case "f": return .float(number.floatValue)
        case "d": return .real(number.doubleValue)
        case "Q", "L", "I", "S", "C":
            return PropertyListValue(integer: number.uint64Value)
        default: return .integer(number.int64Value)
        }
    }

    /// This value as a Foundation object: `String`, `Int`/`UInt64`, `Double`, `Bool`, `Date`, `Data`,
    /// `[Any]` or `[String: Any]` — what `UserDefaults.object(forKey:)` returns.
    public var foundationObject: Any {
        switch self {
        case .string(let value): value
        case .integer(let value): Int(value)
        case .unsignedInteger(let value): value
        case .real(let value): value
        case .float(let value): value
        case .bool(let value): value
        case .date(let value): value
        case .data(let value): value
        case .array(let values): values.map(\.foundationObject)
        case .dictionary(let values): values.mapValues(\.foundationObject)
        }
    }
}

extension URL {
    /// How a URL is kept in a suite: a file URL as its path (what Foundation's UserDefaults writes on
    /// Linux, so both read it), any other URL as its absolute string (Foundation would keep only the
    /// path and lose the rest).
    static func storedString(_ url: URL) -> String {
        url.isFileURL ? url.path : url.absoluteString
    }

    /// Reads a stored URL back: an absolute URL string with a scheme, else a file path (a leading `~`
    /// expanded), as `UserDefaults.url(forKey:)` does.
    init?(storedString string: String) {
        if let schemeEnd = string.firstIndex(of: ":"),
            string[..<schemeEnd].allSatisfy({ $0.isLetter || "+-.".contains($0) }),
            string[..<schemeEnd].count > 1, let url = URL(string: string), url.scheme != nil
        {
            self = url
        } else {
            self = URL(fileURLWithPath: NSString(string: string).expandingTildeInPath)
        }
    }
}
