import Baton
import Foundation

/// Where `baton dev` answers and the token it made, left in `.baton/dev.json` (mode 0600) while it
/// runs, so that admin commands run from the same directory reach it without `BATON_URL` and
/// `BATON_TOKEN`. Those, and `--url`/`--token`, still win.
struct DevSession: Codable, Equatable {
    var url: String
    var token: String?

    static let file = ".baton/dev.json"

    /// The session of a `baton dev` started in this directory, if one is running.
    static func read() -> DevSession? {
        guard let data = FileManager.default.contents(atPath: file) else { return nil }
        return try? JSONValue(parsing: data).decode(as: DevSession.self)
    }

    /// Writes the file, readable by its owner only (it holds a token).
    func write() throws {
        let url = URL(fileURLWithPath: Self.file)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        let written = FileManager.default.createFile(
            atPath: url.path, contents: Data(try JSONValue(encoding: self).jsonText.utf8),
            attributes: [.posixPermissions: 0o600])
        guard written else { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: url.path]) }
    }

    /// Removes the file if it is still this session's (another `baton dev` may have started since).
    func remove() {
        guard Self.read() == self else { return }
        try? FileManager.default.removeItem(atPath: Self.file)
    }
}
