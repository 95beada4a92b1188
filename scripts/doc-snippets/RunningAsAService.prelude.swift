// What the "Running as a service" article's examples take as given: the service's server.
// Checked by scripts/check-doc-snippets.py.
struct FlagServer {
    func setConnectionLimit(_ limit: Int) {}
    func run() {}
}
let server = FlagServer()
