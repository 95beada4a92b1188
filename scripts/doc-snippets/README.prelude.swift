// What README.md's examples take as given. Checked by scripts/check-doc-snippets.py.
let defaults = try Defaults(suiteName: "com.example.app", directory: URL(fileURLWithPath: NSTemporaryDirectory()))
func apply(_ theme: Theme) {}
func resize(_ size: Int) {}
func render(theme: Theme, fontSize: Int) {}
struct Logger { func error(_ message: String) {} }
let log = Logger()
// A fleet suite's connection (the fleet settings section); only type-checked, never run.
let connection = defaults.addFleetSuite(
    try FleetSuite(name: "com.example.fleet", endpoints: [URL(string: "http://127.0.0.1:2379")!]))
