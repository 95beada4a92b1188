/// Writes old-style (OpenStep) property-list text. Placeholder until the text codec lands.
package enum OpenStepWriter {
    package static func string(for value: PropertyListValue) -> String { value.description }
}
