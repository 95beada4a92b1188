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
}
