import Foundation
import TestSupport
import Testing

/// The tests' member itself: a port taken between its choice and etcd's start (by another test
/// process of the machine) costs a new start on new ports, not a 60 s wait for a member that
/// exited at once.
@Suite(.requiresEtcd)
struct EtcdServerTests {
    @Test func aMemberWhosePortWasTakenStartsAgainOnNewPortsAtOnce() async throws {
        let server = try EtcdServer()
        defer { server.stop() }
        let taken = server.clientPort
        let listener = try Listener(port: taken)
        defer { listener.close() }
        // Without the check that the member exited, the first attempt would end at the health
        // wait's 60 s as "did not become healthy", which is not a taken port: no new start, and
        // `start()` would throw. (No bound on the time: a member on its new ports can take tens of
        // seconds to elect itself while the whole suite runs, which is not this test's subject.)
        try await server.start()
        #expect(server.clientPort != taken)
        #expect(server.isRunning)
    }

    @Test func portsAreChosenBelowTheEphemeralRange() throws {
        for _ in 0..<20 { #expect(try EtcdServer.freePort() < EtcdServer.ephemeralStart) }
    }
}

/// A socket listening on a loopback port, so that nothing else can bind it.
private struct Listener {
    let descriptor: Int32

    init(port: Int) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw EtcdServerError("socket() failed") }
        let bound = EtcdServer.bindLoopback(descriptor, port: port)
        guard bound, listen(descriptor, 1) == 0 else {
            Glibc.close(descriptor)
            throw EtcdServerError("could not listen on port \(port)")
        }
    }

    func close() { _ = Glibc.close(descriptor) }
}
