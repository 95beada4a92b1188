import LiveDefaultsPropertyList

// What both fuzzers need (Fuzz/run.sh compiles this file into each).

/// Whether `value` holds a NaN anywhere: a NaN is not equal to itself, so such a value cannot be
/// compared with its round trip.
func containsNaN(_ value: PropertyListValue) -> Bool {
    switch value {
    case .real(let number): number.isNaN
    case .float(let number): number.isNaN
    case .array(let elements): elements.contains(where: containsNaN)
    case .dictionary(let entries): entries.values.contains(where: containsNaN)
    default: false
    }
}
