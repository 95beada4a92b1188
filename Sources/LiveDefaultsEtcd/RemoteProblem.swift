import LiveDefaultsEtcdClient

/// What went wrong with a remote suite, classified once for everyone who acts on it: the fleet
/// backend (retry or drop a write), ``FleetConnection``'s update, the follower's reports and the
/// `defaults` command's messages (docs/design.md, "Fleet settings: the remote store").
package enum RemoteProblem: Error, Sendable, CustomStringConvertible {
    /// No member answered (refused, reset, timed out, no leader): the same call may work later.
    case unreachable(EtcdError)
    /// The user may not do this (gRPC PERMISSION_DENIED): a role that may only read, or none.
    case permissionDenied(EtcdError)
    /// etcd has authentication on and no user was given ("user name is empty").
    case authenticationRequired(EtcdError)
    /// etcd refused the user's name or password ("authentication failed").
    case authenticationFailed(EtcdError)
    /// etcd refused for another reason no retry changes: a value or transaction too large
    /// (INVALID_ARGUMENT), no space (RESOURCE_EXHAUSTED), a token refused again after renewal.
    case refused(EtcdError)
    /// Any other failure (an answer that did not decode, a compaction, an update that kept losing
    /// the race): a later call may work.
    case failed(any Error)
    /// A value in etcd that is not a property-list document: it reads as absent.
    case unreadableValue(key: String, revision: Int64, problem: String)

    /// Classifies a failure of a call to etcd.
    package init(_ error: any Error) {
        if let problem = error as? RemoteProblem {
            self = problem
            return
        }
        guard let error = error as? EtcdError else {
            self = .failed(error)
            return
        }
        switch error.kind {
        case .unavailable:
            self = .unreachable(error)
        case .rejected(let code):
            // The code decides; etcd's own words tell apart what shares INVALID_ARGUMENT.
            if code == EtcdError.permissionDenied || error.message.contains("permission denied") {
                self = .permissionDenied(error)
            } else if error.message.contains("user name is empty") {
                self = .authenticationRequired(error)
            } else if error.message.contains("authentication failed") {
                self = .authenticationFailed(error)
            } else if let code,
                [EtcdError.invalidArgument, EtcdError.unauthenticated, EtcdError.resourceExhausted].contains(code)
            {
                self = .refused(error)
            } else {
                self = .failed(error)
            }
        case .malformed:
            self = .failed(error)
        }
    }

    /// Whether etcd refused for good: trying again changes nothing until someone changes etcd's
    /// configuration (a role, a quota) or the request.
    package var isRefusal: Bool {
        switch self {
        case .permissionDenied, .authenticationRequired, .authenticationFailed, .refused: true
        case .unreachable, .failed, .unreadableValue: false
        }
    }

    /// The underlying error's sentence.
    package var description: String {
        switch self {
        case .unreachable(let error), .permissionDenied(let error), .authenticationRequired(let error),
            .authenticationFailed(let error), .refused(let error):
            error.message
        case .failed(let error):
            "\(error)"
        case .unreadableValue(let key, let revision, let problem):
            "the value of \"\(key)\" at revision \(revision) is not a property list: \(problem)"
        }
    }
}
