import Foundation

// Per-host values: ByHost files (docs/design.md, "Administered settings: per-host values").
extension Defaults {
    /// A machine whose own values of a suite are kept apart, in a ByHost file:
    /// `$XDG_CONFIG_HOME/ByHost/<suite>.<identifier>.plist`, as macOS's `-currentHost` files.
    public struct Host: Sendable, Hashable {
        /// The name of the machine in ByHost file names: for this machine, its machine ID.
        public let identifier: String

        /// A machine by the identifier its ByHost files carry (`defaults -host <name>`).
        ///
        /// - Parameter identifier: The identifier.
        /// - Returns: The host.
        public static func named(_ identifier: String) -> Host { Host(identifier: identifier) }

        /// This machine: its ID from `/etc/machine-id` (else `/var/lib/dbus/machine-id`, else its
        /// host name), read once per process. When `$LIVEDEFAULTS_MACHINE_ID_FILE` is set, the ID
        /// comes from the file it names instead, as for ``current(machineIDFile:)``: tests, and the
        /// `defaults` command run by them, keep the machine's own ID out of their files.
        public static var current: Host { currentHost }

        // One variable read with getenv, as ``AdministeredSettings/fromEnvironment()`` reads its two.
        private static let currentHost: Host = {
            if let file = getenv("LIVEDEFAULTS_MACHINE_ID_FILE").map({ String(cString: $0) }), !file.isEmpty {
                return current(machineIDFile: URL(fileURLWithPath: file))
            }
            return current(
                machineIDFiles: ["/etc/machine-id", "/var/lib/dbus/machine-id"].map { URL(fileURLWithPath: $0) })
        }()

        /// This machine, its ID read from `machineIDFile` (tests give a file of their own).
        ///
        /// - Parameter machineIDFile: A file holding the machine ID on its first line.
        /// - Returns: The host; its host name when the file holds no ID.
        public static func current(machineIDFile: URL) -> Host {
            current(machineIDFiles: [machineIDFile])
        }

        private static func current(machineIDFiles: [URL]) -> Host {
            for file in machineIDFiles {
                guard let text = try? String(contentsOf: file, encoding: .utf8) else { continue }
                let identifier = text.split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
                let trimmed = identifier.trimmingCharacters(in: .whitespaces)
                if !trimmed.isEmpty { return Host(identifier: trimmed) }
            }
            return Host(identifier: ProcessInfo.processInfo.hostName)
        }
    }

    /// Opens the suite `suiteName` for one machine: reads and writes go to its ByHost file,
    /// `<directory>/ByHost/<suiteName>.<host identifier>.plist`, and the suite's file for any host
    /// is searched right after it. A ``Defaults`` opened without a host searches this machine's
    /// ByHost file right before the suite's file.
    ///
    /// ```swift
    /// let thisMachine = try Defaults(suiteName: "com.example.app", host: .current)
    /// thisMachine.set(2.0, forKey: "displayScale")   // this machine only
    /// ```
    ///
    /// - Parameters:
    ///   - suiteName: A name such as "com.example.app", or ``globalDomain``.
    ///   - directory: Where suite files are; nil for the XDG rule.
    ///   - watchesFiles: Whether changes made to the files by other processes are followed live.
    ///   - host: The machine (``Host/current`` for this one).
    ///   - administeredSettings: Where system-wide defaults and managed files are.
    /// - Throws: ``DefaultsError/Code/invalidSuiteName`` for a name, or a host identifier, that
    ///   cannot name a file.
    public convenience init(
        suiteName: String, directory: URL? = nil, watchesFiles: Bool = true, host: Host,
        administeredSettings: AdministeredSettings = .fromEnvironment()
    ) throws {
        let location = try SuiteLocation(suiteName: suiteName, directory: directory?.path)
        try self.init(
            location: location, directory: directory?.path, stores: .files(watching: watchesFiles),
            administeredSettings: administeredSettings, host: host)
    }

    /// The host layer of an instance of the suite at `location`: for a ByHost instance, the
    /// suite's file for any host (searched after the ByHost file); otherwise, when
    /// `searchesCurrentHost` (an instance opened by name), this machine's ByHost file: always when
    /// `watching` (its directory may be made later), else only when the file exists.
    static func hostLayer(
        of location: SuiteLocation, host: Host?, searchesCurrentHost: Bool, watching: Bool
    ) throws -> (location: SuiteLocation, isAnyHost: Bool)? {
        if host != nil { return (location, true) }
        guard searchesCurrentHost else { return nil }
        guard watching || CandidateLayers.isDirectory(location.byHostDirectory) else { return nil }
        let byHost = try location.byHost(.current)
        return watching || CandidateLayers.exists(byHost.path) ? (byHost, false) : nil
    }
}

extension SuiteLocation {
    /// The directory of the suite's ByHost files.
    var byHostDirectory: String { Self.byHostDirectory(in: directory) }

    /// The directory of the ByHost files of the suites in `directory`: `<directory>/ByHost`.
    package static func byHostDirectory(in directory: String) -> String { directory + "/ByHost" }

    /// The suite's ByHost file for `host`: `<directory>/ByHost/<name>.<host>.plist`.
    ///
    /// - Throws: ``DefaultsError/Code/invalidSuiteName`` when the host's identifier cannot name a file.
    func byHost(_ host: Defaults.Host) throws -> SuiteLocation {
        let location = try SuiteLocation(suiteName: name + "." + host.identifier, directory: byHostDirectory)
        return location
    }
}
