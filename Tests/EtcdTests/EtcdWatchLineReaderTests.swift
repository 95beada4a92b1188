import Foundation
import Testing

@testable import LiveDefaultsEtcd
@testable import LiveDefaultsEtcdClient

/// The watch stream's own JSON reader: it must read every line as `JSONDecoder` reads it, and
/// refuse what is not JSON or not the message's shape with an error naming the problem.
@Suite struct EtcdWatchLineReaderTests {
    /// Lines as etcd 3.4's gateway writes them, and what JSON allows besides.
    static let lines: [String] = [
        // The creation, an event, a deletion, a progress notification.
        #"{"result":{"header":{"cluster_id":"14841639068965178418","member_id":"10276657743932975437","revision":"7","raft_term":"2"},"created":true}}"#,
        #"{"result":{"header":{"cluster_id":"14841639068965178418","member_id":"10276657743932975437","revision":"8","raft_term":"2"},"events":[{"kv":{"key":"L2xkL3YxL3Mvc3RhbXA=","create_revision":"5","mod_revision":"8","version":"4","value":"PGludGVnZXI+MTwvaW50ZWdlcj4="}}]}}"#,
        #"{"result":{"header":{"cluster_id":"1","revision":"9"},"events":[{"type":"DELETE","kv":{"key":"L2xkL3YxL3MvYQ==","mod_revision":"9"}},{"kv":{"key":"L2xkL3YxL3MvYg==","value":""}}]}}"#,
        #"{"result":{"header":{"cluster_id":"1","member_id":"2","revision":"9","raft_term":"2"}}}"#,
        // A cancellation after a compaction, and an error line.
        #"{"result":{"header":{"revision":"20"},"canceled":true,"compact_revision":"12","cancel_reason":"mvcc: required revision has been compacted"}}"#,
        #"{"error":{"grpc_code":14,"http_code":503,"message":"etcdserver: no leader","http_status":"Service Unavailable","details":[]}}"#,
        // Escapes, Unicode (a surrogate pair included), white space, unknown members and nulls.
        "{ \"result\" : { \"cancel_reason\" : \"a \\\"quoted\\\" \\\\ \\/ \\b\\f\\n\\r\\t caf\\u00e9 \\ud83d\\ude00 \\u4e2d é\" , \"created\" : false } }\n",
        #"{"result":{"header":null,"events":null,"watch_id":null,"fragment":false,"extra":{"a":[1,-2.5e3,true,null,{"b":[]}]}},"error":null}"#,
        // 64-bit integers as numbers, and at the ends of their ranges.
        #"{"result":{"header":{"cluster_id":18446744073709551615,"revision":9223372036854775807},"watch_id":-1}}"#,
        #"{}"#,
        #"{"result":{"events":[]}}"#,
        // A name given twice: its first value counts, as JSONDecoder reads it, the later ones
        // still checked as JSON.
        #"{"result":{"created":true,"created":false,"header":{"revision":"5","revision":"6"},"events":[{"kv":{"key":"YQ==","key":"Yg=="}}]}}"#,
        #"{"result":{"cancel_reason":"first","cancel_reason":null},"result":{"created":true}}"#,
        // Base64 the in-place decoder leaves to Foundation (bits past the end, no padding), and
        // integers it leaves to the standard library (escaped, signed, 19 digits).
        #"{"result":{"events":[{"kv":{"key":"QR==","value":"YWJj"}},{"kv":{"key":"L2E\/Yg=="}}]}}"#,
        #"{"result":{"header":{"revision":"\u0031\u0032","cluster_id":"+7","member_id":"1234567890123456789"},"watch_id":"-0"}}"#,
    ]

    static func canonical(_ line: EtcdWatchLine) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return try encoder.encode(line)
    }

    @Test(arguments: lines) func readsEveryLineAsJSONDecoderDoes(_ line: String) throws {
        let expected = try JSONDecoder().decode(EtcdWatchLine.self, from: Data(line.utf8))
        let read = try EtcdWatchLineReader.read(Data(line.utf8))
        #expect(try Self.canonical(read) == Self.canonical(expected))
    }

    @Test func readsTheFieldsTheFollowerUses() throws {
        let line = try EtcdWatchLineReader.read(Data(Self.lines[2].utf8))
        let result = try #require(line.result)
        #expect(result.header?.revisionValue == 9)
        #expect(result.header?.clusterID == 1)
        let events = try #require(result.events)
        #expect(events.count == 2)
        #expect(events[0].type == "DELETE")
        #expect(events[0].kv?.key?.data == Data("/ld/v1/s/a".utf8))
        #expect(events[0].kv?.mod_revision?.value == 9)
        #expect(events[1].type == nil)
        #expect(events[1].kv?.value?.data == Data())
        let escaped = try EtcdWatchLineReader.read(Data(Self.lines[6].utf8))
        #expect(escaped.result?.cancel_reason == "a \"quoted\" \\ / \u{8}\u{c}\n\r\t café 😀 中 é")
        let error = try EtcdWatchLineReader.read(Data(Self.lines[5].utf8)).error
        #expect(error?.grpc_code == 14 && error?.http_code == 503 && error?.message == "etcdserver: no leader")
    }

    /// Each bad line, and a word its error must contain.
    static let badLines: [(String, String)] = [
        (#"{"result":{"created":true}"#, "ended inside an object"),
        (#"{"result":{}} x"#, "text after the JSON value"),
        (#"{"result":{"events":[{"kv":{"key":"not base64!"}}]}}"#, "not base64"),
        (#"{"result":{"header":{"revision":"9223372036854775808"}}}"#, "not a 64-bit integer"),
        (#"{"result":{"header":{"cluster_id":"-1"}}}"#, "not a 64-bit integer"),
        (#"{"result":{"cancel_reason":"\ud83d"}}"#, "lone surrogate"),
        (#"{"result":{"cancel_reason":"\q"}}"#, "unknown escape"),
        ("{\"result\":{\"cancel_reason\":\"a\u{1}b\"}}", "control character"),
        (#"{"result":{"created":"yes"}}"#, "not a boolean"),
        (#"{"result":{"events":{}}}"#, "not an array"),
        (#"{"result":[]}"#, "not an object"),
        (#"[1]"#, "not an object"),
        (#"{"result":{"watch_id":01}}"#, "leading zero"),
        (#"{"result":{"created":tru}}"#, "expected true"),
        (#"{'result':{}}"#, "expected a member name"),
        ("", "ended where a value was expected"),
        (#"{"extra":"# + String(repeating: "[", count: 100), "nested more than"),
        (#"{"result":{"cancel_reason":"a"},"extra":[1,2,}"#, "unexpected character"),
        (#"{"result":{"header":{"revision":true}}}"#, "not an integer"),
        (#"{"result":{"events":[{"kv":{"value":7}}]}}"#, "not a string"),
    ]

    @Test(arguments: badLines) func refusesWhatIsNotAMessage(_ line: String, _ problem: String) {
        do {
            _ = try EtcdWatchLineReader.read(Data(line.utf8))
            Issue.record("\(line) was read")
        } catch {
            #expect("\(error)".contains(problem), "\(error)")
        }
        // JSONDecoder refuses it too: the two agree on what a message is.
        #expect(throws: (any Error).self) { try JSONDecoder().decode(EtcdWatchLine.self, from: Data(line.utf8)) }
    }

    @Test func refusesBytesThatAreNotUTF8() {
        var line = Data(#"{"result":{"cancel_reason":"a"#.utf8)
        line.append(contentsOf: [0xC3, 0x28])
        line.append(contentsOf: Data(#""}}"#.utf8))
        #expect(throws: EtcdWatchLineReader.Failure.self) { try EtcdWatchLineReader.read(line) }
    }
}
