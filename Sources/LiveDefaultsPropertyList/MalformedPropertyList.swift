/// What the readers throw inside: a message, made a ``PropertyListError`` once, at the top (a small
/// error keeps the readers' stack frames small: each place that may throw reserves room for one).
struct MalformedPropertyList: Error {
    let message: String
}

extension Result where Success == PropertyListValue, Failure == MalformedPropertyList {
    /// The decoded value, or the reader's message as a ``PropertyListError``.
    func decoded() throws(PropertyListError) -> PropertyListValue {
        switch self {
        case .success(let value): return value
        case .failure(let malformed): throw PropertyListError(malformed.message)
        }
    }
}
