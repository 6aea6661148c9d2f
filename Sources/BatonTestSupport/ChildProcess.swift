import Foundation
import LocalPostgres

#if canImport(Glibc)
    import Glibc
#endif

/// A process the tests start, signal and wait for, with its output in files.
///
/// Spawned with posix_spawn and reaped with waitpid on its own pid: Foundation's `Process` here
/// could miss a child's exit when other children come and go in the same test process.
public final class ChildProcess: @unchecked Sendable {
    // @unchecked: `status` is written only by `poll()`, which callers use from one task at a time.
    public let pid: pid_t
    public let output: URL
    public let errors: URL
    private let inputFile: URL?
    private var status: Int32?

    /// A binary of this package, built beside the running test bundle.
    public static func builtBinary(_ name: String) throws -> URL {
        var candidates = [URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()]
        if let bundle = Bundle.main.executableURL?.deletingLastPathComponent() { candidates.append(bundle) }
        var directory = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { directory.deleteLastPathComponent() }
        candidates.append(directory.appending(path: ".build/debug"))
        for candidate in candidates {
            let binary = candidate.appending(path: name)
            if FileManager.default.isExecutableFile(atPath: binary.path) { return binary }
        }
        throw TestFailure("\(name) not found near \(candidates.map(\.path)); run `swift build` first")
    }

    /// Starts `executable` with this process's environment, changed by `environment` (a nil
    /// value removes the variable), reading `input` (else nothing) on its standard input, in
    /// `directory` (else this process's).
    public init(
        _ executable: URL, _ arguments: [String], environment: [String: String?] = [:], input: String? = nil,
        directory workingDirectory: URL? = nil
    ) throws {
        let directory = FileManager.default.temporaryDirectory
        let name = UUID().uuidString
        output = directory.appending(path: "baton-child-\(name).out")
        errors = directory.appending(path: "baton-child-\(name).err")
        inputFile = try input.map { text in
            let file = directory.appending(path: "baton-child-\(name).in")
            try Data(text.utf8).write(to: file)
            return file
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, inputFile?.path ?? "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, errors.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        // Only the three above: an inherited socket of the test process (a server's listener, a
        // client connection) would stay open in the child and hide its closing from the peer.
        try closeInheritedDescriptors(&actions)
        // Glibc's posix_spawn_file_actions_addchdir_np is not visible to Swift: env(1) changes the
        // directory and then becomes the program (same pid).
        let program = workingDirectory == nil ? executable : URL(fileURLWithPath: "/usr/bin/env")
        let prefix =
            workingDirectory.map { ["/usr/bin/env", "--chdir=\($0.path)", executable.path] } ?? [executable.path]
        let argv = (prefix + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid = pid_t()
        var variables = ProcessInfo.processInfo.environment
        for (name, value) in environment { variables[name] = value }
        let envp = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { envp.forEach { free($0) } }
        let result = withCleanSignals { posix_spawn(&pid, program.path, &actions, $0, argv, envp) }
        guard result == 0 else {
            throw TestFailure("cannot start \(executable.path): \(String(cString: strerror(result)))")
        }
        self.pid = pid
    }

    /// Exit status once the process has ended (128 + signal if killed), nil while it runs.
    public func poll() -> Int32? {
        if let status { return status }
        var raw: Int32 = 0
        guard waitpid(pid, &raw, WNOHANG) == pid else { return nil }
        let code = (raw & 0x7f) == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f)
        status = code
        return code
    }

    public var isRunning: Bool { poll() == nil }

    public func signal(_ signal: Int32) {
        if isRunning { kill(pid, signal) }
    }

    /// Waits for the process to end (up to `timeout`, then kills it and throws); returns its status.
    public func waitForExit(timeout: Duration = .seconds(60)) async throws -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let status = poll() { return status }
            guard ContinuousClock.now < deadline else {
                kill(pid, SIGKILL)
                throw TestFailure("process \(pid) did not exit within \(timeout)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    public var standardOutput: String { (try? String(contentsOf: output, encoding: .utf8)) ?? "" }
    public var standardError: String { (try? String(contentsOf: errors, encoding: .utf8)) ?? "" }

    deinit {
        if poll() == nil {
            kill(pid, SIGKILL)
            var raw: Int32 = 0
            waitpid(pid, &raw, 0)
        }
        try? FileManager.default.removeItem(at: output)
        try? FileManager.default.removeItem(at: errors)
        if let inputFile { try? FileManager.default.removeItem(at: inputFile) }
    }
}
