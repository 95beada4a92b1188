// What docs/fleet.md's examples take as given. Checked by scripts/check-doc-snippets.py.
let defaults = try Defaults(suiteName: "com.example.app", directory: URL(fileURLWithPath: NSTemporaryDirectory()))
// A fleet suite's connection; only type-checked, never run.
let connection = defaults.addFleetSuite(
    try FleetSuite(name: "com.example.fleet", endpoints: [URL(string: "http://127.0.0.1:2379")!]))
