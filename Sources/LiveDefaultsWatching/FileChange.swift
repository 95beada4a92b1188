/// What a ``FileWatcher`` tells the owner of a watch: the only two things it ever says.
///
/// The watcher owns the deletion grace (docs/design.md, "Live reload: coalescing"): a file that goes away is
/// never reported until it has stayed away for ``FileWatcher/deletionGrace``, so an owner that is
/// told ``mayHaveChanged`` and then finds the file absent (it went after the watcher looked) takes
/// that for no change; the watcher reports ``goneForGood`` later if the file stays away.
package enum FileChange: Sendable, Equatable {
    /// The file was there when the watcher looked, and its content may differ from the last call's.
    case mayHaveChanged
    /// The file is absent and the absence counts: it has stayed away for the deletion grace, or it
    /// was already absent at the last call.
    case goneForGood

    /// The call for a file that looked like `stamp` when the watcher decided to call (nil: absent).
    init(seeing stamp: FileStamp?) {
        self = stamp == nil ? .goneForGood : .mayHaveChanged
    }
}
