import Foundation
import LiveDefaults
import LiveDefaultsPropertyList

/// The last known values of a fleet suite, kept for a start while etcd is unreachable: a binary
/// property list `{format, prefix, endpoints, clusterID, revision, savedAt, values}`, written as a
/// temporary file renamed over it, not synced (``FleetCacheWriter``).
struct FleetCache: Sendable, Equatable {
    var values: [String: PropertyListValue]
    var revision: Int64
    var clusterID: UInt64

    init(values: [String: PropertyListValue], revision: Int64, clusterID: UInt64) {
        self.values = values
        self.revision = revision
        self.clusterID = clusterID
    }

    init(_ data: Data, suite: FleetSuite, path: String) throws(DefaultsError) {
        func unreadable(_ why: String) -> DefaultsError {
            DefaultsError(
                .corruptFile,
                "The cache \(path) of fleet suite \"\(suite.name)\" \(why); it is not used, and is replaced once "
                    + "etcd answers.", suite: suite.name, path: path)
        }
        let root: PropertyListValue
        do { root = try PropertyListCodec.decode(data).value } catch { throw unreadable("does not parse: \(error)") }
        guard let fields = root.dictionaryValue, case .integer(1)? = fields["format"],
            case .integer(let revision)? = fields["revision"], let cluster = fields["clusterID"]?.stringValue,
            let clusterID = UInt64(cluster, radix: 16), let values = fields["values"]?.dictionaryValue
        else { throw unreadable("is not a cache of format 1") }
        guard fields["prefix"]?.stringValue == String(decoding: suite.prefix, as: UTF8.self) else {
            throw unreadable("belongs to another prefix")
        }
        self.init(values: values, revision: revision, clusterID: clusterID)
    }

    func encoded(suite: FleetSuite) throws(DefaultsError) -> Data {
        do {
            return try encodedDocument(suite: suite)
        } catch {
            throw DefaultsError(error, suite: suite.name)
        }
    }

    private func encodedDocument(suite: FleetSuite) throws(PropertyListError) -> Data {
        try PropertyListCodec.encode(
            .dictionary([
                "format": .integer(1),
                "prefix": .string(String(decoding: suite.prefix, as: UTF8.self)),
                "endpoints": .array(suite.endpoints.map { .string($0.absoluteString) }),
                "clusterID": .string(String(clusterID, radix: 16)),
                "revision": .integer(revision),
                "savedAt": .date(Date()),
                "values": .dictionary(values),
            ]), format: .binary)
    }
}
