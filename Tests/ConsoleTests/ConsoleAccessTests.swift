import Foundation
import LiveDefaultsConsole
import TestSupport
import Testing

/// The console's rules for who may use it, without a server: the token, the loopback host, the origin of changes.
struct ConsoleAccessTests {
    let access = ConsoleAccess(token: "t0ken", port: 8765)

    func request(
        _ method: String = "GET", query: [String: String] = [:], cookie: String? = "t0ken",
        host: String? = "127.0.0.1:8765", origin: String? = nil
    ) -> ConsoleRequest {
        var headers: [String: String] = [:]
        if let host { headers["Host"] = host }
        if let origin { headers["Origin"] = origin }
        return ConsoleRequest(
            method: method, path: "/api/write", query: query, headers: headers,
            cookies: cookie.map { ["livedefaults-console-8765": $0] } ?? [:])
    }

    @Test func theTokenIsNeeded() {
        #expect(access.refusal(of: request(cookie: nil)) != nil)
        #expect(access.refusal(of: request(cookie: "t0kem")) != nil)
        #expect(access.refusal(of: request(cookie: "t0ken-and-more")) != nil)
        #expect(access.refusal(of: request(query: ["token": "t0ken"], cookie: nil)) == nil)
        #expect(access.refusal(of: request()) == nil)
    }

    @Test func onlyLoopbackHostNamesAreAnswered() {
        #expect(access.refusal(of: request(host: "evil.example:8765")) != nil)
        #expect(access.refusal(of: request(host: nil)) != nil)
        #expect(access.refusal(of: request(host: "127.0.0.1.evil.example")) != nil)
        // An SSH tunnel's local port differs from the console's.
        #expect(access.refusal(of: request(host: "localhost:9000")) == nil)
        #expect(access.refusal(of: request(host: "[::1]:8765")) == nil)
    }

    @Test func aChangeNeedsTheSameOrigin() {
        #expect(access.refusal(of: request("POST", origin: "http://evil.example")) != nil)
        #expect(access.refusal(of: request("POST", origin: nil)) != nil)
        #expect(access.refusal(of: request("POST", origin: "null")) != nil)
        #expect(access.refusal(of: request("POST", origin: "http://127.0.0.1:9999")) != nil)
        #expect(access.refusal(of: request("POST", origin: "http://127.0.0.1:8765")) == nil)
        // A read needs no origin.
        #expect(access.refusal(of: request("GET", origin: nil)) == nil)
    }

    @Test func anotherConsolesCookieIsNotTaken() {
        let other = ConsoleRequest(
            method: "GET", path: "/", headers: ["Host": "127.0.0.1:8765"],
            cookies: ["livedefaults-console-9000": "t0ken"])
        #expect(access.refusal(of: other) != nil)
    }

    @Test func tokensAreRandomAndLong() {
        let first = ConsoleAccess.randomToken()
        #expect(first.count == 64)
        #expect(first != ConsoleAccess.randomToken())
    }

    @Test func aNonLoopbackAddressIsRefusedWithTheTunnel() throws {
        #expect(try ConsoleAddress("127.0.0.1").isIPv6 == false)
        #expect(try ConsoleAddress("::1").isIPv6)
        for host in ["0.0.0.0", "192.168.1.5", "::", "example.org"] {
            let error = #expect(throws: ConsoleError.self) { try ConsoleAddress(host) }
            #expect(error?.description.contains("ssh -L") == true)
        }
    }
}

/// The documents the console sends.
struct ConsoleJSONTests {
    @Test func stringsAreEscapedAndMarkupCannotForm() {
        let document: ConsoleJSON = [
            "k\"ey": "<img src=x onerror=alert(1)>\n\u{2028}&\\", "n": 3, "b": true, "z": .null,
        ]
        #expect(
            document.text
                == #"{"k\"ey":"\u003cimg src=x onerror=alert(1)\u003e\n\u2028\u0026\\","n":3,"b":true,"z":null}"#)
    }

    @Test func aMemberIsReplacedInPlaceAndRemovedWithNil() {
        var document: ConsoleJSON = ["a": 1, "b": 2]
        document["a"] = 3
        document["c"] = 4
        document["b"] = nil
        #expect(document.text == #"{"a":3,"c":4}"#)
    }
}

/// `--token-file`: a console started again keeps its token.
struct ConsoleTokenFileTests {
    @Test func aMissingFileIsMadeForTheOwnerAndReadBack() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("token").path
        let made = try ConsoleAccess.token(fromFile: path)
        #expect(made.count == 64)
        var status = stat()
        #expect(stat(path, &status) == 0)
        #expect(status.st_mode & 0o777 == 0o600)
        #expect(try ConsoleAccess.token(fromFile: path) == made)
    }

    @Test func aFileOthersCanReadOrWithoutATokenIsRefused() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("token").path
        _ = FileManager.default.createFile(
            atPath: path, contents: Data((String(repeating: "a", count: 40) + "\n").utf8),
            attributes: [.posixPermissions: 0o644])
        let open = #expect(throws: ConsoleError.self) { try ConsoleAccess.token(fromFile: path) }
        #expect(open?.description.contains("chmod 600") == true)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        #expect(try ConsoleAccess.token(fromFile: path) == String(repeating: "a", count: 40))
        try Data("short; x\n".utf8).write(to: URL(fileURLWithPath: path))
        #expect(throws: ConsoleError.self) { try ConsoleAccess.token(fromFile: path) }
    }
}
