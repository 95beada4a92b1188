import LiveDefaults
import LiveDefaultsPropertyList

/// What `defaults explain <domain> <key>` prints: every layer of the search list that holds the
/// key, in search order, the winner marked (docs/design.md, "Administered settings: where a value
/// comes from").
package struct ExplainReport: Sendable {
    package var domain: String
    package var key: String
    package var sources: [ValueSource]

    package init(domain: String, key: String, sources: [ValueSource]) {
        self.domain = domain
        self.key = key
        self.sources = sources
    }

    /// One line per layer: `*` on the winner, the layer, where the value is (a file, etcd and its
    /// revision, or the in-memory domain's name), the value in old-style text.
    ///
    /// ```text
    /// * managed         /etc/livedefaults/managed/com.example.app.plist  "https://intranet"
    ///   suite           /home/ada/.config/com.example.app.plist  "https://example.org"
    /// ```
    package var lines: [String] {
        let width = (sources.map(\.layer.rawValue.count).max() ?? 0) + 2
        return sources.map { source in
            let layer = source.layer.rawValue
            return (source.wins ? "* " : "  ") + layer + String(repeating: " ", count: width - layer.count)
                + Self.whereabouts(source) + "  " + OpenStepWriter.singleLineString(for: source.value)
        }
    }

    /// Where the value is: a path, etcd with its revision, or the domain's name.
    private static func whereabouts(_ source: ValueSource) -> String {
        guard let location = source.location else { return source.domain }
        guard let revision = source.revision else { return location }
        return "\(location) (revision \(revision))"
    }

    /// The same as one JSON document:
    /// `{"domain":…,"key":…,"value":…,"layers":[{"layer":…,"domain":…,"location":…,"revision":…,"value":…,"wins":…}]}`.
    package var json: String {
        let layers = sources.map { source in
            "{\"layer\":\(WatchReport.json(source.layer.rawValue)),\"domain\":\(WatchReport.json(source.domain)),"
                + "\"location\":\(source.location.map(WatchReport.json) ?? "null"),"
                + "\"revision\":\(source.revision.map(String.init) ?? "null"),"
                + "\"value\":\(WatchReport.json(source.value)),\"wins\":\(source.wins)}"
        }
        let winner = sources.first { $0.wins }?.value
        return "{\"domain\":\(WatchReport.json(domain)),\"key\":\(WatchReport.json(key)),"
            + "\"value\":\(WatchReport.json(winner)),\"layers\":[\(layers.joined(separator: ","))]}"
    }
}
