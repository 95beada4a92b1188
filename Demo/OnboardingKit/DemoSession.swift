import Dispatch
import Foundation
import LiveDefaults
import Synchronization

/// One run of the demo: records the launch, shows the screens, takes the answers and decides when
/// to exit. The executable feeds it lines, the end of input and signals; everything it prints and
/// the exit go through the closures given to it, so it runs the same in tests.
///
/// Call every method on `queue` (the serial queue the model delivers its changes on).
public final class DemoSession: Sendable {
    /// Where the session's text goes and how it ends the process.
    public struct Output: Sendable {
        /// Writes to standard output.
        public var write: @Sendable (String) -> Void
        /// Writes one message to standard error.
        public var writeError: @Sendable (String) -> Void
        /// Ends the process with a status.
        public var exit: @Sendable (Int32) -> Void

        /// Output through the given closures.
        public init(
            write: @escaping @Sendable (String) -> Void, writeError: @escaping @Sendable (String) -> Void,
            exit: @escaping @Sendable (Int32) -> Void
        ) {
            self.write = write
            self.writeError = writeError
            self.exit = exit
        }
    }

    private struct State {
        var model: OnboardingModel?
        var inputEnded = false
        var stopped = false
    }

    private let defaults: Defaults
    private let options: DemoOptions
    private let interactive: Bool
    private let renderer: ScreenRenderer
    private let queue: DispatchQueue
    private let output: Output
    private let state = Mutex(State())

    /// A session that has not started yet.
    ///
    /// - Parameters:
    ///   - defaults: The demo's suite.
    ///   - options: The command line.
    ///   - interactive: Whether standard input is a terminal: the welcome screen then waits for
    ///     Enter, and the main screen stays until q or Ctrl-C. Otherwise answers are read line by
    ///     line, each echoed as `> answer`, and the session ends after the main screen unless `--live`.
    ///   - renderer: How screens are drawn.
    ///   - queue: The serial queue every call and every observation callback runs on.
    ///   - output: Where text goes and how the process ends.
    public init(
        defaults: Defaults, options: DemoOptions, interactive: Bool, renderer: ScreenRenderer, queue: DispatchQueue,
        output: Output
    ) {
        self.defaults = defaults
        self.options = options
        self.interactive = interactive
        self.renderer = renderer
        self.queue = queue
        self.output = output
    }

    /// The state model, once started.
    public var model: OnboardingModel? { state.withLock { $0.model } }

    /// Records the launch (after `--reset`, if asked), starts observing and shows the first screen.
    public func start() {
        dispatchPrecondition(condition: .onQueue(queue))
        Launch.record(in: defaults, version: OnboardingSuite.version, resettingOnboarding: options.reset)
        save()
        // The model is made after the launch is recorded, so its first snapshot already holds it.
        let model = OnboardingModel(defaults: defaults, queue: queue) { [weak self] screen in self?.show(screen) }
        state.withLock { $0.model = model }
        show(model.screen)
    }

    /// Takes one line of standard input (without its newline).
    public func receive(line: String) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let model = state.withLock({ $0.stopped ? nil : $0.model }) else { return }
        if !interactive { output.write("> \(line)\n") }
        switch model.screen {
        case .main(let main):
            if line.trimmingCharacters(in: .whitespaces).lowercased() == "q" {
                stop(status: 0)
            } else if interactive {
                show(.main(main))  // draw over what was typed
            }
        case .saving:
            break
        case .welcome, .askName, .askTheme, .askNotifications:
            model.answer(line)
            // The last answer was taken and the choices written to memory: put them on disk now,
            // before the main screen shows, rather than 20 ms later. A write another process makes
            // after seeing the main screen then lands on top of them, not under them.
            if model.screen == .saving { save() }
        }
    }

    private func save() {
        do {
            try defaults.synchronize()
        } catch {
            output.writeError("onboarding-demo: \(error)")
        }
    }

    /// Standard input ended. During onboarding that is an error (exit 1; the launch stays counted,
    /// the answers so far are not written). On the main screen of a terminal (Ctrl-D) it quits; with `--live` on piped input
    /// the session keeps running until a signal.
    public func inputEnded() {
        dispatchPrecondition(condition: .onQueue(queue))
        let current = state.withLock { state in
            state.inputEnded = true
            return state.stopped ? nil : state.model
        }
        guard let model = current else { return }
        let screen = model.screen
        if screen == .welcome || screen.asksForAnswer {
            failForMissingAnswers()
        } else if case .main = screen, interactive {
            stop(status: 0)
        }
    }

    /// Ends the session: stops observing, writes everything still pending, then exits with
    /// `status` (1 instead of 0 when the settings could not be written).
    public func stop(status: Int32) {
        dispatchPrecondition(condition: .onQueue(queue))
        let wasStopped = state.withLock { state in
            defer { state.stopped = true }
            return state.stopped
        }
        if wasStopped { return }
        model?.cancel()
        var status = status
        do {
            try defaults.synchronize()
        } catch {
            output.writeError("onboarding-demo: \(error)")
            if status == 0 { status = 1 }
        }
        if renderer.style == .ansi { output.write("\u{1B}[0m\n") }
        output.exit(status)
    }

    private func show(_ screen: Screen) {
        let current = state.withLock { state in state.stopped ? nil : state.model.map { ($0, state.inputEnded) } }
        guard let (model, inputEnded) = current else { return }
        // Saving lasts until the flag comes back through observation: nothing to draw.
        if screen == .saving { return }
        output.write(renderer.render(screen))
        switch screen {
        case .welcome where !interactive:
            model.continuePastWelcome()  // piped input: no answer for the welcome screen
        case .main where !interactive && !options.live:
            stop(status: 0)
        case _ where inputEnded && (screen == .welcome || screen.asksForAnswer):
            failForMissingAnswers()
        default:
            break
        }
    }

    /// Standard input ended with questions unanswered. The launch was counted when it began, as an
    /// app counts every launch (docs/demo.md, "Without a terminal"); the message says what was saved.
    private func failForMissingAnswers() {
        let launches = defaults[.launchCount]
        let version = defaults[.lastVersion] ?? OnboardingSuite.version
        let cause =
            "standard input ended before onboarding was finished" + (interactive ? "" : " (it is not a terminal)")
        output.writeError(
            "onboarding-demo: \(cause). Saved: this launch (launch_count \(launches), last_version \(version)), "
                + "as every launch is. Not saved: your answers; onboarding starts again at the next launch. "
                + "Run it in a terminal, or pipe three answers, one a line: name, theme (system/light/dark), "
                + "notifications (yes/no): printf 'Anna\\ndark\\nyes\\n' | swift run onboarding-demo")
        stop(status: 1)
    }
}
