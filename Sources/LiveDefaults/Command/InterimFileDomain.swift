import Foundation
import Synchronization

// TEMPORARY: stands in for `Defaults` until the store lands on main; replaced by `Defaults: CommandDomain`.
extension CommandDomains {
    package static let openStore: @Sendable (DomainReference, URL, Bool) throws -> any CommandDomain = {
        domain, directory, _ in
        switch domain {
        case .global: InterimFileDomain(url: directory.appendingPathComponent("NSGlobalDomain.plist"))
        case .named(let name): InterimFileDomain(url: directory.appendingPathComponent(name + ".plist"))
        case .path(let path): InterimFileDomain(url: URL(fileURLWithPath: path))
        }
    }
}

final class InterimFileDomain: CommandDomain {
    let url: URL
    let state: Mutex<(values: [String: PropertyListValue], changed: Bool, error: DefaultsError?)>

    init(url: URL) {
        self.url = url
        var error: DefaultsError?
        var values: [String: PropertyListValue] = [:]
        if let data = try? Data(contentsOf: url) {
            do {
                values = try PropertyListCodec.decode(data).value.dictionaryValue ?? [:]
            } catch let caught as DefaultsError {
                error = DefaultsError(.corruptFile, caught.message)
            } catch {}
        }
        state = Mutex((values, false, error))
    }

    var lastError: DefaultsError? { state.withLock { $0.error } }
    func persistentValues() -> [String: PropertyListValue] { state.withLock { $0.values } }
    func set(_ value: PropertyListValue?, forKey key: String) {
        state.withLock {
            $0.values[key] = value
            $0.changed = true
        }
    }
    func replacePersistentValues(_ values: [String: PropertyListValue]?) {
        state.withLock {
            $0.values = values ?? [:]
            $0.changed = true
        }
    }
    func synchronize() throws {
        let values = state.withLock { $0.values }
        if values.isEmpty {
            try? FileManager.default.removeItem(at: url)
        } else {
            try PropertyListCodec.encode(.dictionary(values), format: .binary).write(to: url, options: .atomic)
        }
    }
    func watchChanges(queue: DispatchQueue, _ handler: @escaping @Sendable (WatchedChange) -> Void) -> AnyObject {
        let url = url
        let timer = DispatchSource.makeTimerSource(queue: queue)
        let last = Mutex(persistentValues())
        timer.setEventHandler {
            let data = try? Data(contentsOf: url)
            let now = data.flatMap { try? PropertyListCodec.decode($0).value.dictionaryValue } ?? [:]
            let before = last.withLock { old in
                defer { old = now }
                return old
            }
            for key in Set(before.keys).union(now.keys).sorted() where before[key] != now[key] {
                handler(WatchedChange(key: key, oldValue: before[key], newValue: now[key], isExternal: true))
            }
        }
        timer.schedule(deadline: .now(), repeating: .milliseconds(100))
        timer.resume()
        return timer as AnyObject
    }
}
