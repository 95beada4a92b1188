import Foundation
import LiveDefaults

/// The colour theme the user picks during onboarding; stored as its raw value ("system", "light", "dark").
public enum Theme: String, CaseIterable, Codable, Sendable {
    /// Follow the system's appearance.
    case system
    /// Dark text on a light background.
    case light
    /// Light text on a dark background.
    case dark
}

/// Where the demo keeps its settings, and which version it records.
public enum OnboardingSuite {
    /// The suite: `$XDG_CONFIG_HOME/com.example.onboarding.plist` (else `~/.config/…`).
    public static let name = "com.example.onboarding"
    /// The version written to `last_version` at every launch.
    public static let version = "1.0.0"
}

// The demo's settings as typed keys: the names are the ones in the suite file, the defaults what a
// fresh machine reads.
extension Defaults.Keys {
    /// Set when onboarding finished; clearing it (or removing it) sends the app back to onboarding.
    public static let hasSeenOnboarding = Defaults.Key<Bool>("has_seen_onboarding", default: false)
    /// When onboarding finished for the first time since the last reset.
    public static let firstLaunchDate = Defaults.Key<Date?>("first_launch_date")
    /// The name the user gave; empty until onboarding asked for it.
    public static let username = Defaults.Key<String>("username", default: "")
    /// The chosen theme.
    public static let theme = Defaults.Key<Theme>("theme", default: .system)
    /// Whether the user turned notifications on.
    public static let notificationsEnabled = Defaults.Key<Bool>("notifications_enabled", default: false)
    /// How many times the demo was started (incremented at every launch).
    public static let launchCount = Defaults.Key<Int>("launch_count", default: 0)
    /// The version of the demo that ran last.
    public static let lastVersion = Defaults.Key<String?>("last_version")
}
