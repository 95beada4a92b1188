import Foundation
import LiveDefaults

/// A snapshot of the demo's settings: everything a screen is drawn from.
public struct Settings: Equatable, Sendable {
    /// `has_seen_onboarding`.
    public var hasSeenOnboarding: Bool
    /// `first_launch_date`.
    public var firstLaunchDate: Date?
    /// `username`.
    public var username: String
    /// `theme`.
    public var theme: Theme
    /// `notifications_enabled`.
    public var notificationsEnabled: Bool
    /// `launch_count`.
    public var launchCount: Int
    /// `last_version`.
    public var lastVersion: String?

    /// Settings with the given values; the defaults are what a fresh machine reads.
    public init(
        hasSeenOnboarding: Bool = false, firstLaunchDate: Date? = nil, username: String = "", theme: Theme = .system,
        notificationsEnabled: Bool = false, launchCount: Int = 0, lastVersion: String? = nil
    ) {
        self.hasSeenOnboarding = hasSeenOnboarding
        self.firstLaunchDate = firstLaunchDate
        self.username = username
        self.theme = theme
        self.notificationsEnabled = notificationsEnabled
        self.launchCount = launchCount
        self.lastVersion = lastVersion
    }

    /// The current settings of `defaults`, read once through the typed keys.
    public init(reading defaults: Defaults) {
        self.init(
            hasSeenOnboarding: defaults[.hasSeenOnboarding], firstLaunchDate: defaults[.firstLaunchDate],
            username: defaults[.username], theme: defaults[.theme],
            notificationsEnabled: defaults[.notificationsEnabled], launchCount: defaults[.launchCount],
            lastVersion: defaults[.lastVersion])
    }

    /// The keys the settings are read from.
    public static let keys: [Defaults.AnyKey] = [
        .hasSeenOnboarding, .firstLaunchDate, .username, .theme, .notificationsEnabled, .launchCount, .lastVersion,
    ]

    /// Takes the new value of whichever of ``keys`` `change` is a change of.
    public mutating func apply(_ change: DefaultsKeyChange) {
        if let value = change.newValue(of: .hasSeenOnboarding) { hasSeenOnboarding = value }
        if let value = change.newValue(of: .firstLaunchDate) { firstLaunchDate = value }
        if let value = change.newValue(of: .username) { username = value }
        if let value = change.newValue(of: .theme) { theme = value }
        if let value = change.newValue(of: .notificationsEnabled) { notificationsEnabled = value }
        if let value = change.newValue(of: .launchCount) { launchCount = value }
        if let value = change.newValue(of: .lastVersion) { lastVersion = value }
    }
}
