import Foundation

extension Defaults {
    /// Keeps the suite's value of `new` a copy of its value of `old` while processes of the previous
    /// version of the program, which know the key only as `old`, still run (a rolling upgrade): the
    /// new version reads `new` and still sees their writes.
    ///
    /// The copy is made at once, then again each time the effective value of `old` changes, in this
    /// process or another. It is taken from the suite's own values (``persistentValues()``), never
    /// from another layer of the search list: a system-wide or managed value of `old` is not written
    /// into the suite. A removal of `old` is not copied — `new` keeps its value — so that the next
    /// version can remove `old` in a migration step while this one still runs. The new version writes
    /// both names itself, so that the old version sees its changes too:
    ///
    /// ```swift
    /// let mirror = defaults.mirror("maxConnections", to: "connectionLimit")
    /// defaults.set(40, forKey: "connectionLimit")
    /// defaults.set(40, forKey: "maxConnections")  // for the version before, until it is gone
    /// ```
    ///
    /// A change of `old` in the suite that another layer hides (a forced value, a volatile domain)
    /// changes no effective value, so it is copied at the next change that does, or at the next
    /// start; the rename in the next version's migration carries the last value over in any case.
    ///
    /// - Parameters:
    ///   - old: The key's name in the previous version.
    ///   - new: Its name in this version.
    /// - Returns: A token: the copying lasts until it is cancelled or released.
    public func mirror(_ old: String, to new: String) -> ObservationToken {
        // `.initial` makes the first copy inside the observation: no change of `old` can fall
        // between that copy and the start of the observation.
        observe(old, options: .initial) { [weak self] _ in
            guard let self, old != new else { return }
            let stored = self.persistentValues()
            guard let value = stored[old], stored[new] != value else { return }
            self.write(value, forKey: new)
        }
    }
}
