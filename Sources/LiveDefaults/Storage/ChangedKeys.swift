/// The keys a change touched: one key for a write (the common case, without building a set),
/// a set for a reload or a replaced domain.
package enum ChangedKeys: Sendable {
    case one(String)
    case many(Set<String>)

    /// Calls `body` with each key.
    @inline(__always)
    func forEach(_ body: (String) -> Void) {
        switch self {
        case .one(let key): body(key)
        case .many(let keys): for key in keys { body(key) }
        }
    }
}
