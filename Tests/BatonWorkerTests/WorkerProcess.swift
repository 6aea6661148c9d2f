import Baton
import BatonTestSupport
import Foundation
import Logging
import PostgresNIO

#if canImport(Glibc)
    import Glibc
#endif

/// A `BatonTestWorker` process: a real worker in a process of its own, to kill and to signal.
final class WorkerProcess: Sendable {
    let child: ChildProcess

    init(
        url: String, queue: String = "default:8", lease: Duration = .seconds(2), grace: Duration = .seconds(5),
        environment: [String: String?] = [:]
    ) async throws {
        child = try await ChildProcess(
            try Self.binary(), [url, queue, "\(lease.milliseconds)", "\(grace.milliseconds)"], environment: environment)
    }

    var pid: Int32 { child.pid }

    func signal(_ signal: Int32) { child.signal(signal) }

    /// Waits for the process to exit (up to `timeout`); returns its status.
    func waitForExit(timeout: Duration = .seconds(60)) async throws -> Int32 {
        try await child.waitForExit(timeout: timeout)
    }

    /// The test worker binary beside this test bundle.
    static func binary() throws -> URL { try ChildProcess.builtBinary("BatonTestWorker") }
}

/// Holds PostgreSQL's advisory lock `key` on a connection of its own until `open()`: a `record`
/// stage given `"gate": key` (BatonTestWorker) runs until then.
final class Gate: Sendable {
    let key = Int64.random(in: 1...Int64.max)
    private let connection: PostgresConnection
    private let logger: Logger

    init(_ db: TestDatabase) async throws {
        logger = db.logger
        connection = try await db.configuration.connect(id: 1, logger: db.logger)
        try await connection.execute("SELECT pg_advisory_lock(\(key))", logger: logger)
    }

    func open() async throws {
        try await connection.execute("SELECT pg_advisory_unlock(\(key))", logger: logger)
        try await connection.close()
    }
}
