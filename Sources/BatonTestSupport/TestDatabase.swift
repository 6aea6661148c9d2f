import BatonPostgres
import Foundation
import LocalPostgres
import Logging
import PostgresNIO

/// A database for a test: a fresh schema, migrated, in the cluster at `BATON_TEST_DATABASE_URL`,
/// or else in a throwaway local cluster started once per test process and stopped at exit.
public struct TestDatabase: Sendable {
    public let configuration: DatabaseConfiguration
    public let pool: DatabasePool
    package let store: Store
    public let logger: Logger
    /// The database URL with this test's schema (`?schema=`), for worker processes.
    public let url: String

    /// Runs `body` with a new schema (in the database at `baseURL`, else the shared one); drops it
    /// afterwards.
    public static func with<T: Sendable>(
        baseURL given: String? = nil, _ body: @Sendable (TestDatabase) async throws -> T
    ) async throws -> T {
        let baseURL: String
        if let given { baseURL = given } else { baseURL = try await Cluster.shared.url() }
        let schema = "t_" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
        let url = baseURL + (baseURL.contains("?") ? "&" : "?") + "schema=\(schema)"
        var logger = Logger(label: "baton.test")
        logger.logLevel =
            ProcessInfo.processInfo.environment["BATON_TEST_LOG_LEVEL"].flatMap { Logger.Level(rawValue: $0) }
            ?? .warning
        var configuration = try DatabaseConfiguration(url: url)
        configuration.maximumConnections = 10
        let pool = DatabasePool(configuration: configuration, logger: logger)
        let database = TestDatabase(
            configuration: configuration, pool: pool, store: Store(pool: pool, logger: logger), logger: logger,
            url: url)
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addImmediateTask {
                await pool.run()
                return nil
            }
            defer { group.cancelAll() }
            try await Migrator(schema: schema, logger: logger).migrate(pool)
            do {
                let result = try await body(database)
                try await pool.perform("DROP SCHEMA \(unescaped: schema) CASCADE", logger: logger)
                return result
            } catch {
                try? await pool.perform("DROP SCHEMA \(unescaped: schema) CASCADE", logger: logger)
                throw error
            }
        }
    }

    /// Rows of a one-column query.
    public func values<T: PostgresDecodable & Sendable>(_ query: PostgresQuery, as type: T.Type) async throws -> [T] {
        try await pool.rows(query, logger: logger).map { try $0.decode(T.self) }
    }

}

extension TestDatabase {
    /// `test_runs`, where the test worker's `record` task logs each attempt (BatonTestWorker).
    public func createRunsTable() async throws {
        try await pool.perform(
            """
            CREATE TABLE \(unescaped: configuration.schema).test_runs (
                job bigint, stage int, attempt int, lane text, pid int,
                started_at timestamptz, ended_at timestamptz, failed boolean, claimed_at timestamptz)
            """)
    }

    /// Runs of `stage` in `test_runs` that started before the run ahead of them in their lane
    /// ended: two stages of one lane at once. Zero is what lanes promise.
    public func laneOverlaps(stage: Int) async throws -> Int {
        try await values(
            """
            SELECT count(*)::int FROM (
                SELECT started_at, lag(ended_at) OVER (PARTITION BY lane ORDER BY started_at) AS previous_end
                FROM \(unescaped: configuration.schema).test_runs WHERE stage = \(stage)) r
            WHERE started_at < previous_end
            """, as: Int.self)[0]
    }
}

public struct TestFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// The process-wide cluster the tests share.
actor Cluster {
    static let shared = Cluster()
    private var starting: Task<LocalPostgres, any Error>?

    func url() async throws -> String {
        if let url = ProcessInfo.processInfo.environment["BATON_TEST_DATABASE_URL"] { return url }
        // One start, however many tests ask at once (the actor is reentrant across the await).
        let starting =
            self.starting
            ?? Task {
                // The whole suite runs at once: about a hundred tests, each with a pool of up to
                // 10 connections, some with worker processes of their own. Sampled every 0.5 s
                // over a full run (2026-11-26) it held up to 248 connections, and twice a run's
                // bursts reached 400, when many pools opened at the same moment.
                let server = try await LocalPostgres.start(
                    LocalPostgres.Options(settings: ["max_connections": "800"], fast: true))
                Cluster.stopAtExit = server
                atexit { Cluster.stopAtExit?.stop() }
                return server
            }
        self.starting = starting
        return try await starting.value.url
    }

    /// Set once before the exit handler is registered, read by it at exit (a C function pointer
    /// cannot capture anything).
    nonisolated(unsafe) static var stopAtExit: LocalPostgres?
}

/// Runs `body` with a private PostgreSQL server started with `options`, then shuts it down,
/// awaited (a shutdown checkpoint must not hold up a thread that runs the tests' tasks), whether
/// `body` threw or not.
public func withLocalPostgres<T>(
    _ options: LocalPostgres.Options = LocalPostgres.Options(), _ body: (LocalPostgres) async throws -> T
) async throws -> T {
    let cluster = try await LocalPostgres.start(options)
    return try await run({ try await body(cluster) }, thenAlways: { await cluster.shutdown() })
}

/// Runs `body` with a PgBouncer in front of `server`, then shuts it down, awaited.
public func withLocalPgBouncer<T>(
    in server: LocalPostgres, mode: LocalPgBouncer.PoolMode, poolSize: Int = 20,
    _ body: (LocalPgBouncer) async throws -> T
) async throws -> T {
    let bouncer = try await LocalPgBouncer.start(in: server, mode: mode, poolSize: poolSize)
    return try await run({ try await body(bouncer) }, thenAlways: { await bouncer.shutdown() })
}
