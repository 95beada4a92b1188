import Foundation
import LiveDefaults

extension Defaults: CommandDomain {
    package func watchChanges(queue: DispatchQueue, _ handler: @escaping @Sendable (WatchedChange) -> Void)
        -> any AnyObject & Sendable
    {
        observeAll(options: [.old, .new], queue: queue) { change in
            handler(
                WatchedChange(
                    key: change.key, oldValue: change.oldValue, newValue: change.newValue,
                    isExternal: change.origin == .external))
        }
    }
}

extension CommandDomains {
    /// Opens a domain as the store: a name or the global domain in the directory at `directoryPath`, or a plist
    /// file by path.
    package static let openStore: @Sendable (DomainReference, String, Bool) throws -> any CommandDomain = {
        domain, directoryPath, watching in
        switch domain {
        case .global:
            try Defaults(suiteName: Defaults.globalDomain, directoryPath: directoryPath, watchesFiles: watching)
        case .named(let name):
            try Defaults(suiteName: name, directoryPath: directoryPath, watchesFiles: watching)
        case .path(let path):
            try Defaults(fileURL: URL(fileURLWithPath: path + ".plist"), watchesFiles: watching)
        case .remote(let address):
            // Endpoints and credentials from the environment, as etcdctl takes them.
            try RemoteCommandDomain(address, environment: ProcessInfo.processInfo.environment) { problem in
                FileHandle.standardError.write(Data("defaults: note: \(problem)\n".utf8))
            }
        }
    }
}
