import LiveDefaults

/// What every launch of the demo writes before anything is shown.
public enum Launch {
    /// Records a launch: increments `launch_count` and writes `last_version`. With
    /// `resettingOnboarding`, first removes `has_seen_onboarding` and `first_launch_date` (the
    /// choices and `launch_count` stay, and are offered again as suggestions).
    ///
    /// - Parameters:
    ///   - defaults: The demo's suite.
    ///   - version: The version to record.
    ///   - resettingOnboarding: Whether to clear the onboarding flags first (`--reset`).
    public static func record(in defaults: Defaults, version: String, resettingOnboarding: Bool) {
        if resettingOnboarding {
            defaults.reset(.hasSeenOnboarding)
            defaults.reset(.firstLaunchDate)
        }
        defaults[.launchCount] += 1
        defaults[.lastVersion] = version
    }
}
