// A first look at LiveDefaults until the onboarding demo lands: counts launches and shows
// where the value lives.
import Foundation
import LiveDefaults

let defaults = try Defaults(suiteName: "com.example.onboarding")
defaults.register(defaults: ["launch_count": 0])
let launches = defaults.integer(forKey: "launch_count") + 1
defaults.set(launches, forKey: "launch_count")
try defaults.synchronize()
print(
    "Launch number \(launches); stored in \(ProcessInfo.processInfo.environment["XDG_CONFIG_HOME"] ?? "~/.config")/com.example.onboarding.plist"
)
