// livedefaults-console: the settings console in the browser (docs/console.md).
//
//   livedefaults-console [--port <n>] [--address 127.0.0.1|::1] [--token-file <path>] [etcd://…]…
//
// Listens on loopback only and prints the page's URL with a random token, as Jupyter does; stops on
// SIGINT or SIGTERM.
import Foundation
import LiveDefaults
import LiveDefaultsCommand
import LiveDefaultsConsole

let usage =
    "usage: livedefaults-console [--port <n>] [--address 127.0.0.1|::1] [--token-file <path>] "
    + "[etcd://<host>:<port>/<suite>]…"

func fail(_ message: String, status: Int32 = 2) -> Never {
    FileHandle.standardError.write(Data("livedefaults-console: \(message)\n".utf8))
    exit(status)
}

var port: UInt16 = 8765
var address = ConsoleAddress.loopback
var fleet: [RemoteSuiteAddress] = []
var tokenFile: String?
var arguments = Array(CommandLine.arguments.dropFirst())[...]
while let argument = arguments.popFirst() {
    switch argument {
    case "--port":
        guard let text = arguments.popFirst(), let number = UInt16(text) else {
            fail("--port needs a port number (0-65535; 0: one the system picks). \(usage)")
        }
        port = number
    case "--address":
        guard let text = arguments.popFirst() else { fail("--address needs an address. \(usage)") }
        do { address = try ConsoleAddress(text) } catch { fail("\(error)") }
    case "--token-file":
        guard let text = arguments.popFirst() else { fail("--token-file needs a path. \(usage)") }
        tokenFile = text
    case "-h", "--help":
        print(usage)
        exit(0)
    default:
        guard RemoteSuiteAddress.isRemote(argument) else { fail("unexpected argument '\(argument)'. \(usage)") }
        do { fleet.append(try RemoteSuiteAddress(argument)) } catch { fail("\(error)") }
    }
}

let model = ConsoleModel(fleet: fleet)
do { try model.start() } catch { fail("\(error)") }
let token: String
do { token = try tokenFile.map(ConsoleAccess.token(fromFile:)) ?? ConsoleAccess.randomToken() } catch {
    fail("\(error)")
}
// The access rules name their cookie after the port, known once the server listens (port 0: the system's choice);
// no request is answered before.
let app = Locked<ConsoleApp?>(nil)
let server = ConsoleServer { request in
    app.withLock { $0 }?.handle(request) ?? .text(503, "The console is starting.")
}
do { try server.start(address: address, port: port) } catch { fail("\(error)", status: 1) }
let access = ConsoleAccess(token: token, port: server.port)
app.withLock { $0 = ConsoleApp(model: model, access: access) }

FileHandle.standardOutput.write(
    Data(
        ("LiveDefaults console: http://\(address.urlHost):\(server.port)/?token=\(access.token)\n"
            + "Open that URL in a browser on this machine (the token is the password); Control-C stops it.\n").utf8))

// Stop on SIGINT and SIGTERM: the streams end, the connections close, then the process exits.
let signals = [SIGINT, SIGTERM].map { number -> DispatchSourceSignal in
    signal(number, SIG_IGN)
    let source = DispatchSource.makeSignalSource(signal: number, queue: .main)
    source.setEventHandler {
        model.stop()
        server.stop()
        exit(0)
    }
    source.resume()
    return source
}
withExtendedLifetime(signals) { dispatchMain() }
