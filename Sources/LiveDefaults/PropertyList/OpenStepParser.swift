/// Parses old-style (OpenStep) property-list text. Placeholder until the text codec lands.
package enum OpenStepParser {
    package static func parse(_ text: String) throws -> PropertyListValue {
        throw DefaultsError(.malformedPropertyList, "old-style property lists are not supported yet")
    }
}
