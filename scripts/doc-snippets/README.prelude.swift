// What README.md's examples take as given. Checked by scripts/check-doc-snippets.py.
let defaults = try Defaults(suiteName: "com.example.app", directory: URL(fileURLWithPath: NSTemporaryDirectory()))
func apply(_ theme: Theme) {}
func resize(_ size: Int) {}
func render(theme: Theme, fontSize: Int) {}
struct Logger { func error(_ message: String) {} }
let log = Logger()
