import Dispatch
import Foundation
import LiveDefaults
import OnboardingKit
import TestSupport

/// A second handle on the demo's suite in `directory`: writes through it reach the model the way any
/// other writer's do, by observation (in one process both share the suite's store).
func openSuite(in directory: borrowing TemporaryDirectory) throws -> Defaults {
    try Defaults(suiteName: OnboardingSuite.name, directory: directory.url, watchesFiles: false)
}

/// Collects what a model or a session hands out: screens, text, the exit status.
final class SessionRecorder: Sendable {
    private let state = Locked<(screens: [Screen], text: String, errors: [String], exitStatus: Int32?)>(
        ([], "", [], nil))

    var screens: [Screen] { state.withLock { $0.screens } }
    var text: String { state.withLock { $0.text } }
    var errors: [String] { state.withLock { $0.errors } }
    var exitStatus: Int32? { state.withLock { $0.exitStatus } }

    /// The plain frames written so far.
    var frames: [String] {
        text.components(separatedBy: ScreenRenderer.frameMarker).dropFirst().map { ScreenRenderer.frameMarker + $0 }
    }

    func record(_ screen: Screen) { state.withLock { $0.screens.append(screen) } }

    var output: DemoSession.Output {
        DemoSession.Output(
            write: { text in self.state.withLock { $0.text += text } },
            writeError: { line in self.state.withLock { $0.errors.append(line) } },
            exit: { status in self.state.withLock { $0.exitStatus = status } })
    }
}
