import Foundation

/// An etcd user and password. Its description never shows the password.
public struct FleetCredentials: Sendable, Hashable, CustomStringConvertible {
    /// The etcd user's name.
    public var user: String
    /// The user's password; never shown in a description or a message.
    public var password: String

    /// An etcd user and their password, given in code (from a secret store, say).
    ///
    /// - Parameters:
    ///   - user: The etcd user's name.
    ///   - password: The user's password.
    public init(user: String, password: String) {
        self.user = user
        self.password = password
    }

    /// The credentials in the environment variables `user` and `password`; nil when either is
    /// unset or empty.
    public static func fromEnvironment(
        user: String = "LIVEDEFAULTS_ETCD_USER", password: String = "LIVEDEFAULTS_ETCD_PASSWORD"
    ) -> FleetCredentials? {
        let environment = ProcessInfo.processInfo.environment
        guard let name = environment[user], !name.isEmpty, let secret = environment[password], !secret.isEmpty else {
            return nil
        }
        return FleetCredentials(user: name, password: secret)
    }

    /// `etcd user "<name>"`, without the password: how messages name the user.
    public var description: String { "etcd user \"\(user)\"" }
}
