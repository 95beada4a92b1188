// What the DocC articles' examples take as given, unless an article has a prelude of its own.
// Checked by scripts/check-doc-snippets.py.
let defaults = try Defaults.inMemory(suiteName: "com.example.app")
enum Theme: String, Codable, Sendable { case system, light, dark }
extension Defaults.Keys {
    static let theme = Defaults.Key<Theme>("theme", default: .system)
    static let fontSize = Defaults.Key<Int>("fontSize", default: 14)
    static let port = Defaults.Key<Int>("port", default: 8080)
}
func apply(_ theme: Theme) {}
func resize(_ size: Int) {}
