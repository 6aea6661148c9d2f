import Foundation
import LocalPostgres
import Subprocess
import Synchronization
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// A process the tests start, signal and wait for, with its output in files. Run by
/// swift-subprocess, which waits for this child's own exit (by its pidfd) and starts it with
/// none of this process's descriptors beyond the three given: an inherited socket of the test
/// process (a server's listener, a client connection) would stay open in the child and hide its
/// closing from the peer.
public final class ChildProcess: Sendable {
    public let pid: pid_t
    public let output: URL
    public let errors: URL
    private let inputFile: URL?
    /// The run, which ends with the process: its exit status (128 + signal if killed).
    private let run: Task<Int32, any Error>
    private let exit: ExitStatus

    /// The exit status once known.
    private final class ExitStatus: Sendable {
        let value = Mutex<Int32?>(nil)
    }

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
    /// `directory` (else this process's); returns once it runs.
    public init(
        _ executable: URL, _ arguments: [String], environment: [String: String?] = [:], input: String? = nil,
        directory workingDirectory: URL? = nil
    ) async throws {
        let directory = FileManager.default.temporaryDirectory
        let name = UUID().uuidString
        let output = directory.appending(path: "baton-child-\(name).out")
        let errors = directory.appending(path: "baton-child-\(name).err")
        let inputFile = try input.map { text in
            let file = directory.appending(path: "baton-child-\(name).in")
            try Data(text.utf8).write(to: file)
            return file
        }
        func open(_ file: URL, _ mode: FileDescriptor.AccessMode) throws -> FileDescriptor {
            try FileDescriptor.open(
                FilePath(file.path), mode, options: mode == .readOnly ? [] : [.create, .truncate],
                permissions: [.ownerReadWrite, .groupRead, .otherRead])
        }
        let (standardOutput, standardError) = (try open(output, .writeOnly), try open(errors, .writeOnly))
        let standardInput = try open(inputFile ?? URL(fileURLWithPath: "/dev/null"), .readOnly)
        let configuration = Configuration(
            executable: .path(FilePath(executable.path)), arguments: Arguments(arguments),
            environment: .inherit.updating(
                Dictionary(uniqueKeysWithValues: environment.map { (Environment.Key(stringLiteral: $0.key), $0.value) })
            ),
            workingDirectory: workingDirectory.map { FilePath($0.path) })
        let exit = ExitStatus()
        let (started, starting) = AsyncStream.makeStream(of: pid_t.self)
        run = Task {
            defer { starting.finish() }
            let outcome = try await Subprocess.run(
                configuration,
                input: .fileDescriptor(standardInput, closeAfterSpawningProcess: true),
                output: .fileDescriptor(standardOutput, closeAfterSpawningProcess: true),
                error: .fileDescriptor(standardError, closeAfterSpawningProcess: true)
            ) { execution in
                starting.yield(execution.processIdentifier.value)
            }
            let status = outcome.terminationStatus.exitCode
            exit.value.withLock { $0 = status }
            return status
        }
        var iterator = started.makeAsyncIterator()
        guard let pid = await iterator.next() else {
            _ = try await run.value
            throw TestFailure("\(executable.path) did not start")
        }
        (self.pid, self.output, self.errors, self.inputFile, self.exit) = (pid, output, errors, inputFile, exit)
    }

    /// Exit status once the process has ended (128 + signal if killed), nil while it runs.
    public func poll() -> Int32? { exit.value.withLock { $0 } }

    public var isRunning: Bool { poll() == nil }

    public func signal(_ signal: Int32) {
        if isRunning { kill(pid, signal) }
    }

    /// Waits for the process to end (up to `timeout`, then kills it and throws); returns its status.
    public func waitForExit(timeout: Duration = .seconds(60)) async throws -> Int32 {
        let status = try await withThrowingTaskGroup(of: Int32?.self) { group in
            group.addTask { try await self.run.value }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            return try await group.next() ?? nil
        }
        guard let status else {
            kill(pid, SIGKILL)
            throw TestFailure("process \(pid) did not exit within \(timeout)")
        }
        return status
    }

    public var standardOutput: String { (try? String(contentsOf: output, encoding: .utf8)) ?? "" }
    public var standardError: String { (try? String(contentsOf: errors, encoding: .utf8)) ?? "" }

    deinit {
        if isRunning { kill(pid, SIGKILL) }
        try? FileManager.default.removeItem(at: output)
        try? FileManager.default.removeItem(at: errors)
        if let inputFile { try? FileManager.default.removeItem(at: inputFile) }
    }
}
