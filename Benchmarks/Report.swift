import Foundation

/// The measurements of one run, printed as a table or JSON.
struct Report {
    struct Row: Codable {
        var group: String
        var name: String
        /// LiveDefaults' figure.
        var liveDefaults: Double
        /// Foundation's UserDefaults' figure, when it has one.
        var foundation: Double?
        /// dconf's figure for the same operation, when it has one and dconf was measured.
        var dconf: Double?
        /// The raw limit (a Mutex-guarded dictionary, encoding plus writing), when there is one.
        var limit: Double?
        var unit: String
        /// The target, as text, and whether this run met it.
        var target: String?
        var met: Bool?
        /// The target against dconf, and whether this run met it.
        var dconfTarget: String?
        var dconfMet: Bool?
    }

    let options: BenchmarkOptions
    var rows: [Row] = []
    var notes: [String] = []

    init(options: BenchmarkOptions) { self.options = options }

    mutating func add(
        _ group: String, _ name: String, _ liveDefaults: Double, foundation: Double? = nil, limit: Double? = nil,
        unit: String = "ns", target: String? = nil, met: Bool? = nil, dconf: Double? = nil,
        dconfTarget: String? = nil, dconfMet: ((Double) -> Bool)? = nil
    ) {
        rows.append(
            Row(
                group: group, name: name, liveDefaults: liveDefaults, foundation: foundation, dconf: dconf,
                limit: limit,
                unit: unit, target: target, met: met, dconfTarget: dconf == nil ? nil : dconfTarget,
                dconfMet: dconf.flatMap { value in dconfMet.map { $0(value) } }))
    }

    static func format(_ value: Double?, _ unit: String) -> String {
        guard let value else { return "—" }
        switch unit {
        case "ns":
            if value >= 1_000_000 { return String(format: "%.2f ms", value / 1_000_000) }
            if value >= 1_000 { return String(format: "%.2f µs", value / 1_000) }
            return String(format: "%.0f ns", value)
        case "MB": return String(format: "%.1f MB", value)
        case "count": return String(format: "%.0f", value)
        default: return String(format: "%.2f %@", value, unit)
        }
    }

    func print() {
        if options.json {
            struct Document: Codable {
                var machine: String
                var quick: Bool
                var rows: [Row]
                var notes: [String]
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            let document = Document(machine: Self.machine(), quick: options.quick, rows: rows, notes: notes)
            if let data = try? encoder.encode(document) { Swift.print(String(decoding: data, as: UTF8.self)) }
            return
        }
        Swift.print("LiveDefaults benchmark — \(Self.machine())\(options.quick ? " (quick)" : "")\n")
        let header = [
            "measurement", "LiveDefaults", "Foundation", "dconf", "limit", "ratio", "target", "against dconf",
        ]
        var table: [[String]] = [header]
        for row in rows {
            var ratios: [String] = []
            if let foundation = row.foundation, row.liveDefaults > 0 {
                ratios.append(
                    String(
                        format: row.unit == "MB" ? "%.1f× smaller" : "%.1f× faster", foundation / row.liveDefaults))
            }
            if let limit = row.limit, limit > 0 {
                ratios.append(String(format: "%.2f× the limit", row.liveDefaults / limit))
            }
            let ratio = ratios.isEmpty ? "—" : ratios.joined(separator: ", ")
            let target = row.target.map { "\($0) \(row.met == true ? "✓" : row.met == false ? "✗" : "")" } ?? ""
            var againstDconf = ""
            if let dconf = row.dconf, row.liveDefaults > 0 {
                againstDconf = String(format: "%.1f× faster", dconf / row.liveDefaults)
                if let dconfTarget = row.dconfTarget {
                    againstDconf += " (\(dconfTarget) \(row.dconfMet == true ? "✓" : "✗"))"
                }
            }
            table.append([
                "\(row.group): \(row.name)", Self.format(row.liveDefaults, row.unit),
                Self.format(row.foundation, row.unit), Self.format(row.dconf, row.unit),
                Self.format(row.limit, row.unit), ratio, target, againstDconf,
            ])
        }
        let widths = (0..<header.count).map { column in table.map { $0[column].count }.max() ?? 0 }
        for (index, line) in table.enumerated() {
            Swift.print(
                zip(line, widths).map { $0.0.padding(toLength: $0.1, withPad: " ", startingAt: 0) }.joined(
                    separator: "  "))
            if index == 0 { Swift.print(widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ")) }
        }
        if !notes.isEmpty { Swift.print("\n" + notes.joined(separator: "\n")) }
    }

    static func machine() -> String {
        let cpu =
            (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
            .split(separator: "\n").first { $0.hasPrefix("model name") }?
            .split(separator: ":").last?.trimmingCharacters(in: .whitespaces) ?? "unknown CPU"
        return "\(ProcessInfo.processInfo.activeProcessorCount) cores, \(cpu), "
            + "\(ProcessInfo.processInfo.physicalMemory / 1_073_741_824) GiB"
    }
}
