// A second process for the end-to-end tests: writers, crash victims and Foundation peers.
// Usage: TestHelper <command> <directory> <suite> [arguments…]
import Foundation
import LiveDefaults
import LiveDefaultsEtcd
import LiveDefaultsWatching

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(2)
}

// Started by the tests through Foundation's Process, this process inherits a signal mask that
// blocks almost everything, SIGTERM included (so `terminate()` would wait forever): clear it.
var noSignals = sigset_t()
sigemptyset(&noSignals)
sigprocmask(SIG_SETMASK, &noSignals, nil)

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count >= 1 else { fail("usage: TestHelper <command> …") }

func open(_ index: Int) -> Defaults {
    guard arguments.count > index + 1 else { fail("missing directory and suite") }
    do {
        return try Defaults(
            suiteName: arguments[index + 1], directory: URL(fileURLWithPath: arguments[index]), watchesFiles: false)
    } catch {
        fail("\(error)")
    }
}

@Sendable func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

switch arguments[0] {
case "fleet-migrate":
    // fleet-migrate <endpoint> <suite> <go-file>: waits for <go-file>, then runs a 3-step migration of
    // the fleet suite (each step appends its number to "log"; step 2 renames "old" to "new").
    // Prints "ran <n>" for each step this process committed.
    guard arguments.count == 4, let endpoint = URL(string: arguments[1]) else {
        fail("fleet-migrate <endpoint> <suite> <go>")
    }
    while !FileManager.default.fileExists(atPath: arguments[3]) { usleep(200) }
    do {
        let suite = try FleetSuite(name: arguments[2], endpoints: [endpoint])
        let ran = try suite.migrate(to: 3) { step in
            let entry = PropertyListValue.integer(Int64(step.number))
            step.set(.array((step.values["log"]?.arrayValue ?? []) + [entry]), forKey: "log")
            if step.number == 2 { step.rename("old", to: "new") }
        }
        for number in ran { say("ran \(number)") }
    } catch {
        fail("\(error)")
    }

case "fleet-set-and-die":
    // fleet-set-and-die <endpoint> <cache-dir> <suite> <key> <value>: opens the fleet suite (its offline
    // cache and journal in <cache-dir>), sets the string <value>, prints "set" and kills itself with
    // SIGKILL, without waiting for etcd (docs/design.md, "The journal", fleet suites).
    guard arguments.count == 6, let endpoint = URL(string: arguments[1]) else {
        fail("fleet-set-and-die <endpoint> <cache-dir> <suite> <key> <value>")
    }
    do {
        let suite = try FleetSuite(
            name: arguments[3], endpoints: [endpoint], cacheDirectory: URL(fileURLWithPath: arguments[2]))
        let defaults = try Defaults.fleet(suite)
        defaults.set(arguments[5], forKey: arguments[4])
        say("set")
        raise(SIGKILL)
    } catch {
        fail("\(error)")
    }
    fail("still alive")

case "migrate":
    // migrate <dir> <suite> <crash-at-step> <go-file> [observe]: waits for <go-file> to exist (so that
    // racing processes start together), then runs the test migration (4 steps, each appending its
    // number to the array "log"); exits 3 inside step <crash-at-step> (0: none), before it is written.
    // Prints "ran <n>" for each step this process ran. With "observe", the suite is watched and
    // observed from the start ("ready" on standard error once it is); once the migrated record has
    // been delivered, prints "origin <origin>" for each origin its observers saw.
    let observes = arguments.count == 6 && arguments[5] == "observe"
    guard arguments.count == 5 || observes, let crashAt = Int(arguments[3]) else {
        fail("migrate <dir> <suite> <crash> <go> [observe]")
    }
    let defaults: Defaults
    do {
        defaults = try Defaults(
            suiteName: arguments[2], directory: URL(fileURLWithPath: arguments[1]), watchesFiles: observes)
    } catch {
        fail("\(error)")
    }
    let seen = Locked<[DefaultsChange<PropertyListValue?>]>([])
    let observation = defaults.observeAll(options: [.new]) { change in seen.withLock { $0.append(change) } }
    defer { observation.cancel() }
    if observes { FileHandle.standardError.write(Data("ready\n".utf8)) }
    while !FileManager.default.fileExists(atPath: arguments[4]) { usleep(200) }
    do {
        let ran = try defaults.migrate(to: 4) { step in
            let entry = PropertyListValue.integer(Int64(step.number))
            step.set(.array((step.values["log"]?.arrayValue ?? []) + [entry]), forKey: "log")
            switch step.number {
            case 1: step.rename("fontsize", to: "fontSize")
            case 2: step.convert("fontSize") { old in old.stringValue.flatMap { Int64($0) }.map { .integer($0) } }
            case 3: step.remove(["legacy"])
            case 4: step.move(["theme"], fromSuite: arguments[2] + ".old")
            default: break
            }
            if step.number == crashAt { _exit(3) }
        }
        for number in ran { say("ran \(number)") }
        guard observes else { break }
        let done: PropertyListValue = ["version": 4]
        let deadline = Date().addingTimeInterval(10)
        while !seen.withLock({ $0.contains { $0.key == DefaultsMigration.recordKey && $0.newValue == done } }) {
            guard Date() < deadline else { fail("the migrated record was not delivered") }
            usleep(1000)
        }
        for origin in Set(seen.withLock { $0.map { "\($0.origin)" } }).sorted() { say("origin \(origin)") }
    } catch {
        fail("\(error)")
    }

case "write-distinct":
    // write-distinct <dir> <suite> <prefix> <count>: one key at a time, each acknowledged.
    let defaults = open(1)
    guard arguments.count == 5, let count = Int(arguments[4]) else {
        fail("write-distinct <dir> <suite> <prefix> <count>")
    }
    for index in 0..<count {
        defaults.set(index, forKey: "\(arguments[3])-\(index)")
        do { try defaults.synchronize() } catch { fail("\(error)") }
    }
    say("done")

case "write-chain":
    // write-chain <dir> <suite> <prefix> <count>: sets "<prefix>-<i>" to i and the shared key "last"
    // to "<prefix>-<i>", then synchronizes, for each i: the history's chain of "last" shows the
    // file's order (HistoryProcessTests).
    let defaults = open(1)
    guard arguments.count == 5, let count = Int(arguments[4]) else {
        fail("write-chain <dir> <suite> <prefix> <count>")
    }
    for index in 0..<count {
        defaults.set(index, forKey: "\(arguments[3])-\(index)")
        defaults.set("\(arguments[3])-\(index)", forKey: "last")
        do { try defaults.synchronize() } catch { fail("\(error)") }
    }
    say("pid \(getpid())")

case "flush-forever":
    // flush-forever <dir> <suite> <keys>: generation after generation, every key set to the
    // generation number, then synchronize; prints "acked <generation>" after each.
    let defaults = open(1)
    guard arguments.count == 4, let keys = Int(arguments[3]) else { fail("flush-forever <dir> <suite> <keys>") }
    let padding = String(repeating: "x", count: 100)
    var generation = Int(defaults.string(forKey: "generation") ?? "0") ?? 0
    while true {
        generation += 1
        for index in 0..<keys { defaults.set("\(generation)-\(padding)", forKey: "key-\(index)") }
        defaults.set(String(generation), forKey: "generation")
        do { try defaults.synchronize() } catch { fail("\(error)") }
        say("acked \(generation)")
    }

case "foundation-write":
    // foundation-write <suite>: Foundation's UserDefaults writes a sample of every type
    // (in $XDG_CONFIG_HOME, from the environment).
    guard arguments.count == 2, let defaults = UserDefaults(suiteName: arguments[1]) else {
        fail("foundation-write <suite>")
    }
    defaults.set("from Foundation", forKey: "string")
    defaults.set(42, forKey: "int")
    defaults.set(2.5, forKey: "double")
    defaults.set(true, forKey: "bool")
    defaults.set(Date(timeIntervalSince1970: 1_700_000_000), forKey: "date")
    defaults.set(Data([1, 2, 3]), forKey: "data")
    defaults.set(["a", "b"], forKey: "array")
    defaults.set(["k": "v", "n": 1] as [String: Any], forKey: "dictionary")
    defaults.set(URL(fileURLWithPath: "/tmp/file"), forKey: "url")
    guard defaults.synchronize() else { fail("synchronize failed") }
    say("done")

case "foundation-read":
    // foundation-read <suite>: Foundation's UserDefaults prints what it reads, one key a line.
    guard arguments.count == 2, let defaults = UserDefaults(suiteName: arguments[1]) else {
        fail("foundation-read <suite>")
    }
    let values = defaults.persistentDomain(forName: arguments[1]) ?? [:]
    for (key, value) in values.sorted(by: { $0.key < $1.key }) {
        let text = (try? PropertyListValue(foundationObject: value)).map(String.init(describing:)) ?? "\(value)"
        say("\(key)=\(text)")
    }
    if let url = defaults.url(forKey: "url") { say("url()=\(url.path)") }

case "foundation-domain-notifications":
    // foundation-domain-notifications <suite> <other>: Foundation's UserDefaults removes, sets and
    // removes the persistent domain <other>, then sets and removes its own; after each call it
    // prints how many didChangeNotifications were posted so far and whether each named the instance.
    guard arguments.count == 3, let defaults = UserDefaults(suiteName: arguments[1]) else {
        fail("foundation-domain-notifications <suite> <other>")
    }
    let posts = Locked<[String]>([])
    let identity = ObjectIdentifier(defaults)
    let observer = NotificationCenter.default.addObserver(
        forName: UserDefaults.didChangeNotification, object: nil, queue: nil
    ) { note in
        let isSelf = (note.object as AnyObject?).map(ObjectIdentifier.init) == identity
        posts.withLock { $0.append(isSelf ? "self" : "other") }
    }
    let other = arguments[2]
    let report = { (step: String) in say("\(step) \(posts.withLock { $0.joined(separator: ",") })") }
    defaults.removePersistentDomain(forName: other)
    report("remove-other")
    defaults.setPersistentDomain(["a": 1], forName: other)
    report("set-other")
    defaults.removePersistentDomain(forName: other)
    report("remove-other")
    defaults.setPersistentDomain(["b": 2], forName: arguments[1])
    report("set-own")
    defaults.removePersistentDomain(forName: arguments[1])
    report("remove-own")
    NotificationCenter.default.removeObserver(observer)

case "standard-set":
    // standard-set <key> <value>: writes through Defaults.standard (suite = process name).
    guard arguments.count == 3 else { fail("standard-set <key> <value>") }
    Defaults.standard.set(arguments[2], forKey: arguments[1])
    say(Defaults.standard.suiteName)

case "journal-seeds":
    // journal-seeds <dir>: journals written by the real writer (SuiteJournal), for the journal
    // fuzzer's corpus (Fuzz/run.sh): whole, partly released, started over, cut short, with a byte
    // flipped, and with another format's header. Each is cut after its last record.
    guard arguments.count == 2 else { fail("journal-seeds <dir>") }
    let output = arguments[1]
    let scratch = NSTemporaryDirectory() + "journal-seeds-\(getpid())"
    var seeds: [String: [UInt8]] = [:]
    guard mkdir(scratch, 0o700) == 0 else { fail("could not make \(scratch)") }
    func written(_ name: String, _ body: (SuiteJournal) -> Void) -> [UInt8] {
        do {
            let journal = try SuiteJournal(suitePath: scratch + "/\(name).plist")
            body(journal)
            let end = journal.mark()
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: journal.path)).prefix(end))
            unlink(journal.path)
            return bytes
        } catch {
            fail("\(error)")
        }
    }
    let values: [PropertyListValue] = [
        .bool(true), .integer(-3), .integer(70_000), .real(2.5), .string("short"),
        .string(String(repeating: "long ", count: 8)), .string("non-ASCII é"), .data(Data([0, 1, 2])),
        .date(Date(timeIntervalSinceReferenceDate: 1_000)), .array([.integer(1), .string("x")]),
        .dictionary(["nested": .dictionary(["k": .bool(false)])]), .unsignedInteger(.max), .float(1.5),
    ]
    seeds["whole"] = written("whole") { journal in
        for (index, value) in values.enumerated() { _ = journal.append(.set, key: "key-\(index)", value: value) }
        _ = journal.append(.remove, key: "key-0", value: nil)
        _ = journal.append(.clear, key: "", value: nil)
        _ = journal.append(.set, key: "after the clear", value: .integer(1))
    }
    seeds["released"] = written("released") { journal in
        _ = journal.append(.set, key: "written", value: .integer(1))
        let mark = journal.mark()
        _ = journal.append(.set, key: "during the flush", value: .string("kept"))
        journal.release(upTo: mark)
        _ = journal.append(.remove, key: "written", value: nil)
    }
    seeds["started-over"] = written("started-over") { journal in
        for index in 0..<4 { _ = journal.append(.set, key: "old-\(index)", value: .string("older generation")) }
        journal.release(upTo: journal.mark())
        _ = journal.append(.set, key: "new", value: .integer(2))
    }
    let whole = seeds["whole"] ?? []
    for cut in [whole.count - 1, whole.count - 9, whole.count / 2, 40, 31] {
        seeds["cut-\(cut)"] = Array(whole[..<cut])
    }
    for position in [44, 60, whole.count / 2, whole.count - 2] {
        var flipped = whole
        flipped[position] ^= 0x10
        seeds["flipped-\(position)"] = flipped
    }
    var newer = whole
    newer[8] = 2
    seeds["format-2"] = newer
    var foreign = whole
    foreign.replaceSubrange(0..<8, with: Array("bplist00".utf8))
    seeds["other-magic"] = foreign
    do {
        try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
        for (name, bytes) in seeds {
            try Data(bytes).write(to: URL(fileURLWithPath: output + "/seed-" + name + ".journal"))
        }
        try? FileManager.default.removeItem(atPath: scratch)
    } catch {
        fail("\(error)")
    }
    exit(0)

case "set-and-exit":
    // set-and-exit <dir> <suite> <key> <value>: sets without synchronize; the exit flush writes it.
    let defaults = open(1)
    guard arguments.count == 5 else { fail("set-and-exit <dir> <suite> <key> <value>") }
    defaults.set(arguments[4], forKey: arguments[3])
    exit(0)

case "set-and-die":
    // set-and-die <dir> <suite> <key> <integer> <microseconds> <kill|term|fatal|segv>: sets one key,
    // waits, then dies without flushing: SIGKILL, SIGTERM with no handler, fatalError, or SIGSEGV
    // (docs/design.md, "The journal": a `set` that returned survives any death of its process).
    let defaults = open(1)
    guard arguments.count == 7, let number = Int64(arguments[4]), let delay = UInt32(arguments[5]) else {
        fail("set-and-die <dir> <suite> <key> <integer> <microseconds> <kill|term|fatal|segv>")
    }
    defaults.set(.integer(number), forKey: arguments[3])
    if delay > 0 { usleep(delay) }  // the moment of death, not synchronisation
    switch arguments[6] {
    case "kill": raise(SIGKILL)
    case "term":
        signal(SIGTERM, SIG_DFL)
        raise(SIGTERM)
    case "fatal": fatalError("dying on purpose")
    case "segv":
        signal(SIGSEGV, SIG_DFL)
        raise(SIGSEGV)
    default: fail("unknown death \(arguments[6])")
    }
    fail("still alive")

case "set":
    // set <dir> <suite> <key> <value>: sets one key and synchronizes, as another program would.
    // The value is read as true/false, an integer, a real, else taken as a string.
    let defaults = open(1)
    guard arguments.count == 5 else { fail("set <dir> <suite> <key> <value>") }
    let text = arguments[4]
    let value: PropertyListValue =
        switch text {
        case "true": .bool(true)
        case "false": .bool(false)
        default: Int64(text).map(PropertyListValue.integer) ?? Double(text).map(PropertyListValue.real) ?? .string(text)
        }
    defaults.set(value, forKey: arguments[3])
    do { try defaults.synchronize() } catch { fail("\(error)") }
    say("done")

case "flush-watched":
    // flush-watched <dir> <suite> <count>: with the file watched, sets and synchronizes `count`
    // times, 50 ms apart (for the watcher's call and the reload to come back), to measure what
    // this process does with its own flushes (docs/design.md, "Live reload: this process's own flush": strace -e openat).
    guard arguments.count == 4, let count = Int(arguments[3]) else { fail("flush-watched <dir> <suite> <count>") }
    let defaults: Defaults
    do {
        defaults = try Defaults(
            suiteName: arguments[2], directory: URL(fileURLWithPath: arguments[1]), watchesFiles: true)
    } catch {
        fail("\(error)")
    }
    for index in 0..<count {
        defaults.set(.integer(Int64(index)), forKey: "count")
        do { try defaults.synchronize() } catch { fail("\(error)") }
        usleep(50_000)  // a measurement's pacing, not synchronisation
    }
    say("done")

case "remove":
    // remove <dir> <suite> <key>: removes one key and synchronizes.
    let defaults = open(1)
    guard arguments.count == 4 else { fail("remove <dir> <suite> <key>") }
    defaults.removeObject(forKey: arguments[3])
    do { try defaults.synchronize() } catch { fail("\(error)") }
    say("done")

case "file-size-limit":
    // file-size-limit <dir> <suite>: with a 64 KB file-size limit (ulimit -f), a flush of a larger
    // suite must throw, keep the old file and the values; after the limit is lifted it must succeed.
    let defaults = open(1)
    signal(SIGXFSZ, SIG_IGN)  // report EFBIG instead of being killed
    defaults.set("small", forKey: "before")
    do { try defaults.synchronize() } catch { fail("first write: \(error)") }
    var limit = rlimit()
    getrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &limit)
    let original = limit
    limit.rlim_cur = 64 * 1024
    setrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &limit)
    defaults.set(String(repeating: "z", count: 200_000), forKey: "big")
    do {
        try defaults.synchronize()
        say("limited: written")
    } catch let error as DefaultsError {
        say("limited: threw \(error.code)")
        say("message: \(error.message)")
    } catch {
        say("limited: threw \(error)")
    }
    say("in memory: \(defaults.string(forKey: "big")?.count ?? 0)")
    var restored = original
    setrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &restored)
    do {
        try defaults.synchronize()
        say("unlimited: written")
    } catch {
        say("unlimited: threw \(error)")
    }

case "open-reporting":
    // open-reporting <dir> <suite>…: opens each suite, sets "k" and synchronizes; prints every report.
    guard arguments.count >= 3 else { fail("open-reporting <dir> <suite>…") }
    DefaultsErrorReporting.setHandler { error in say("reported \(error.code) \(error.path ?? "-")") }
    for suite in arguments[2...] {
        do {
            let defaults = try Defaults(
                suiteName: suite, directory: URL(fileURLWithPath: arguments[1]), watchesFiles: false)
            defaults.set("v", forKey: "k")
            try defaults.synchronize()
        } catch { fail("\(error)") }
    }
    say("done")

case "open-from-handler":
    // open-from-handler <dir> <suite>: a reporting handler that itself opens a suite, while a
    // (corrupt) suite is being opened. Says "opened" unless that deadlocks (exit 3 after 10 s).
    guard arguments.count == 3 else { fail("open-from-handler <dir> <suite>") }
    let directory = URL(fileURLWithPath: arguments[1])
    DefaultsErrorReporting.setHandler { error in
        _ = try? Defaults(suiteName: "com.example.from-handler", directory: directory, watchesFiles: false)
        say("handled \(error.code)")
    }
    let opened = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
        _ = try? Defaults(suiteName: arguments[2], directory: directory, watchesFiles: false)
        opened.signal()
    }
    guard opened.wait(timeout: .now() + 10) == .success else {
        say("deadlocked")
        exit(3)
    }
    say("opened")

case "same-key-writer":
    // same-key-writer <dir> <suite> <name> <count>: after "go" on standard input, sets "shared" to
    // <name>-0 … <name>-<count-1>, synchronizing each; then, for each "expect <value>" line, says
    // whether both this process's observer and its reads end on that value (waiting up to 10 s).
    guard arguments.count == 5, let count = Int(arguments[4]) else {
        fail("same-key-writer <dir> <suite> <name> <count>")
    }
    let defaults: Defaults
    do {
        defaults = try Defaults(suiteName: arguments[2], directory: URL(fileURLWithPath: arguments[1]))
    } catch { fail("\(error)") }
    let observed = Locked<PropertyListValue?>(nil)
    let token = defaults.observe("shared") { change in observed.withLock { $0 = change.newValue } }
    say("ready")
    guard readLine() == "go" else { fail("expected go") }
    for index in 0..<count {
        defaults.set("\(arguments[3])-\(index)", forKey: "shared")
        do { try defaults.synchronize() } catch { fail("\(error)") }
    }
    say("done")
    while let line = readLine(), line.hasPrefix("expect ") {
        let expected = PropertyListValue.string(String(line.dropFirst(7)))
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline,
            observed.withLock({ $0 }) != expected || defaults.propertyList(forKey: "shared") != expected
        {
            usleep(1_000)
        }
        let seen = observed.withLock { $0 }
        say("observer=\(seen?.stringValue ?? "nil") read=\(defaults.string(forKey: "shared") ?? "nil")")
    }
    token.cancel()

case "watch-key":
    // watch-key <dir> <suite> <key> [<descriptors>]: opens <descriptors> descriptors first (to push the
    // watcher's past 1024), then watches the suite; prints every report and every change of <key>.
    guard arguments.count == 4 || arguments.count == 5 else { fail("watch-key <dir> <suite> <key> [<descriptors>]") }
    var held: [Int32] = []
    for _ in 0..<(arguments.count == 5 ? Int(arguments[4]) ?? 0 : 0) {
        let descriptor = Glibc.open("/dev/null", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { fail("open /dev/null: \(errno)") }
        held.append(descriptor)
    }
    DefaultsErrorReporting.setHandler { error in say("reported \(error.code): \(error.message)") }
    let defaults: Defaults
    do {
        defaults = try Defaults(suiteName: arguments[2], directory: URL(fileURLWithPath: arguments[1]))
    } catch { fail("\(error)") }
    let token = defaults.observe(arguments[3]) { change in say("changed \(change.newValue?.description ?? "nil")") }
    say("ready with \(held.count) extra descriptors")
    while let line = readLine(), line != "quit" {}
    token.cancel()

case "watch-fresh-directory":
    // watch-fresh-directory <dir>: once the inotify thread is blocked waiting for events, watches a
    // file in a directory nobody watches yet, writes it 1 ms later and prints "latency <ms>" when a
    // call finds it (or "unseen" after two minutes). Run with LIVEDEFAULTS_WATCHER_IDLE_WAIT stretched
    // (InotifyThread.eventTimeoutSeconds): a thread not woken at once arms the directory only when
    // that wait ends.
    guard arguments.count == 2 else { fail("watch-fresh-directory <dir>") }
    let watcher = FileWatcher.shared
    guard watcher.mode == .inotify else { fail("the shared watcher does not use inotify") }
    // Two directories side by side in <dir>, which is never watched: an event there would wake the thread.
    let (other, fresh) = (arguments[1] + "/other", arguments[1] + "/fresh")
    for directory in [other, fresh] where mkdir(directory, 0o700) != 0 { fail("mkdir \(directory): \(errno)") }
    // A first watch, in place once its call comes: the thread has armed it and goes back to waiting.
    let settled = DispatchSemaphore(value: 0)
    let first = watcher.watch(path: other + "/first.plist") { _ in settled.signal() }
    guard settled.wait(timeout: .now() + 120) == .success else { fail("the first watch got no call") }
    guard waitUntilInotifyThreadWaits(within: 60) else { fail("the inotify thread did not wait for events") }
    let path = fresh + "/suite.plist"
    let found = DispatchSemaphore(value: 0)
    let watch = watcher.watch(path: path) { _ in
        // The file exists only after the write, so a call that finds it came after the write.
        if FileManager.default.fileExists(atPath: path) { found.signal() }
    }
    usleep(1000)  // the scenario under test (a change 1 ms later), not synchronisation
    let written = ContinuousClock.now
    do {
        try Data("one".utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
    } catch { fail("write \(path): \(error)") }
    if found.wait(timeout: .now() + 120) == .success {
        let latency = ContinuousClock.now - written
        say("latency \(latency.components.seconds * 1000 + latency.components.attoseconds / 1_000_000_000_000_000)")
    } else {
        say("unseen")
    }
    watch.cancel()
    first.cancel()

case "open-close-stores":
    // open-close-stores <dir> <count>: opens and closes <count> watched stores, each in its own
    // directory, each with an observation token (every tenth also writes); prints this process's
    // descriptors, threads, resident memory and inotify watches before and after, once settled.
    guard arguments.count == 3, let count = Int(arguments[2]) else { fail("open-close-stores <dir> <count>") }
    func cycle(_ range: Range<Int>) {
        for index in range {
            let directory = URL(fileURLWithPath: arguments[1]).appendingPathComponent("\(index)")
            do {
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                let defaults = try Defaults(suiteName: "com.example.resources", directory: directory)
                let token = defaults.observe("k") { _ in }
                if index % 10 == 0 {
                    defaults.set(index, forKey: "k")
                    try defaults.synchronize()
                }
                token.cancel()
            } catch { fail("\(error)") }
        }
    }
    // The watches the inotify thread keeps for itself: its wake channel and its barrier channel.
    let watcherOwnWatches = 2
    // Warm up (lazy globals, the watcher's threads, dispatch's pool), then measure; two rounds, so
    // that what the second adds shows a leak apart from the allocator's high-water mark.
    cycle(0..<100)
    let before = Resources.settled(toWatches: watcherOwnWatches)
    say("before \(before)")
    let start = Date()
    cycle(100..<(100 + count / 2))
    let middle = Resources.settled(
        toWatches: watcherOwnWatches, descriptors: before.descriptors, threads: before.threads,
        ownThreads: before.ownThreads)
    say("middle \(middle)")
    // The second half in two quarters, measured apart: a store's leak grows both, while a one-off
    // (a dispatch worker's new malloc arena or stack, with the pool following the machine's load)
    // shows in one only.
    cycle((100 + count / 2)..<(100 + count * 3 / 4))
    let late = Resources.settled(
        toWatches: watcherOwnWatches, descriptors: before.descriptors, threads: before.threads,
        ownThreads: before.ownThreads)
    say("late \(late)")
    cycle((100 + count * 3 / 4)..<(100 + count))
    let after = Resources.settled(
        toWatches: watcherOwnWatches, descriptors: before.descriptors, threads: before.threads,
        ownThreads: before.ownThreads)
    say("after \(after)")
    say("took \(Int(Date().timeIntervalSince(start) * 1000)) ms")

case "kept-global-domain":
    // kept-global-domain <dir> <suite>: whether the global domain's store of <dir> is still open
    // once the last `Defaults` that searched it is gone: after one that does not watch, then after
    // one that does (its watch let go, within 30 s).
    let location: SuiteLocation
    do {
        location = try SuiteLocation(suiteName: Defaults.globalDomain, directory: arguments[1])
    } catch { fail("\(error)") }
    do { _ = open(1) }
    say("kept after an unwatched open: \(SuiteStore.isRegistered(location))")
    do {
        _ = try Defaults(suiteName: arguments[2], directory: URL(fileURLWithPath: arguments[1]), watchesFiles: true)
    } catch { fail("\(error)") }
    // A store's last reference can be its watcher's delivery or a flush timer: wait for it to go.
    let deadline = Date().addingTimeInterval(30)
    while SuiteStore.isRegistered(location), Date() < deadline { usleep(1_000) }
    say("kept after a watched open: \(SuiteStore.isRegistered(location))")

default:
    fail("unknown command \(arguments[0])")
}

/// What this process holds, from /proc/self.
struct Resources: CustomStringConvertible {
    var descriptors: Int
    var threads: Int
    /// Threads other than dispatch's worker pool (which grows and shrinks on its own schedule).
    var ownThreads: Int
    var residentBytes: Int
    var inotifyWatches: Int
    /// How long the watcher took to let go of unused directories (-1: not within 30 s).
    var watchesSettledMilliseconds = 0

    var description: String {
        "descriptors=\(descriptors) threads=\(threads) own-threads=\(ownThreads) rss=\(residentBytes) "
            + "watches=\(inotifyWatches) watches-settled-ms=\(watchesSettledMilliseconds)"
    }

    static func now() -> Resources {
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        var watches = 0
        for fd in fds {
            let info = (try? String(contentsOfFile: "/proc/self/fdinfo/\(fd)", encoding: .utf8)) ?? ""
            watches += info.split(separator: "\n").count { $0.hasPrefix("inotify wd:") }
        }
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        let poolThreads = tasks.count { task in
            // Dispatch names its workers after their root queue: "com.apple.root.default-qos", …
            let name = (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) ?? ""
            return name.contains("qos")
        }
        let statm = (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8)) ?? ""
        let pages = statm.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? -1
        return Resources(
            descriptors: fds.count, threads: tasks.count, ownThreads: tasks.count - poolThreads,
            residentBytes: pages * Int(sysconf(Int32(_SC_PAGESIZE))),
            inotifyWatches: watches)
    }

    /// Waits (up to 30 s) until the watcher is down to `watches` watches (it keeps unused directories
    /// watched for a second) and descriptors and threads are down to the given counts, then measures.
    ///
    /// A worker dispatch has just started carries its creator's name until it names itself after
    /// its queue, so for a moment it counts as one of our own threads: `ownThreads` is waited for
    /// too (a thread that really stays is still there after 30 s).
    static func settled(
        toWatches watches: Int, descriptors: Int = .max, threads: Int = .max, ownThreads: Int = .max
    ) -> Resources {
        let start = Date()
        var current = now()
        var watchesSettled: Date?
        while Date() < start.addingTimeInterval(30) {
            if current.inotifyWatches <= watches, watchesSettled == nil { watchesSettled = Date() }
            if watchesSettled != nil, current.descriptors <= descriptors, current.threads <= threads,
                current.ownThreads <= ownThreads
            {
                break
            }
            usleep(20_000)
            current = now()
        }
        current.watchesSettledMilliseconds = watchesSettled.map { Int($0.timeIntervalSince(start) * 1000) } ?? -1
        return current
    }
}

/// Waits until the watcher's inotify thread is blocked waiting for events: in `select` (how
/// libinotifytools waits) or `poll` (how the `KernelInotify` build waits), as
/// `/proc/self/task/*/syscall` shows. No other thread of this process uses either (Dispatch uses
/// epoll, the watcher's dispatcher a futex), and threads are not told apart by name: Foundation
/// does not name them on Linux. Returns `false` when `seconds` pass first.
func waitUntilInotifyThreadWaits(within seconds: Double) -> Bool {
    #if arch(x86_64)
        let selectCalls: Set<Substring> = ["23", "270", "7", "271"]  // select, pselect6, poll, ppoll
    #else
        let selectCalls: Set<Substring> = ["72", "73"]  // pselect6, ppoll
    #endif
    let deadline = Date() + seconds
    while Date() < deadline {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        for task in tasks {
            let call = (try? String(contentsOfFile: "/proc/self/task/\(task)/syscall", encoding: .utf8)) ?? ""
            if let number = call.split(separator: " ").first, selectCalls.contains(number) { return true }
        }
        usleep(1000)
    }
    return false
}
