import Foundation
import TestSupport
import Testing

/// `Demo/fleet-demo.sh` run as a user runs it unattended: a local etcd, three onboarding-demo
/// processes on one fleet suite, one `defaults write` on the remote suite.
@Suite(.requiresEtcdForTheDemo)
struct FleetDemoScriptTests {
    /// The script, from this file's place in the repository.
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Demo/fleet-demo.sh")

    /// The `==== Main screen ====` frames in `output`, in order.
    private func mainScreens(_ output: String) -> [String] {
        output.components(separatedBy: "==== ").dropFirst().map { "==== " + $0 }.filter {
            $0.hasPrefix("==== Main screen ====")
        }
    }

    @Test func oneRemoteWriteChangesTheThemeInAllThreeDemos() async throws {
        let logs = try TemporaryDirectory()
        let run = try CommandRunner(
            executable: URL(fileURLWithPath: "/bin/bash"),
            environment: [
                "LIVEDEFAULTS_BIN": ProductRunner.productsDirectory.path, "FLEET_DEMO_LOGS": logs.path,
                "FLEET_DEMO_THEME": "light",
            ]
        ).start([Self.script.path])
        let status = await run.waitForExit(within: 180)
        let result = run.waitForExit()
        #expect(status == 0, "\(result)")
        #expect(result.standardOutput.contains("All three demos redrew with theme light from one write."), "\(result)")

        for index in 1...3 {
            let log = try String(contentsOf: logs.file("demo-\(index).log"), encoding: .utf8)
            let screens = mainScreens(log)
            // The fleet's first theme reached every demo, then the one write replaced it.
            let firstDark = screens.firstIndex { $0.contains("\n  Theme          dark\n") }
            #expect(firstDark != nil, "demo \(index) never showed the fleet's first theme:\n\(log)")
            #expect(
                screens.last?.contains("\n  Theme          light\n") == true,
                "demo \(index) did not end on the new theme:\n\(log)")
            if let firstDark {
                #expect(screens[firstDark...].contains { $0.contains("\n  Theme          light\n") })
            }
            #expect(!log.contains("onboarding-demo:"), "demo \(index) reported a problem:\n\(log)")
        }

        // Every process the script started is gone: etcd and the three demos, stopped by their PIDs.
        let pids = result.standardOutput.matches(of: /\(PIDs? ([0-9 ]+)\)/).flatMap {
            $0.output.1.split(separator: " ").compactMap { Int32($0) }
        }
        #expect(pids.count == 4, "the script names etcd's PID and the three demos': \(result.standardOutput)")
        for pid in pids {
            #expect(kill(pid, 0) != 0, "process \(pid) is still running after the script ended")
        }
    }
}

extension Trait where Self == ConditionTrait {
    /// Runs where `etcd` is installed — or always in CI, which sets `LIVEDEFAULTS_REQUIRE_ETCD=1`,
    /// so that a missing etcd fails there instead of skipping (as the EtcdTests' `requiresEtcd`).
    static var requiresEtcdForTheDemo: Self {
        .enabled(
            if: ["/usr/bin", "/usr/local/bin", "/usr/sbin"].contains {
                FileManager.default.isExecutableFile(atPath: $0 + "/etcd")
            } || ProcessInfo.processInfo.environment["LIVEDEFAULTS_REQUIRE_ETCD"] == "1",
            "etcd is not installed (apt-get install etcd-server, or scripts/setup.sh); the fleet demo needs a real member"
        )
    }
}
