import Foundation
import LiveDefaults

/// `-currentHost` and `-host <name>`: the domains' ByHost files instead of their files for any
/// host (docs/design.md, "Administered settings: per-host values").
package enum HostOption {
    /// The host the arguments select, nil for none. `-currentHost` is this machine,
    /// ``Defaults/Host/current``: its ID from `$LIVEDEFAULTS_MACHINE_ID_FILE` when set (for tests),
    /// else `/etc/machine-id`, the same ID a domain opened without a host searches its per-host file by.
    package static func host(in arguments: [String]) -> Defaults.Host? {
        switch arguments.first {
        case "-currentHost":
            return .current
        case "-host" where arguments.count > 1:
            return .named(arguments[1])
        default:
            return nil
        }
    }
}

extension CommandDomains {
    /// These domains, with named domains and the global domain opened as `host`'s ByHost files.
    package func forHost(_ host: Defaults.Host) -> CommandDomains {
        let fallback = open
        var domains = self
        // The reading verbs' snapshot reads the file for any host: the ByHost store reads instead.
        domains.openForReading = nil
        domains.open = { domain, directoryPath, watching in
            let directory = URL(fileURLWithPath: directoryPath, isDirectory: true)
            return switch domain {
            case .global:
                try Defaults(suiteName: Defaults.globalDomain, directory: directory, watchesFiles: watching, host: host)
            case .named(let name):
                try Defaults(suiteName: name, directory: directory, watchesFiles: watching, host: host)
            case .path, .remote:
                try fallback(domain, directoryPath, watching)
            }
        }
        return domains
    }
}
