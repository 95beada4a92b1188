// What the "Describing your settings" article's examples take as given.
// Checked by scripts/check-doc-snippets.py.
let defaults = try Defaults.inMemory(suiteName: "com.example.editor")
let schema = DefaultsSchema(suite: "com.example.editor", entries: [])
