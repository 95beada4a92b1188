// What GettingStarted.md's examples take as given (it declares its own keys). Checked by
// scripts/check-doc-snippets.py.
let defaults = try Defaults.inMemory(suiteName: "com.example.app")
