// What the fleet-connection article's examples take as given. Checked by scripts/check-doc-snippets.py.
let fleet = try FleetSuite(name: "com.example.service", endpoints: [URL(string: "https://etcd.internal:2379")!])
let connection = try Defaults(suiteName: "com.example.service").addFleetSuite(fleet)
