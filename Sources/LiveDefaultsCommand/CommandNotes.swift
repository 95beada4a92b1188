import Foundation
import LiveDefaults

/// Which of the library's reports (``DefaultsErrorReporting``) the `defaults` command prints, as a
/// `defaults: note: …` line on standard error (docs/design.md, "Administered settings").
///
/// The command reports problems of the domain it reads or writes itself, once, in its own words, so
/// the library's reports of them are dropped. Printed are only those that no verb's output would
/// show otherwise: a degraded watch; a managed file ignored because a user could change it; a key
/// that a managed file forces, set by `rename`, `import` or `delete`; and an administrator's file
/// (managed or system-wide) that cannot be read or parsed, whose keys then do not count.
package enum CommandNotes {
    /// The line to print for `error`, nil for none.
    ///
    /// - Parameters:
    ///   - error: A report.
    ///   - administeredSettings: Where the administrator's files are; asked only for a failed read
    ///     or a corrupt file, to tell an administrator's file from the domain's own.
    /// - Returns: The line, ending in a newline.
    package static func note(
        for error: DefaultsError, administeredSettings: () -> AdministeredSettings
    ) -> String? {
        switch error.code {
        case .watchingDegraded, .untrustedManagedFile, .forcedKey:
            break
        case .readFailed, .corruptFile:
            guard let path = error.path else { return nil }
            let settings = administeredSettings()
            let directories = ([settings.managedDirectory].compactMap { $0 } + settings.systemDirectories).map(\.path)
            guard directories.contains((path as NSString).deletingLastPathComponent) else { return nil }
        default:
            return nil
        }
        return "defaults: note: \(error.message)\n"
    }
}
