// The onboarding demo: first-launch flags the way apps use UserDefaults, shown live.
// This file is the edge — arguments, the terminal, standard input, signals; the rest is OnboardingKit.
import Dispatch
import Foundation
import LiveDefaults
import LiveDefaultsEtcd
import OnboardingKit

#if canImport(Glibc)
    import Glibc
#endif

func writeError(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}

let options: DemoOptions
do {
    options = try DemoOptions.parse(Array(CommandLine.arguments.dropFirst()))
} catch {
    writeError(error.message)
    writeError(DemoOptions.usage)
    exit(2)
}
if options.help {
    print(DemoOptions.usage)
    exit(0)
}

let defaults: Defaults
do {
    defaults = try Defaults(suiteName: OnboardingSuite.name)
} catch {
    writeError("onboarding-demo: \(error)")
    exit(1)
}
// `--fleet <url>`: the fleet suite of the same name in etcd joins the search list, after the local
// suite (its values are defaults) or, with `--managed`, before it (its values win). Its changes
// reach the model's observers as any other change does (docs/demo.md, "Fleet settings").
if let endpoint = options.fleet {
    do {
        let fleet = try FleetSuite(name: OnboardingSuite.name, endpoints: [endpoint])
        defaults.addFleetSuite(fleet, placement: options.managed ? .managed : .fleetDefaults)
    } catch {
        writeError("onboarding-demo: \(error)")
        exit(2)
    }
}

// A person at a terminal answers interactively; anything else (a pipe, a file) gives answers one a line.
let interactive = isatty(STDIN_FILENO) == 1
let colour = interactive && isatty(STDOUT_FILENO) == 1 && ProcessInfo.processInfo.environment["TERM"] != "dumb"
let queue = DispatchQueue(label: "onboarding-demo")
let session = DemoSession(
    defaults: defaults, options: options, interactive: interactive,
    renderer: ScreenRenderer(style: colour ? .ansi : .plain, interactive: interactive, live: options.live),
    queue: queue,
    output: .init(
        write: { FileHandle.standardOutput.write(Data($0.utf8)) }, writeError: writeError,
        exit: { exit($0) }))

// Ctrl-C and SIGTERM end the session cleanly: everything written is flushed first.
let signalSources = [SIGINT, SIGTERM].map { number in
    signal(number, SIG_IGN)
    let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
    // @Sendable: a closure in top-level code is otherwise main-actor isolated, and the runtime
    // traps when the source calls it on `queue`.
    source.setEventHandler { @Sendable in session.stop(status: 0) }
    source.resume()
    return source
}

queue.async {
    session.start()
    // Standard input is read on its own thread, so changes keep arriving while it waits for a line.
    Thread.detachNewThread {
        while let line = readLine(strippingNewline: true) {
            queue.async { session.receive(line: line) }
        }
        queue.async { session.inputEnded() }
    }
}
withExtendedLifetime(signalSources) { dispatchMain() }
