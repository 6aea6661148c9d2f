import BatonTestSupport
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A `BatonTestWorker` process: a real worker in a process of its own, to kill and to signal.
final class WorkerProcess: @unchecked Sendable {
    // @unchecked: `Process` is not Sendable; this wrapper only reads `processIdentifier` and
    // sends signals after `run()`, and waits once.
    let process = Process()

    init(url: String, queue: String = "default:8", lease: Duration = .seconds(2), grace: Duration = .seconds(5)) throws
    {
        process.executableURL = try Self.binary()
        process.arguments = [
            url, queue, "\(lease.components.seconds * 1000 + lease.components.attoseconds / 1_000_000_000_000_000)",
            "\(grace.components.seconds * 1000)",
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }

    var pid: Int32 { process.processIdentifier }

    func signal(_ signal: Int32) { kill(pid, signal) }

    /// Waits for the process to exit (up to `timeout`); returns its status.
    func waitForExit(timeout: Duration = .seconds(60)) async throws -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning {
            guard ContinuousClock.now < deadline else {
                throw TestFailure("worker \(pid) did not exit within \(timeout)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        return process.terminationStatus
    }

    deinit {
        if process.isRunning { kill(pid, SIGKILL) }
    }

    /// The test worker binary beside this test bundle.
    static func binary() throws -> URL { try builtBinary("BatonTestWorker") }

    /// A binary of this package, built beside this test bundle.
    static func builtBinary(_ name: String) throws -> URL {
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
}
