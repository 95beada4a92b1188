import Foundation

/// A private certificate authority and a certificate for 127.0.0.1 it signed, made with the
/// `openssl` command in a scratch directory, for the benchmark's member to serve TLS beside its
/// plain listener (the scale rows over `https://`: docs/performance.md, "Fleet suites at scale").
/// The fleet suites trust the authority through `LIVEDEFAULTS_BENCH_CA` (FleetSuite.swift); nothing
/// is added to the system's trust store.
struct BenchCertificates {
    let authority: String
    let certificate: String
    let key: String

    /// Makes the authority and the certificate under `directory`.
    ///
    /// - Throws: When `openssl` is not installed or one of its steps fails (its output in the error).
    init(in directory: URL) throws {
        let path = directory.appendingPathComponent("tls").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        authority = path + "/ca.pem"
        certificate = path + "/server.pem"
        key = path + "/server.key"
        let curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try Self.openssl(
            ["req", "-x509"] + curve + [
                "-keyout", path + "/ca.key", "-out", authority, "-days", "2", "-subj",
                "/CN=LiveDefaults bench authority",
            ], in: path)
        try Self.openssl(
            ["req"] + curve + ["-keyout", key, "-out", path + "/server.csr", "-subj", "/CN=127.0.0.1"], in: path)
        try Data("subjectAltName=IP:127.0.0.1\n".utf8).write(to: URL(fileURLWithPath: path + "/ext.cnf"))
        try Self.openssl(
            [
                "x509", "-req", "-in", path + "/server.csr", "-CA", authority, "-CAkey", path + "/ca.key",
                "-CAcreateserial", "-out", certificate, "-days", "2", "-extfile", path + "/ext.cnf",
            ], in: path)
    }

    static let openssl = "/usr/bin/openssl"

    private static func openssl(_ arguments: [String], in directory: String) throws {
        guard FileManager.default.isExecutableFile(atPath: openssl) else {
            throw RawEtcdConnection.Failure("openssl is not installed (apt-get install openssl)")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: openssl)
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw RawEtcdConnection.Failure(
                "openssl \(arguments.prefix(2).joined(separator: " ")) failed: \(String(decoding: text, as: UTF8.self))"
            )
        }
    }
}
