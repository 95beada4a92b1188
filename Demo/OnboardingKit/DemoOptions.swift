import Foundation

/// The demo's command line.
public struct DemoOptions: Equatable, Sendable {
    /// `--live`: stay on the main screen and redraw on every change, even when standard input is not a terminal.
    public var live: Bool
    /// `--reset`: remove `has_seen_onboarding` and `first_launch_date` first, so onboarding runs again.
    public var reset: Bool
    /// `--help` or `-h`: print the usage and exit.
    public var help: Bool
    /// `--fleet <url>`: also search the fleet suite ``OnboardingSuite/name`` kept in etcd at this
    /// client URL, shared by every process given the same cluster.
    public var fleet: URL?
    /// `--managed` (with `--fleet`): the fleet's values win over this machine's; without it they
    /// are defaults that a local choice overrides.
    public var managed: Bool

    /// Options with the given values.
    public init(live: Bool = false, reset: Bool = false, help: Bool = false, fleet: URL? = nil, managed: Bool = false) {
        self.live = live
        self.reset = reset
        self.help = help
        self.fleet = fleet
        self.managed = managed
    }

    /// A command line the demo does not understand.
    public struct UsageError: Error, Equatable, Sendable {
        /// One line naming the argument.
        public let message: String

        /// An error with `message`.
        public init(message: String) { self.message = message }
    }

    /// The usage text.
    public static let usage = """
        usage: onboarding-demo [--live] [--reset] [--fleet <url> [--managed]] [-<key> <value>]…
          --live     keep the main screen open and redraw on every change, even when input is piped
          --reset    remove has_seen_onboarding and first_launch_date, so onboarding runs again
          --fleet <url>  also follow the fleet suite \(OnboardingSuite.name) in etcd at <url>
                     (such as http://127.0.0.1:2379): its values are defaults a local choice overrides
          --managed  with --fleet: the fleet's values win over this machine's choices
          -h, --help show this help
          -<key> <value>  override a setting for this run (the argument domain, as with UserDefaults)
        Settings live in $XDG_CONFIG_HOME/\(OnboardingSuite.name).plist (else ~/.config/…).
        With piped input, answers are read one a line: name, theme (system/light/dark), notifications (yes/no).
        """

    /// Parses the arguments (without the program name). `-key value` pairs are left to the
    /// argument domain of ``LiveDefaults/Defaults``, which reads them from the process.
    ///
    /// - Parameter arguments: The command-line arguments after the program name.
    /// - Returns: The options.
    /// - Throws: ``UsageError`` for an unknown option or a `-key` without a value.
    public static func parse(_ arguments: [String]) throws(UsageError) -> DemoOptions {
        var options = DemoOptions()
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            switch argument {
            case "--live": options.live = true
            case "--reset": options.reset = true
            case "--help", "-h": options.help = true
            case "--managed": options.managed = true
            case "--fleet":
                guard index + 1 < arguments.count else {
                    throw UsageError(
                        message: "onboarding-demo: '--fleet' needs an etcd client URL, such as http://127.0.0.1:2379")
                }
                index += 1
                options.fleet = try fleetURL(arguments[index])
            default:
                guard argument.count > 1, argument.hasPrefix("-"), !argument.hasPrefix("--") else {
                    throw UsageError(message: "onboarding-demo: unknown argument '\(argument)'")
                }
                guard index + 1 < arguments.count else {
                    throw UsageError(message: "onboarding-demo: '\(argument)' needs a value (-<key> <value>)")
                }
                index += 1
            }
            index += 1
        }
        if options.managed && options.fleet == nil {
            throw UsageError(
                message: "onboarding-demo: '--managed' needs '--fleet <url>' (the fleet suite it applies to)")
        }
        return options
    }

    private static func fleetURL(_ text: String) throws(UsageError) -> URL {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            url.host?.isEmpty == false
        else {
            throw UsageError(
                message:
                    "onboarding-demo: '--fleet' needs an etcd client URL such as http://127.0.0.1:2379, not '\(text)'")
        }
        return url
    }
}
