// A second process for the end-to-end tests: writers, crash victims and Foundation peers.
// Usage: TestHelper <command> <directory> <suite> [arguments…]
import Foundation
import LiveDefaults

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(2)
}

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

func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

switch arguments[0] {
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
    for key in values.keys.sorted() {
        let value = values[key]!
        let text = (try? PropertyListValue(foundationObject: value)).map(String.init(describing:)) ?? "\(value)"
        say("\(key)=\(text)")
    }
    if let url = defaults.url(forKey: "url") { say("url()=\(url.path)") }

case "standard-set":
    // standard-set <key> <value>: writes through Defaults.standard (suite = process name).
    guard arguments.count == 3 else { fail("standard-set <key> <value>") }
    Defaults.standard.set(arguments[2], forKey: arguments[1])
    say(Defaults.standard.suiteName)

case "set-and-exit":
    // set-and-exit <dir> <suite> <key> <value>: sets without synchronize; the exit flush writes it.
    let defaults = open(1)
    guard arguments.count == 5 else { fail("set-and-exit <dir> <suite> <key> <value>") }
    defaults.set(arguments[4], forKey: arguments[3])
    exit(0)

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

default:
    fail("unknown command \(arguments[0])")
}
