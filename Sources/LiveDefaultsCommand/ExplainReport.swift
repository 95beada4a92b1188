import LiveDefaults
import LiveDefaultsPropertyList

/// What `defaults explain <domain> <key>` prints: every layer of the search list that holds the
/// key, in search order, the winner marked (docs/design.md, "Administered settings: where a value
/// comes from").
package struct ExplainReport: Sendable {
    package var domain: String
    package var key: String
    package var sources: [ValueSource]
    /// Layers that hold the key but do not count, and why (a managed file a user could change).
    package var ignored: [IgnoredLayer]

    /// A layer of the search list that holds the key and is ignored: programs never read its value.
    package struct IgnoredLayer: Sendable, Equatable {
        package var layer: ValueSource.Layer
        /// The file.
        package var location: String
        package var value: PropertyListValue
        /// Why it is ignored, in a sentence.
        package var reason: String

        package init(layer: ValueSource.Layer, location: String, value: PropertyListValue, reason: String) {
            self.layer = layer
            self.location = location
            self.value = value
            self.reason = reason
        }
    }

    package init(domain: String, key: String, sources: [ValueSource], ignored: [IgnoredLayer] = []) {
        self.domain = domain
        self.key = key
        self.sources = sources
        self.ignored = ignored
    }

    /// One line per layer: `*` on the winner, the layer, where the value is (a file, etcd and its
    /// revision, or the in-memory domain's name), the value in old-style text.
    ///
    /// ```text
    /// * managed         /etc/livedefaults/managed/com.example.app.plist  "https://intranet"
    ///   suite           /home/ada/.config/com.example.app.plist  "https://example.org"
    /// ```
    ///
    /// An ignored layer follows, marked `-`, with the reason: `- managed  /etc/…/com.example.app.plist
    /// "https://intranet"  (ignored: the managed file … can be written by group or others (mode 666), so a
    /// user other than uid 0 could change it)`.
    package var lines: [String] {
        let width = ((sources.map(\.layer.rawValue.count) + ignored.map(\.layer.rawValue.count)).max() ?? 0) + 2
        func padded(_ layer: ValueSource.Layer) -> String {
            layer.rawValue + String(repeating: " ", count: width - layer.rawValue.count)
        }
        return sources.map { source in
            (source.wins ? "* " : "  ") + padded(source.layer) + Self.whereabouts(source) + "  "
                + OpenStepWriter.singleLineString(for: source.value)
        }
            + ignored.map { layer in
                "- " + padded(layer.layer) + layer.location + "  " + OpenStepWriter.singleLineString(for: layer.value)
                    + "  (ignored: \(layer.reason))"
            }
    }

    /// Where the value is: a path, etcd with its revision, or the domain's name.
    private static func whereabouts(_ source: ValueSource) -> String {
        guard let location = source.location else { return source.domain }
        guard let revision = source.revision else { return location }
        return "\(location) (revision \(revision))"
    }

    /// The same as one JSON document:
    /// `{"domain":…,"key":…,"value":…,"layers":[{"layer":…,"domain":…,"location":…,"revision":…,"value":…,"wins":…}],
    /// "ignored":[{"layer":…,"location":…,"value":…,"ignored":<the reason>}]}`.
    package var json: String {
        let layers = sources.map { source in
            "{\"layer\":\(WatchReport.json(source.layer.rawValue)),\"domain\":\(WatchReport.json(source.domain)),"
                + "\"location\":\(source.location.map(WatchReport.json) ?? "null"),"
                + "\"revision\":\(source.revision.map(String.init) ?? "null"),"
                + "\"value\":\(WatchReport.json(source.value)),\"wins\":\(source.wins)}"
        }
        let ignoredLayers = ignored.map { layer in
            "{\"layer\":\(WatchReport.json(layer.layer.rawValue)),\"location\":\(WatchReport.json(layer.location)),"
                + "\"value\":\(WatchReport.json(layer.value)),\"ignored\":\(WatchReport.json(layer.reason))}"
        }
        let winner = sources.first { $0.wins }?.value
        return "{\"domain\":\(WatchReport.json(domain)),\"key\":\(WatchReport.json(key)),"
            + "\"value\":\(WatchReport.json(winner)),\"layers\":[\(layers.joined(separator: ","))],"
            + "\"ignored\":[\(ignoredLayers.joined(separator: ","))]}"
    }
}
