import Foundation
import LiveDefaultsEtcdClient
import LiveDefaultsPropertyList

/// The `etcd-json` rows: a watch line as etcd's gateway writes it → its message, by the etcd
/// client's reader (`EtcdWatchLineReader`: its hand-written JSON parser and its mapping into
/// `EtcdWatchLine`), by Foundation's `JSONSerialization`, and by json-c (Debian's libjson-c5, MIT;
/// loaded here with dlopen, one tokener reused), these two with the same mapping of etcd's fields
/// into structures of the same shape (``WatchMessage``: 64-bit integers from their decimal
/// strings, bytes from base64). The parser stays hand-written only while these rows find it
/// faster (docs/performance.md, "Hand-tuned code and the target it serves"). Every decoder's
/// result is checked against the client's before it is timed.
extension EtcdBenchmark {
    func measureWatchLineParsers(into report: inout Report) {
        let jsonC = JSONC.load()
        if jsonC == nil { report.notes.append("etcd json: json-c (libjson-c.so.5) not found; its rows skipped") }
        // The decoders take turns, a round of calls each, their order turned every round, so that
        // what the machine does meanwhile falls on all alike; each row is the median of its rounds.
        let (rounds, calls) = options.quick ? (3, 500) : (25, 2_000)
        for (name, line) in Self.watchLines {
            let data = Data(line.utf8)
            guard let ours = try? EtcdWatchLineReader.read(data) else {
                report.notes.append("etcd json: the client's reader refused the \(name) line")
                return
            }
            let expected = WatchMessage(ours)
            var decoders: [(String, (Data) -> WatchMessage?)] = [
                ("JSONSerialization", { WatchLineByFoundation.read($0) })
            ]
            if let jsonC { decoders.append(("json-c", { jsonC.read($0) })) }
            var timed: [(name: String, call: () -> Void)] = [
                ("the client's parser", { blackHole(try? EtcdWatchLineReader.read(data)) })
            ]
            for (decoder, read) in decoders {
                guard let message = read(data), message == expected else {
                    report.notes.append("etcd json: \(decoder) read the \(name) line differently; its row skipped")
                    continue
                }
                timed.append((decoder, { blackHole(read(data)) }))
            }
            var samples = Array(repeating: [Double](), count: timed.count)
            for round in 0..<rounds {
                for offset in 0..<timed.count {
                    let index = (offset + round) % timed.count
                    let start = monotonicNanoseconds()
                    for _ in 0..<calls { timed[index].call() }
                    samples[index].append(Double(monotonicNanoseconds() - start) / Double(calls))
                }
            }
            let medians = samples.map { percentile($0, 0.5) }
            let fastestOther = medians.dropFirst().min()
            report.add(
                "etcd json", "watch line → message, \(name) (\(data.count) bytes): the client's parser", medians[0],
                limit: fastestOther, target: "≤ the fastest other",
                met: fastestOther.map { medians[0] <= $0 })
            for (index, decoder) in timed.enumerated().dropFirst() {
                report.add("etcd json", "watch line → message, \(name): \(decoder.name)", medians[index])
            }
        }
    }

    /// Lines as etcd 3.4.23's gateway writes them to a fleet suite's watch: one change (a value as
    /// the suite stores it, an XML property list), ten changes in one transaction, a progress
    /// notification.
    static let watchLines: [(String, String)] = {
        let header =
            #""header":{"cluster_id":"14841639068965178418","member_id":"10276657743932975437","revision":"1208","raft_term":"2"}"#
        func event(_ index: Int) -> String {
            let key = Data("/livedefaults/v1/com.example.app/key\(index)".utf8).base64EncodedString()
            let value = encoded(1_000 + index).base64EncodedString()
            return
                #"{"kv":{"key":"\#(key)","create_revision":"\#(100 + index)","mod_revision":"1208","version":"7","value":"\#(value)"}}"#
        }
        return [
            ("one change", #"{"result":{\#(header),"events":[\#(event(0))]}}"#),
            ("ten changes", #"{"result":{\#(header),"events":[\#((0..<10).map(event).joined(separator: ","))]}}"#),
            ("progress", #"{"result":{\#(header)}}"#),
        ]
    }()
}

/// A watch line through `JSONSerialization`, then etcd's fields from its dictionaries.
enum WatchLineByFoundation {
    static func read(_ data: Data) -> WatchMessage? {
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return nil }
        var line = WatchMessage()
        if let result = object["result"] as? [String: Any] {
            var events: [WatchMessage.Event]?
            if let list = result["events"] as? [[String: Any]] {
                events = list.map { event in
                    let kv = (event["kv"] as? [String: Any]).map { kv in
                        WatchMessage.KeyValue(
                            key: bytes(kv["key"]), value: bytes(kv["value"]),
                            create_revision: integer(kv["create_revision"]), mod_revision: integer(kv["mod_revision"]),
                            version: integer(kv["version"]))
                    }
                    return WatchMessage.Event(type: event["type"] as? String, kv: kv)
                }
            }
            line.result = WatchMessage.Result(
                header: (result["header"] as? [String: Any]).map { header in
                    WatchMessage.Header(
                        cluster_id: integer(header["cluster_id"]), member_id: integer(header["member_id"]),
                        revision: integer(header["revision"]), raft_term: integer(header["raft_term"]))
                },
                watch_id: integer(result["watch_id"]), created: result["created"] as? Bool,
                canceled: result["canceled"] as? Bool, compact_revision: integer(result["compact_revision"]),
                cancel_reason: result["cancel_reason"] as? String, events: events)
        }
        if let error = object["error"] as? [String: Any] {
            line.error = WatchMessage.StreamError(
                grpc_code: error["grpc_code"] as? Int, http_code: error["http_code"] as? Int,
                message: error["message"] as? String)
        }
        return line
    }

    private static func integer<Value: FixedWidthInteger>(_ value: Any?) -> Value? {
        if let text = value as? String { return Value(text) }
        if let number = value as? NSNumber { return Value(exactly: number.int64Value) }
        return nil
    }

    private static func bytes(_ value: Any?) -> Data? {
        (value as? String).flatMap { Data(base64Encoded: $0) }
    }
}

/// json-c's functions, loaded from Debian's libjson-c5 with dlopen (the benchmark links nothing
/// new), and a watch line through them.
final class JSONC {
    private typealias Object = OpaquePointer
    private let tokenerNew: @convention(c) () -> OpaquePointer?
    private let tokenerFree: @convention(c) (OpaquePointer?) -> Void
    private let tokenerReset: @convention(c) (OpaquePointer?) -> Void
    private let parse: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, Int32) -> Object?
    private let put: @convention(c) (Object?) -> Int32
    private let getEx: @convention(c) (Object?, UnsafePointer<CChar>?, UnsafeMutablePointer<Object?>?) -> Int32
    private let type: @convention(c) (Object?) -> Int32
    private let string: @convention(c) (Object?) -> UnsafePointer<CChar>?
    private let stringLength: @convention(c) (Object?) -> Int32
    private let int64: @convention(c) (Object?) -> Int64
    private let boolean: @convention(c) (Object?) -> Int32
    private let arrayLength: @convention(c) (Object?) -> Int
    private let arrayItem: @convention(c) (Object?, Int) -> Object?
    private let tokener: OpaquePointer?

    // json_type
    private static let (null, boolean, double, int, object, array, string) = (
        Int32(0), Int32(1), Int32(2), Int32(3), Int32(4), Int32(5), Int32(6)
    )

    static func load() -> JSONC? {
        guard let library = dlopen("libjson-c.so.5", RTLD_NOW | RTLD_LOCAL) else { return nil }
        func symbol<T>(_ name: String, _: T.Type) -> T? {
            dlsym(library, name).map { unsafeBitCast($0, to: T.self) }
        }
        guard let tokenerNew = symbol("json_tokener_new", (@convention(c) () -> OpaquePointer?).self),
            let tokenerFree = symbol("json_tokener_free", (@convention(c) (OpaquePointer?) -> Void).self),
            let tokenerReset = symbol("json_tokener_reset", (@convention(c) (OpaquePointer?) -> Void).self),
            let parse = symbol(
                "json_tokener_parse_ex",
                (@convention(c) (OpaquePointer?, UnsafePointer<CChar>?, Int32) -> OpaquePointer?).self),
            let put = symbol("json_object_put", (@convention(c) (OpaquePointer?) -> Int32).self),
            let getEx = symbol(
                "json_object_object_get_ex",
                (@convention(c) (OpaquePointer?, UnsafePointer<CChar>?, UnsafeMutablePointer<OpaquePointer?>?) -> Int32)
                    .self),
            let type = symbol("json_object_get_type", (@convention(c) (OpaquePointer?) -> Int32).self),
            let string = symbol(
                "json_object_get_string", (@convention(c) (OpaquePointer?) -> UnsafePointer<CChar>?).self),
            let stringLength = symbol("json_object_get_string_len", (@convention(c) (OpaquePointer?) -> Int32).self),
            let int64 = symbol("json_object_get_int64", (@convention(c) (OpaquePointer?) -> Int64).self),
            let boolean = symbol("json_object_get_boolean", (@convention(c) (OpaquePointer?) -> Int32).self),
            let arrayLength = symbol("json_object_array_length", (@convention(c) (OpaquePointer?) -> Int).self),
            let arrayItem = symbol(
                "json_object_array_get_idx", (@convention(c) (OpaquePointer?, Int) -> OpaquePointer?).self)
        else { return nil }
        return JSONC(
            tokenerNew: tokenerNew, tokenerFree: tokenerFree, tokenerReset: tokenerReset, parse: parse, put: put,
            getEx: getEx, type: type, string: string, stringLength: stringLength, int64: int64, boolean: boolean,
            arrayLength: arrayLength, arrayItem: arrayItem)
    }

    private init(
        tokenerNew: @escaping @convention(c) () -> OpaquePointer?,
        tokenerFree: @escaping @convention(c) (OpaquePointer?) -> Void,
        tokenerReset: @escaping @convention(c) (OpaquePointer?) -> Void,
        parse: @escaping @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, Int32) -> Object?,
        put: @escaping @convention(c) (Object?) -> Int32,
        getEx: @escaping @convention(c) (Object?, UnsafePointer<CChar>?, UnsafeMutablePointer<Object?>?) -> Int32,
        type: @escaping @convention(c) (Object?) -> Int32,
        string: @escaping @convention(c) (Object?) -> UnsafePointer<CChar>?,
        stringLength: @escaping @convention(c) (Object?) -> Int32, int64: @escaping @convention(c) (Object?) -> Int64,
        boolean: @escaping @convention(c) (Object?) -> Int32, arrayLength: @escaping @convention(c) (Object?) -> Int,
        arrayItem: @escaping @convention(c) (Object?, Int) -> Object?
    ) {
        self.tokenerNew = tokenerNew
        self.tokenerFree = tokenerFree
        self.tokenerReset = tokenerReset
        self.parse = parse
        self.put = put
        self.getEx = getEx
        self.type = type
        self.string = string
        self.stringLength = stringLength
        self.int64 = int64
        self.boolean = boolean
        self.arrayLength = arrayLength
        self.arrayItem = arrayItem
        tokener = tokenerNew()
    }

    deinit { tokenerFree(tokener) }

    /// The line through json-c: parsed by a reused tokener (as a watch stream would keep one),
    /// then etcd's fields.
    func read(_ data: Data) -> WatchMessage? {
        tokenerReset(tokener)
        guard
            let root = data.withUnsafeBytes({ bytes in
                parse(tokener, bytes.baseAddress?.assumingMemoryBound(to: CChar.self), Int32(bytes.count))
            })
        else { return nil }
        defer { _ = put(root) }
        guard type(root) == Self.object else { return nil }
        var line = WatchMessage()
        if let result = member(root, "result"), type(result) == Self.object {
            var events: [WatchMessage.Event]?
            if let list = member(result, "events"), type(list) == Self.array {
                events = (0..<arrayLength(list)).map { index in
                    let event = arrayItem(list, index)
                    let kv = member(event, "kv").map { kv in
                        WatchMessage.KeyValue(
                            key: bytes(member(kv, "key")), value: bytes(member(kv, "value")),
                            create_revision: integer(member(kv, "create_revision")),
                            mod_revision: integer(member(kv, "mod_revision")), version: integer(member(kv, "version")))
                    }
                    return WatchMessage.Event(type: text(member(event, "type")), kv: kv)
                }
            }
            line.result = WatchMessage.Result(
                header: member(result, "header").map { header in
                    WatchMessage.Header(
                        cluster_id: integer(member(header, "cluster_id")),
                        member_id: integer(member(header, "member_id")), revision: integer(member(header, "revision")),
                        raft_term: integer(member(header, "raft_term")))
                },
                watch_id: integer(member(result, "watch_id")), created: flag(member(result, "created")),
                canceled: flag(member(result, "canceled")),
                compact_revision: integer(member(result, "compact_revision")),
                cancel_reason: text(member(result, "cancel_reason")), events: events)
        }
        if let error = member(root, "error"), type(error) == Self.object {
            line.error = WatchMessage.StreamError(
                grpc_code: member(error, "grpc_code").map { Int(int64($0)) },
                http_code: member(error, "http_code").map { Int(int64($0)) }, message: text(member(error, "message")))
        }
        return line
    }

    /// A member that is there and not null.
    private func member(_ object: Object?, _ name: StaticString) -> Object? {
        var value: Object?
        guard getEx(object, UnsafeRawPointer(name.utf8Start).assumingMemoryBound(to: CChar.self), &value) != 0,
            let value, type(value) != Self.null
        else { return nil }
        return value
    }

    private func text(_ object: Object?) -> String? {
        guard let object, type(object) == Self.string, let start = string(object) else { return nil }
        return String(
            decoding: UnsafeRawBufferPointer(start: start, count: Int(stringLength(object))), as: UTF8.self)
    }

    private func flag(_ object: Object?) -> Bool? {
        guard let object, type(object) == Self.boolean else { return nil }
        return boolean(object) != 0
    }

    private func integer<Value: FixedWidthInteger>(_ object: Object?) -> Value? {
        guard let object else { return nil }
        switch type(object) {
        case Self.string: return text(object).flatMap { Value($0) }
        case Self.int: return Value(exactly: int64(object))
        default: return nil
        }
    }

    private func bytes(_ object: Object?) -> Data? {
        text(object).flatMap { Data(base64Encoded: $0) }
    }
}

/// A watch line's message in structures of the same shape as the client's `EtcdWatchLine` (whose
/// initialisers the package keeps to itself), for the other decoders to fill and the client's to
/// be compared with.
struct WatchMessage: Equatable {
    struct Header: Equatable {
        var cluster_id: UInt64?
        var member_id: UInt64?
        var revision: Int64?
        var raft_term: UInt64?
    }
    struct KeyValue: Equatable {
        var key: Data?
        var value: Data?
        var create_revision: Int64?
        var mod_revision: Int64?
        var version: Int64?
    }
    struct Event: Equatable {
        var type: String?
        var kv: KeyValue?
    }
    struct Result: Equatable {
        var header: Header?
        var watch_id: Int64?
        var created: Bool?
        var canceled: Bool?
        var compact_revision: Int64?
        var cancel_reason: String?
        var events: [Event]?
    }
    struct StreamError: Equatable {
        var grpc_code: Int?
        var http_code: Int?
        var message: String?
    }
    var result: Result?
    var error: StreamError?

    init() {}

    /// The client's message, field for field.
    init(_ line: EtcdWatchLine) {
        result = line.result.map { result in
            Result(
                header: result.header.map { header in
                    Header(
                        cluster_id: header.cluster_id?.value, member_id: header.member_id?.value,
                        revision: header.revision?.value, raft_term: header.raft_term?.value)
                },
                watch_id: result.watch_id?.value, created: result.created, canceled: result.canceled,
                compact_revision: result.compact_revision?.value, cancel_reason: result.cancel_reason,
                events: result.events?.map { event in
                    Event(
                        type: event.type,
                        kv: event.kv.map { kv in
                            KeyValue(
                                key: kv.key?.data, value: kv.value?.data, create_revision: kv.create_revision?.value,
                                mod_revision: kv.mod_revision?.value, version: kv.version?.value)
                        })
                })
        }
        error = line.error.map {
            StreamError(grpc_code: $0.grpc_code, http_code: $0.http_code, message: $0.message)
        }
    }
}
