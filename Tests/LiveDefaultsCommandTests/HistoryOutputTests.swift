import Foundation
import LiveDefaults
import TestSupport
import Testing

@testable import LiveDefaultsCommand

/// `defaults history`'s exact output, text and JSON, for every kind of value and writer: the
/// expected text was printed by the command before its output was made without Foundation's
/// strings (docs/design.md, "History: the log"), so a faster printer prints the same bytes.
@Suite struct HistoryOutputTests {
    /// A log with every kind of value, two writers and an outside change, at fixed times.
    private static func makeLog(in directory: URL) throws {
        let suitePath = directory.appendingPathComponent("com.x.plist").path
        let appender = try #require(HistoryLog(suitePath: suitePath, suite: "com.x").openForAppending())
        let writer = DefaultsHistoryEntry.Writer(
            userID: 1000, userName: "ada", machineID: "0123abcd", hostName: "host \"one\"", processID: 42,
            executable: "/usr/bin/app", command: [])
        let command = DefaultsHistoryEntry.Writer(
            userID: 0, userName: "", machineID: "0123abcd", hostName: "h", processID: 7,
            executable: "/usr/bin/defaults", command: ["write", "com.x", "token", "<secret>"])
        let date = Date(timeIntervalSince1970: 1_800_000_000.25)
        let values: [PropertyListValue?] = [
            nil, .integer(14), .integer(-3), .real(1.5), .real(0.1), .real(.infinity), .bool(true), .bool(false),
            .string("plain"), .string("with \"quotes\", \\ and\nnew line\ttab"), .string("é ünïcødé 🎉"),
            .string("a string longer than fifteen bytes"), .string(""), .date(date),
            .data(Data([0, 1, 2, 254, 255])), .array([.integer(1), .string("two"), .array([])]),
            .dictionary(["b": .bool(true), "a": .string("x/y"), "c": .dictionary([:])]), .string("\u{01}ctl\u{2028}"),
        ]
        var time: Int64 = 1_800_000_000_123_000_000
        for (index, value) in values.enumerated() {
            let change = HistoryChange(
                key: index % 2 == 0 ? "key\(index)" : "ключ \(index)", oldValue: values[(index + 5) % values.count],
                newValue: value, origin: index % 3 == 0 ? .program : .command)
            appender.append(
                [HistoryBatch(time: time, writer: index % 2 == 0 ? writer : command, marker: nil, changes: [change])],
                retention: .standard)
            time += 1_001_000_007
        }
        appender.append(
            [
                HistoryBatch(
                    time: 5_000_000, writer: nil, marker: nil,
                    changes: [
                        HistoryChange(key: "key0", oldValue: nil, newValue: .integer(1), origin: .outside),
                        HistoryChange(key: "key2", oldValue: .integer(1), newValue: nil, origin: .outside),
                    ])
            ], retention: .standard)
    }

    private func run(_ arguments: [String]) throws -> String {
        let directory = try TemporaryDirectory()
        try Self.makeLog(in: directory.url)
        let result = try InProcessCommand(directory: directory.url).run(arguments)
        #expect(result.status == 0, "\(result)")
        return result.standardOutput
    }

    @Test func textIsAsBefore() throws {
        #expect(try run(["history", "com.x"]) == Self.expectedText)
    }

    @Test func jsonIsAsBefore() throws {
        #expect(try run(["history", "com.x", "--json"]) == Self.expectedJSON)
    }

    @Test func oneKeysNewestAreTheWholeOutputsLines() throws {
        let whole = try run(["history", "com.x"]).split(separator: "\n")
        let key = try run(["history", "com.x", "key2", "--limit", "1"])
        #expect(key == whole.filter { $0.contains("\tkey2: ") }.last.map { $0 + "\n" })
        let since = try run(["history", "com.x", "--since", "#18", "--json"])
        #expect(since.hasPrefix("[{\"id\":18,") && since.components(separatedBy: "\"id\":").count == 4, "\(since)")
        #expect(try run(["history", "com.x", "nokey", "--json"]) == "[]\n")
        #expect(try run(["history", "com.x", "nokey"]) == "")
    }

    /// Printed by the command before it printed bytes.
    private static let expectedText =
        #"""
        1	2027-01-15T08:00:00.123Z	key0: inf → (none)	program	ada@host "one" pid 42: /usr/bin/app
        2	2027-01-15T08:00:01.124Z	ключ 1: 1 → 14	command	uid 0@h pid 7: defaults write com.x token <secret>
        3	2027-01-15T08:00:02.125Z	key2: 0 → -3	command	ada@host "one" pid 42: /usr/bin/app
        4	2027-01-15T08:00:03.126Z	ключ 3: plain → "1.5"	program	uid 0@h pid 7: defaults write com.x token <secret>
        5	2027-01-15T08:00:04.127Z	key4: "with \"quotes\", \\ and\nnew line\ttab" → "0.1"	command	ada@host "one" pid 42: /usr/bin/app
        6	2027-01-15T08:00:05.128Z	ключ 5: "\U00e9 \U00fcn\U00efc\U00f8d\U00e9 \Ud83c\Udf89" → inf	command	uid 0@h pid 7: defaults write com.x token <secret>
        7	2027-01-15T08:00:06.129Z	key6: "a string longer than fifteen bytes" → 1	program	ada@host "one" pid 42: /usr/bin/app
        8	2027-01-15T08:00:07.130Z	ключ 7: "" → 0	command	uid 0@h pid 7: defaults write com.x token <secret>
        9	2027-01-15T08:00:08.131Z	key8: "2027-01-15 08:00:00 +0000" → plain	command	ada@host "one" pid 42: /usr/bin/app
        10	2027-01-15T08:00:09.132Z	ключ 9: {length = 5, bytes = 0x000102feff} → "with \"quotes\", \\ and\nnew line\ttab"	program	uid 0@h pid 7: defaults write com.x token <secret>
        11	2027-01-15T08:00:10.133Z	key10: (1, two, ()) → "\U00e9 \U00fcn\U00efc\U00f8d\U00e9 \Ud83c\Udf89"	command	ada@host "one" pid 42: /usr/bin/app
        12	2027-01-15T08:00:11.134Z	ключ 11: {a = "x/y"; b = 1; c = {}; } → "a string longer than fifteen bytes"	command	uid 0@h pid 7: defaults write com.x token <secret>
        13	2027-01-15T08:00:12.135Z	key12: "\U0001ctl\U2028" → ""	program	ada@host "one" pid 42: /usr/bin/app
        14	2027-01-15T08:00:13.136Z	ключ 13: (none) → "2027-01-15 08:00:00 +0000"	command	uid 0@h pid 7: defaults write com.x token <secret>
        15	2027-01-15T08:00:14.137Z	key14: 14 → {length = 5, bytes = 0x000102feff}	command	ada@host "one" pid 42: /usr/bin/app
        16	2027-01-15T08:00:15.138Z	ключ 15: -3 → (1, two, ())	program	uid 0@h pid 7: defaults write com.x token <secret>
        17	2027-01-15T08:00:16.139Z	key16: "1.5" → {a = "x/y"; b = 1; c = {}; }	command	ada@host "one" pid 42: /usr/bin/app
        18	2027-01-15T08:00:17.140Z	ключ 17: "0.1" → "\U0001ctl\U2028"	command	uid 0@h pid 7: defaults write com.x token <secret>
        19	1970-01-01T00:00:00.004Z	key0: (none) → 1	outside	unknown writer (outside LiveDefaults)
        20	1970-01-01T00:00:00.004Z	key2: 1 → (none)	outside	unknown writer (outside LiveDefaults)
        """# + "\n"

    /// Printed by the command before it printed bytes.
    private static let expectedJSON =
        #"""
        [{"id":1,"date":"2027-01-15T08:00:00.123Z","suite":"com.x","key":"key0","old":"inf","new":null,"origin":"program","writer":{"uid":1000,"user":"ada","machineID":"0123abcd","host":"host \"one\"","pid":42,"executable":"/usr/bin/app","command":[]}},
         {"id":2,"date":"2027-01-15T08:00:01.124Z","suite":"com.x","key":"ключ 1","old":true,"new":14,"origin":"command","writer":{"uid":0,"user":"","machineID":"0123abcd","host":"h","pid":7,"executable":"/usr/bin/defaults","command":["write","com.x","token","<secret>"]}},
         {"id":3,"date":"2027-01-15T08:00:02.125Z","suite":"com.x","key":"key2","old":false,"new":-3,"origin":"command","writer":{"uid":1000,"user":"ada","machineID":"0123abcd","host":"host \"one\"","pid":42,"executable":"/usr/bin/app","command":[]}},
         {"id":4,"date":"2027-01-15T08:00:03.126Z","suite":"com.x","key":"ключ 3","old":"plain","new":1.5,"origin":"program","writer":{"uid":0,"user":"","machineID":"0123abcd","host":"h","pid":7,"executable":"/usr/bin/defaults","command":["write","com.x","token","<secret>"]}},
         {"id":5,"date":"2027-01-15T08:00:04.127Z","suite":"com.x","key":"key4","old":"with \"quotes\", \\ and\nnew line\ttab","new":0.1,"origin":"command","writer":{"uid":1000,"user":"ada","machineID":"0123abcd","host":"host \"one\"","pid":42,"executable":"/usr/bin/app","command":[]}},
         {"id":6,"date":"2027-01-15T08:00:05.128Z","suite":"com.x","key":"ключ 5","old":"é ünïcødé 🎉","new":"inf","origin":"command","writer":{"uid":0,"user":"","machineID":"0123abcd","host":"h","pid":7,"executable":"/usr/bin/defaults","command":["write","com.x","token","<secret>"]}},
         {"id":7,"date":"2027-01-15T08:00:06.129Z","suite":"com.x","key":"key6","old":"a string longer than fifteen bytes","new":true,"origin":"program","writer":{"uid":1000,"user":"ada","machineID":"0123abcd","host":"host \"one\"","pid":42,"executable":"/usr/bin/app","command":[]}},
         {"id":8,"date":"2027-01-15T08:00:07.130Z","suite":"com.x","key":"ключ 7","old":"","new":false,"origin":"command","writer":{"uid":0,"user":"","machineID":"0123abcd","host":"h","pid":7,"executable":"/usr/bin/defaults","command":["write","com.x","token","<secret>"]}},
         {"id":9,"date":"2027-01-15T08:00:08.131Z","suite":"com.x","key":"key8","old":"2027-01-15T08:00:00Z","new":"plain","origin":"command","writer":{"uid":1000,"user":"ada","machineID":"0123abcd","host":"host \"one\"","pid":42,"executable":"/usr/bin/app","command":[]}},
         {"id":10,"date":"2027-01-15T08:00:09.132Z","suite":"com.x","key":"ключ 9","old":"AAEC/v8=","new":"with \"quotes\", \\ and\nnew line\ttab","origin":"program","writer":{"uid":0,"user":"","machineID":"0123abcd","host":"h","pid":7,"executable":"/usr/bin/defaults","command":["write","com.x","token","<secret>"]}},
         {"id":11,"date":"2027-01-15T08:00:10.133Z","suite":"com.x","key":"key10","old":[1,"two",[]],"new":"é ünïcødé 🎉","origin":"command","writer":{"uid":1000,"user":"ada","machineID":"0123abcd","host":"host \"one\"","pid":42,"executable":"/usr/bin/app","command":[]}},
         {"id":12,"date":"2027-01-15T08:00:11.134Z","suite":"com.x","key":"ключ 11","old":{"a":"x/y","b":true,"c":{}},"new":"a string longer than fifteen bytes","origin":"command","writer":{"uid":0,"user":"","machineID":"0123abcd","host":"h","pid":7,"executable":"/usr/bin/defaults","command":["write","com.x","token","<secret>"]}},
         {"id":13,"date":"2027-01-15T08:00:12.135Z","suite":"com.x","key":"key12","old":"\u0001ctl\u2028","new":"","origin":"program","writer":{"uid":1000,"user":"ada","machineID":"0123abcd","host":"host \"one\"","pid":42,"executable":"/usr/bin/app","command":[]}},
         {"id":14,"date":"2027-01-15T08:00:13.136Z","suite":"com.x","key":"ключ 13","old":null,"new":"2027-01-15T08:00:00Z","origin":"command","writer":{"uid":0,"user":"","machineID":"0123abcd","host":"h","pid":7,"executable":"/usr/bin/defaults","command":["write","com.x","token","<secret>"]}},
         {"id":15,"date":"2027-01-15T08:00:14.137Z","suite":"com.x","key":"key14","old":14,"new":"AAEC/v8=","origin":"command","writer":{"uid":1000,"user":"ada","machineID":"0123abcd","host":"host \"one\"","pid":42,"executable":"/usr/bin/app","command":[]}},
         {"id":16,"date":"2027-01-15T08:00:15.138Z","suite":"com.x","key":"ключ 15","old":-3,"new":[1,"two",[]],"origin":"program","writer":{"uid":0,"user":"","machineID":"0123abcd","host":"h","pid":7,"executable":"/usr/bin/defaults","command":["write","com.x","token","<secret>"]}},
         {"id":17,"date":"2027-01-15T08:00:16.139Z","suite":"com.x","key":"key16","old":1.5,"new":{"a":"x/y","b":true,"c":{}},"origin":"command","writer":{"uid":1000,"user":"ada","machineID":"0123abcd","host":"host \"one\"","pid":42,"executable":"/usr/bin/app","command":[]}},
         {"id":18,"date":"2027-01-15T08:00:17.140Z","suite":"com.x","key":"ключ 17","old":0.1,"new":"\u0001ctl\u2028","origin":"command","writer":{"uid":0,"user":"","machineID":"0123abcd","host":"h","pid":7,"executable":"/usr/bin/defaults","command":["write","com.x","token","<secret>"]}},
         {"id":19,"date":"1970-01-01T00:00:00.004Z","suite":"com.x","key":"key0","old":null,"new":1,"origin":"outside","writer":null},
         {"id":20,"date":"1970-01-01T00:00:00.004Z","suite":"com.x","key":"key2","old":1,"new":null,"origin":"outside","writer":null}]
        """# + "\n"
}
