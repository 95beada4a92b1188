import LiveDefaultsPropertyList

extension JournalFormat.Contents {
    /// Applies the records to `values`, in the order written (docs/design.md, "The journal":
    /// replay). Each key changed is appended to `changed` with the value it had before.
    ///
    /// Pure: the fuzzer (Fuzz/JournalFuzzer.swift) replays what it reads through this too.
    package func apply(
        to values: inout [String: PropertyListValue], changed: inout [(key: String, value: PropertyListValue?)]
    ) {
        for record in records {
            switch record.kind {
            case .set, .setObject:
                guard let value = record.value else { continue }
                changed.append((record.key, values.updateValue(value, forKey: record.key)))
            case .remove:
                changed.append((record.key, values.removeValue(forKey: record.key)))
            case .clear:
                for (key, value) in values { changed.append((key, value)) }
                values.removeAll()
            case .origin:
                continue
            }
        }
    }
}
