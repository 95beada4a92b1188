import Foundation
import LiveDefaults

/// Who may use the console: the holder of its token, from a page of its own origin (docs/console.md,
/// "Security").
package struct ConsoleAccess: Sendable {
    package let token: String
    /// The cookie the page keeps the token in (`HttpOnly`, `SameSite=Strict`): `livedefaults-console-<port>`, so
    /// that two consoles on one machine (cookies are per host, not per port) do not take each other's place.
    package let cookieName: String

    package init(token: String, port: UInt16) {
        self.token = token
        self.cookieName = "livedefaults-console-\(port)"
    }

    /// A new random token: 32 bytes from the system's generator, in hex.
    package static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }

    /// The token kept in `path` (`--token-file`), so that a console started again keeps its URL and an open
    /// page reconnects: made (random, mode 0600) when the file does not exist.
    ///
    /// - Throws: ``ConsoleError`` when the file cannot be made or read, is readable by others than its owner,
    ///   or holds fewer than 32 characters.
    package static func token(fromFile path: String) throws -> String {
        if !FileManager.default.fileExists(atPath: path) {
            let token = randomToken()
            let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else {
                throw ConsoleError("cannot create the token file \(path): \(String(cString: strerror(errno)))")
            }
            defer { close(descriptor) }
            let bytes = Array((token + "\n").utf8)
            guard write(descriptor, bytes, bytes.count) == bytes.count else {
                throw ConsoleError("cannot write the token file \(path): \(String(cString: strerror(errno)))")
            }
            return token
        }
        var status = stat()
        guard stat(path, &status) == 0, let data = FileManager.default.contents(atPath: path) else {
            throw ConsoleError("cannot read the token file \(path)")
        }
        guard status.st_mode & 0o077 == 0 else {
            throw ConsoleError(
                "the token file \(path) can be read by others (mode \(String(status.st_mode & 0o777, radix: 8))): "
                    + "chmod 600 it")
        }
        let token = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        let allowed = { (character: Character) in
            character.isASCII && (character.isLetter || character.isNumber || "-._~".contains(character))
        }
        guard token.count >= 32, token.allSatisfy(allowed) else {
            throw ConsoleError(
                "the token file \(path) holds no token: at least 32 letters, digits, '-', '.', '_' or '~'")
        }
        return token
    }

    /// Why `request` is refused, nil when it may go on.
    ///
    /// Refused: a request without the token (in the query or the cookie); one whose `Host` is not a loopback
    /// name (a page of another site that rebinds its name to 127.0.0.1); a request that may change anything (any
    /// method but GET and HEAD) whose `Origin` is not the console's own.
    package func refusal(of request: ConsoleRequest) -> String? {
        let given = request.query["token"] ?? request.cookies[cookieName]
        guard let given, Self.equalInConstantTime(given, token) else {
            return "This console needs its token: open the URL it printed when it started (…/?token=…)."
        }
        guard let host = request.headers["host"], Self.isLoopback(host: host) else {
            return "The console answers only to 127.0.0.1, localhost and [::1]."
        }
        if request.method != "GET" && request.method != "HEAD" {
            guard let origin = request.headers["origin"], origin == "http://" + host else {
                return "A change must come from the console's own page (origin http://\(host)); this request's origin "
                    + "is \(request.headers["origin"] ?? "missing")."
            }
        }
        return nil
    }

    /// Whether a `Host` header names a loopback address, with any port (an SSH tunnel's local port differs).
    package static func isLoopback(host: String) -> Bool {
        let name: Substring
        if host.hasPrefix("[") {
            guard let closing = host.firstIndex(of: "]") else { return false }
            name = host[...closing]
        } else {
            name = host.split(separator: ":", maxSplits: 1).first ?? ""
        }
        return name == "127.0.0.1" || name == "localhost" || name == "[::1]"
    }

    private static func equalInConstantTime(_ left: String, _ right: String) -> Bool {
        let left = Array(left.utf8)
        let right = Array(right.utf8)
        guard left.count == right.count else { return false }
        return zip(left, right).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}

/// The console's routes: the page and its assets, the snapshot, the event stream and the edits.
package struct ConsoleApp: Sendable {
    package let model: ConsoleModel
    package let access: ConsoleAccess

    package init(model: ConsoleModel, access: ConsoleAccess) {
        self.model = model
        self.access = access
    }

    /// Answers one request.
    package func handle(_ request: ConsoleRequest) -> ConsoleResponse {
        if let refusal = access.refusal(of: request) { return .text(403, refusal) }
        switch (request.method, request.path) {
        case ("GET", "/"), ("HEAD", "/"):
            var headers: [(String, String)] = [("Content-Type", "text/html; charset=utf-8")]
            if request.query["token"] != nil {
                headers.append(
                    ("Set-Cookie", "\(access.cookieName)=\(access.token); Path=/; HttpOnly; SameSite=Strict"))
            }
            return .full(status: 200, headers: headers, body: Data(ConsoleAssets.html.utf8))
        case ("GET", "/console.js"):
            return .full(
                status: 200, headers: [("Content-Type", "text/javascript; charset=utf-8")],
                body: Data(ConsoleAssets.script.utf8))
        case ("GET", "/console.css"):
            return .full(
                status: 200, headers: [("Content-Type", "text/css; charset=utf-8")],
                body: Data(ConsoleAssets.style.utf8))
        case ("GET", "/api/snapshot"):
            return .json(200, model.snapshot(domain: request.query["domain"]))
        case ("GET", "/api/events"):
            return .stream(model.broadcaster.subscribe())
        case ("GET", "/api/history"):
            guard let domain = request.query["domain"], let key = request.query["key"] else {
                return .json(400, ["error": "The request needs a domain and a key."])
            }
            guard let history = model.history(domain: domain, key: key) else {
                return .json(404, ["error": .string("There is no domain \(domain).")])
            }
            return .json(200, history)
        case ("POST", "/api/write"), ("POST", "/api/delete"), ("POST", "/api/reveal"), ("POST", "/api/rollback"):
            return change(request)
        default:
            return .text(404, "There is no \(request.method) \(request.path) here.")
        }
    }

    private func change(_ request: ConsoleRequest) -> ConsoleResponse {
        guard request.headers["content-type"]?.hasPrefix("application/json") == true else {
            return .text(415, "A change is sent as application/json.")
        }
        guard let body = try? JSONSerialization.jsonObject(with: request.body) as? [String: Any],
            let domain = body["domain"] as? String, let key = body["key"] as? String
        else {
            return .json(400, ["error": "The request needs a domain and a key."])
        }
        switch request.path {
        case "/api/reveal":
            guard let row = model.reveal(domain: domain, key: key) else {
                return .json(404, ["error": .string("There is no key \(key) in \(domain).")])
            }
            // The key's history with its values, for as long as the page shows it revealed.
            return .json(
                200, ["row": row, "history": model.history(domain: domain, key: key, revealing: true) ?? .null])
        case "/api/rollback":
            guard let entry = (body["entry"] as? NSNumber)?.int64Value, entry >= 0 else {
                return .json(400, ["error": "The request needs the number of a history entry."])
            }
            switch model.rollBack(domain: domain, key: key, toEntry: UInt64(entry)) {
            case .success(let report): return .json(200, ["ok": true, "report": .string(report)])
            case .failure(let problem): return .json(422, ["error": .string(problem.description)])
            }
        case "/api/delete":
            if let problem = model.delete(domain: domain, key: key) { return .json(422, ["error": .string(problem)]) }
            return .json(200, ["ok": true])
        default:
            guard let kind = body["kind"] as? String, let text = body["text"] as? String else {
                return .json(400, ["error": "The request needs a kind and a text."])
            }
            if let problem = model.write(domain: domain, key: key, ConsoleModel.Edit(kind: kind, text: text)) {
                return .json(422, ["error": .string(problem)])
            }
            return .json(200, ["ok": true])
        }
    }
}
