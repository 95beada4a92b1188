import Foundation
import TestSupport
import Testing

@testable import LiveDefaults

/// What a cold open's cheaper paths still do (docs/performance.md, "What remains in a cold open"):
/// a suite file's path built from its bytes, its name checked in one pass, and a file read whole
/// with the read stopping at the size `fstat` gave.
struct ColdOpenPathTests {
    @Test(arguments: [
        ("/a/b", "com.example.app", "/a/b/com.example.app.plist"),
        ("/a/b//", "x", "/a/b/x.plist"),
        ("/tmp/répertoire", "café.réglages", "/tmp/répertoire/café.réglages.plist"),
        ("/a", "...", "/a/....plist"),
        ("/a", ".hidden", "/a/.hidden.plist"),
    ])
    func aSuiteFilesPathIsItsDirectoryNameAndSuffix(directory: String, name: String, path: String) throws {
        let location = try SuiteLocation(suiteName: name, directory: directory)
        #expect(location.path == path)
        #expect(location.name == name)
    }

    /// A path split at its last "/" from its bytes, as Foundation's path methods would split it.
    @Test(arguments: [
        ("/a/b/com.example.app.plist", "/a/b", "com.example.app.plist"),
        ("/x.plist", "/", "x.plist"),
        ("/tmp/répertoire/café.plist", "/tmp/répertoire", "café.plist"),
        ("no-slash", ".", "no-slash"),
        ("/a/b/", "/a/b", ""),
    ])
    func aPathSplitsAtItsLastSlash(path: String, directory: String, name: String) {
        #expect(SuiteFile.directory(of: path) == directory)
        #expect(SuiteFile.name(of: path) == name)
    }

    /// The journals directory, built in one copy, is the directory, "/.", the name and ".journals"
    /// (a file at the root keeps the "//" the old appends gave it).
    @Test(arguments: [
        ("/a/b/com.example.app.plist", "/a/b/.com.example.app.plist.journals"),
        ("/x.plist", "//.x.plist.journals"),
        ("/tmp/répertoire/café.réglages.plist", "/tmp/répertoire/.café.réglages.plist.journals"),
        ("/a/.hidden.plist", "/a/..hidden.plist.journals"),
    ])
    func aJournalsDirectoryIsBesideItsSuiteFile(path: String, journals: String) {
        #expect(SuiteJournal.directory(forSuiteFile: path) == journals)
    }

    /// Reads `contents` from a file through ``FileOperations/readAll(_:sizeHint:)`` with `sizeHint`.
    private func read(_ contents: Data, sizeHint: Int) throws -> Data {
        let directory = try TemporaryDirectory()
        let path = directory.file("file").path
        try contents.write(to: URL(fileURLWithPath: path))
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        return try SystemFileOperations().readAll(descriptor, sizeHint: sizeHint)
    }

    /// The size `fstat` gave, one short (the file grew after it), zero (as `/proc`'s files say) and
    /// more than there is (the file shrank): every byte is read each time.
    @Test(arguments: [1000, 10, 999, 0, 5000])
    func aFileIsReadWholeWhateverItsSizeSaid(sizeHint: Int) throws {
        let contents = Data((0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        #expect(try read(contents, sizeHint: sizeHint) == contents)
    }

    @Test func anEmptyFileReadsAsNoBytes() throws {
        #expect(try read(Data(), sizeHint: 0).isEmpty)
    }

    /// A directory URL's path for opening a suite is what `URL.path` gives, whether the encoded path
    /// is taken as it is (absolute, nothing to decode) or `path` is asked (a `%`, a base URL).
    @Test(arguments: [
        URL(fileURLWithPath: "/tmp/suites"),
        URL(fileURLWithPath: "/tmp/suites/", isDirectory: true),
        URL(fileURLWithPath: "/tmp/two words/r\u{E9}glages"),
        URL(fileURLWithPath: "/tmp/100%/x"),
        URL(fileURLWithPath: "/"),
        URL(fileURLWithPath: "suites", relativeTo: URL(fileURLWithPath: "/tmp/base/", isDirectory: true)),
        URL(string: "file:///tmp/a%20b/c")!,
        URL(string: "file:///tmp/plain///")!,
    ])
    func aDirectoryURLsPathIsItsPath(url: URL) {
        #expect(url.suiteDirectoryPath == url.path, "\(url.absoluteString)")
    }

    /// The first load opens the suite file without following a link: a suite file that is a link is
    /// still read, and the warning about a directory others can write is about the directory of the
    /// file the link names, not the link's; a plain file's is about its own.
    @Test func theDirectoryWarningFollowsASymlinkedSuiteFile() throws {
        let scratch = try TemporaryDirectory()
        // Two directories others can write: the warning is given once per directory per process.
        let open = scratch.file("open")
        let alsoOpen = scratch.file("also-open")
        let own = scratch.file("own")
        for directory in [open, alsoOpen, own] {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
        }
        #expect(chmod(open.path, 0o777) == 0)
        #expect(chmod(alsoOpen.path, 0o777) == 0)
        #expect(chmod(own.path, 0o700) == 0)
        let target = open.appendingPathComponent("real.plist")
        try PropertyListSerialization.data(fromPropertyList: ["a": 1], format: .xml, options: 0).write(to: target)
        try FileManager.default.createSymbolicLink(
            at: own.appendingPathComponent("linked.plist"), withDestinationURL: target)
        try PropertyListSerialization.data(fromPropertyList: ["b": 2], format: .xml, options: 0)
            .write(to: own.appendingPathComponent("plain.plist"))

        func load(_ name: String, in directory: URL) throws -> SuiteLoad {
            let location = try SuiteLocation(suiteName: name, directory: directory.path)
            return FileBackend(location: location, operations: SystemFileOperations()).load()
        }
        let linked = try load("linked", in: own)
        #expect(linked.error == nil)
        #expect(linked.snapshot.values == ["a": 1])
        #expect(linked.warnings.map(\.code) == [.insecureDirectory])
        #expect(linked.warnings.first?.path == open.path)
        let plain = try load("plain", in: own)
        #expect(plain.snapshot.values == ["b": 2])
        #expect(plain.warnings.isEmpty)
        try FileManager.default.moveItem(at: target, to: alsoOpen.appendingPathComponent("direct.plist"))
        let direct = try load("direct", in: alsoOpen)
        #expect(direct.snapshot.values == ["a": 1])
        #expect(direct.warnings.map(\.code) == [.insecureDirectory])
        #expect(direct.warnings.first?.path == alsoOpen.path)
    }

    /// The directory's `stat` is kept for one open only: a directory made writable by others after
    /// one open is warned about at the next, and within an open its `stat` is made once.
    @Test func theDirectoryIsLookedAtAgainAtEachOpen() throws {
        let scratch = try TemporaryDirectory()
        let directory = scratch.file("suites")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
        #expect(chmod(directory.path, 0o700) == 0)
        let reported = Locked<[DefaultsError]>([])
        let reporting = DefaultsErrorReporting.listen { error in
            if error.code == .insecureDirectory, error.path == directory.path { reported.withLock { $0.append(error) } }
        }
        defer { reporting.cancel() }
        let first = try Defaults(suiteName: "com.example.first", directory: directory, watchesFiles: false)
        #expect(reported.withLock { $0 }.isEmpty)
        #expect(OpenDirectoryMemo.current == nil)
        #expect(chmod(directory.path, 0o777) == 0)
        let second = try Defaults(suiteName: "com.example.second", directory: directory, watchesFiles: false)
        #expect(reported.withLock { $0.count } == 1)
        _ = (first, second)

        let memo = try #require(OpenDirectoryMemo.begin())
        #expect(OpenDirectoryMemo.begin() == nil, "an open under way keeps its own memo")
        let before = OpenDirectoryMemo.stat(of: directory.path, using: SystemFileOperations())
        #expect(chmod(directory.path, 0o700) == 0)
        let within = OpenDirectoryMemo.stat(of: directory.path, using: SystemFileOperations())
        memo.end()
        let after = OpenDirectoryMemo.stat(of: directory.path, using: SystemFileOperations())
        #expect(before?.st_mode == within?.st_mode)
        #expect(after.map { $0.st_mode & 0o777 } == 0o700)
        #expect(OpenDirectoryMemo.current == nil)
    }
}
