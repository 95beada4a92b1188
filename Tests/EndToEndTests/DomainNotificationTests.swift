import Foundation
import LiveDefaults
import TestSupport
import Testing

/// `didChangeNotification` for persistent-domain calls, with Foundation's UserDefaults (run in a
/// helper process, on a scratch `XDG_CONFIG_HOME`) as the oracle.
@Suite struct DomainNotificationTests {
    @Test func persistentDomainCallsPostOnceEachNamingTheInstanceAsFoundationDoes() throws {
        let directory = try TemporaryDirectory()
        let suite = "com.example.notify"
        let other = "com.example.elsewhere"
        let result = try ProductRunner.run(
            "TestHelper", ["foundation-domain-notifications", suite, other],
            environment: ["XDG_CONFIG_HOME": directory.path])
        #expect(result.status == 0, "\(result.standardError)")
        let foundation = result.standardOutput.split(separator: "\n").map(String.init)

        let ours = try TemporaryDirectory()
        let defaults = try Defaults(suiteName: suite, directory: ours.url, watchesFiles: false)
        let posts = Locked<[String]>([])
        let observer = NotificationCenter.default.addObserver(
            forName: Defaults.didChangeNotification, object: nil, queue: nil
        ) { note in
            // Other tests' instances post in this process too: only this instance's posts count.
            guard (note.object as AnyObject?) === defaults else { return }
            posts.withLock { $0.append("self") }
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        var lines: [String] = []
        let report = { (step: String) in lines.append("\(step) \(posts.withLock { $0.joined(separator: ",") })") }
        defaults.removePersistentDomain(forName: other)
        report("remove-other")
        try defaults.setPersistentDomain(["a": 1], forName: other)
        report("set-other")
        defaults.removePersistentDomain(forName: other)
        report("remove-other")
        try defaults.setPersistentDomain(["b": 2], forName: suite)
        report("set-own")
        defaults.removePersistentDomain(forName: suite)
        report("remove-own")
        #expect(lines == foundation)
        #expect(foundation.last == "remove-own self,self,self,self,self")
    }
}
