/// Which member a client tries first, as a value: the last one that answered, until it is avoided
/// (a watch on it ended: killed, hung, isolated, wiped); a call tries the others in turn after it.
package struct EndpointRotation: Sendable, Equatable {
    /// How many endpoints there are.
    package let count: Int
    /// The index of the endpoint tried first.
    package private(set) var preferred = 0

    package init(count: Int) {
        precondition(count > 0, "a rotation needs at least one endpoint")
        self.count = count
    }

    /// The indices in the order a call tries them: the preferred one, then the next ones in turn.
    package var order: [Int] { (0..<count).map { (preferred + $0) % count } }

    /// The endpoint at `index` answered: it is tried first from now on.
    package mutating func answered(_ index: Int) {
        preferred = index % count
    }

    /// Moves on from the endpoint at `index`, if it is the preferred one; nothing changes when
    /// another is preferred already, or when there is only one.
    package mutating func avoid(_ index: Int) {
        guard count > 1, preferred == index % count else { return }
        preferred = (preferred + 1) % count
    }
}
