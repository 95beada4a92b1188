/// The version of LiveDefaults: what `defaults --version` prints and what scripts/package-deb.sh names the
/// Debian package after (it reads the string on the `text` line). The one place the version is kept; the
/// CHANGELOG's top section carries the same name.
package enum CommandVersion {
    /// The version, `major.minor.patch`.
    package static let text = "0.1.0"
}
