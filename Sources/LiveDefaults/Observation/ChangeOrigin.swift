/// Where a change came from.
public enum ChangeOrigin: Sendable, Hashable {
    /// This process changed the value (a set, a removal, a registration, a domain change).
    case local
    /// Another process, a tool or an editor changed the suite file and it was reloaded.
    case external
    /// A migration step this process ran (``Defaults/migrate(to:_:)``); other processes see its
    /// changes as ``external``.
    case migration
}
