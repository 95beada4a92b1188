import Foundation

/// Why inotify cannot serve this process, said by ``InotifyInterface/initialize()``.
struct InotifySetUpFailure: Error {
    var reason: String

    init(reason: String) {
        self.reason = reason
    }

    /// The instance could not be made: `error` is the `errno`.
    init(initialising error: Int32) {
        let hint = error == EMFILE ? " (fs.inotify.max_user_instances reached)" : ""
        reason = "inotify could not be initialised: \(String(cString: strerror(error)))\(hint)"
    }
}
