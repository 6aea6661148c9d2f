import BatonPostgres
import Foundation
import LocalPostgres
import Logging
import PostgresNIO

/// A database for a test: a copy of a migrated template, in the cluster at
/// `BATON_TEST_DATABASE_URL`, or else in a throwaway local cluster started once per test process
/// and stopped at exit.
///
/// A copy, not a schema migrated per test: the suite runs some 250 of them at once, and
/// migrations take one lock for the whole cluster (``Migrator/migrate(on:)``): one at a time, on
/// two loaded cores, the last waited long for its turn (docs/benchmarks.md#the-test-suites-start).
/// A copy (`CREATE DATABASE … TEMPLATE`) makes no schema change and waits for none.
public struct TestDatabase: Sendable {
    public let configuration: DatabaseConfiguration
    public let pool: DatabasePool
    package let store: Store
    public let logger: Logger
    /// The database URL of this test's database and schema (`?schema=`), for worker processes.
    public let url: String
    /// The cluster's URL (its superuser, its `postgres` database).
    public let baseURL: String

    /// The schema Baton's tables are in, in every test's database.
    public static let schema = "baton"

    /// Runs `body` with a new database (in the cluster at `baseURL`, else the shared one); drops
    /// it afterwards. Its pool logs to `logger` when given.
    public static func with<T: Sendable>(
        baseURL given: String? = nil, logger captured: Logger? = nil, _ body: @Sendable (TestDatabase) async throws -> T
    ) async throws -> T {
        let baseURL: String
        if let given { baseURL = given } else { baseURL = try await Cluster.shared.url() }
        var logger = Logger(label: "baton.test")
        logger.logLevel =
            ProcessInfo.processInfo.environment["BATON_TEST_LOG_LEVEL"].flatMap { Logger.Level(rawValue: $0) }
            ?? .warning
        if let captured { logger = captured }
        let template = try await Templates.shared.template(in: baseURL, logger: logger)
        let name = "t_" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
        try await Templates.shared.copy(template, to: name, in: baseURL, logger: logger)
        let url = try Templates.url(baseURL, database: name, schema: schema)
        var configuration = try DatabaseConfiguration(url: url)
        configuration.maximumConnections = 10
        let pool = DatabasePool(configuration: configuration, logger: logger)
        let database = TestDatabase(
            configuration: configuration, pool: pool, store: Store(pool: pool, logger: logger), logger: logger,
            url: url, baseURL: baseURL)
        return try await run(
            {
                try await withThrowingTaskGroup(of: T?.self) { group in
                    group.addImmediateTask {
                        await pool.run()
                        return nil
                    }
                    defer { group.cancelAll() }
                    do {
                        return try await body(database)
                    } catch let error where error is StoreError || error is PSQLError {
                        // What the server said (a `PSQLError`'s own description hides it).
                        throw TestFailure(DatabaseConfiguration.describe(error))
                    }
                }
            },
            thenAlways: {
                // FORCE: a worker process a failed test left running must not keep the database.
                try await Templates.administer(baseURL, logger: logger) { connection in
                    _ = try await connection.execute("DROP DATABASE \(unescaped: name) WITH (FORCE)", logger: logger)
                }
            })
    }

    /// Runs `body` on a connection of its own to the cluster's `postgres` database, as its
    /// superuser: for what only an administrator does (making this test's database read-only,
    /// refusing its connections, terminating its sessions).
    @discardableResult
    public func administer<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await Templates.administer(baseURL, logger: logger, body)
    }

    /// Rows of a one-column query.
    public func values<T: PostgresDecodable & Sendable>(_ query: PostgresQuery, as type: T.Type) async throws -> [T] {
        try await pool.execute(query, logger: logger).map { try $0.decode(T.self) }
    }

}

extension TestDatabase {
    /// `test_runs`, where the test worker's `record` task logs each attempt (BatonTestWorker).
    public func createRunsTable() async throws {
        try await pool.execute(
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

/// The migrated databases tests copy, one per cluster: `baton_template_` and a digest of the
/// migrations, so that a cluster named by `BATON_TEST_DATABASE_URL` keeps one per version of the
/// schema across runs (drop them with the rest when done).
actor Templates {
    static let shared = Templates()
    private var made: [String: Task<String, any Error>] = [:]

    private var copying = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []
    /// How many copies are made at once. The whole suite starts at once: some 250 copies at once
    /// stalled new connections of every test on two cores. In turns, they are soon done, and the
    /// tests start in turn. (Copied through the WAL, PostgreSQL 15's default, a copy takes no
    /// checkpoint, and is quicker than with `STRATEGY FILE_COPY`;
    /// docs/benchmarks.md#the-test-suites-start.)
    private static let copiesAtOnce = 4

    /// Makes database `name` a copy of `template`, in turn.
    func copy(_ template: String, to name: String, in baseURL: String, logger: Logger) async throws {
        if copying < Self.copiesAtOnce {
            copying += 1
        } else {
            await withCheckedContinuation { waiting.append($0) }
        }
        // The turn passes to the next in line, or ends.
        defer { if waiting.isEmpty { copying -= 1 } else { waiting.removeFirst().resume() } }
        try await Self.administer(baseURL, logger: logger) { connection in
            try await connection.execute(
                "CREATE DATABASE \(unescaped: name) TEMPLATE \(unescaped: template)", logger: logger)
        }
    }

    /// The template in the cluster at `baseURL`, made on first need.
    func template(in baseURL: String, logger: Logger) async throws -> String {
        let making = made[baseURL] ?? Task { try await Self.make(in: baseURL, logger: logger) }
        made[baseURL] = making
        return try await making.value
    }

    /// Made under a name of its own, then renamed: whoever renames first wins, and no one copies a
    /// template that is still being migrated (a copy needs it without connections).
    private static func make(in baseURL: String, logger: Logger) async throws -> String {
        let name = "baton_template_" + digest(Migrator.migrations.map(\.sql) + Migrator.functions.map(\.1))
        let exists = try await administer(baseURL, logger: logger) { connection in
            try await !connection.read("SELECT 1 FROM pg_database WHERE datname = \(name)", logger: logger).isEmpty
        }
        if exists { return name }
        let draft = name + "_" + String(UInt32.random(in: 0...UInt32.max), radix: 36)
        try await administer(baseURL, logger: logger) { connection in
            try await connection.execute("CREATE DATABASE \(unescaped: draft)", logger: logger)
        }
        try await administer(url(baseURL, database: draft, schema: TestDatabase.schema), logger: logger) { connection in
            try await Migrator(schema: TestDatabase.schema, logger: logger).migrate(on: connection)
        }
        try await administer(baseURL, logger: logger) { connection in
            try await connection.execute(
                "ALTER DATABASE \(unescaped: draft) WITH ALLOW_CONNECTIONS false IS_TEMPLATE true", logger: logger)
            do {
                try await connection.execute(
                    "ALTER DATABASE \(unescaped: draft) RENAME TO \(unescaped: name)", logger: logger)
            } catch let error as StoreError where error.sqlState == "42P04" {
                // Another test process made it meanwhile.
                try await connection.execute("ALTER DATABASE \(unescaped: draft) IS_TEMPLATE false", logger: logger)
                try await connection.execute("DROP DATABASE \(unescaped: draft)", logger: logger)
            }
        }
        return name
    }

    /// Runs `body` on a connection of its own to the database of `baseURL` (or any URL).
    @discardableResult
    static func administer<T: Sendable>(
        _ baseURL: String, logger: Logger, _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        let configuration = try DatabaseConfiguration(url: baseURL)
        do {
            let connection = try await configuration.connect(logger: logger)
            return try await run({ try await body(connection) }, thenAlways: { try? await connection.close() })
        } catch let error where error is StoreError || error is PSQLError {
            // What the server said (a `PSQLError`'s own description hides it).
            throw TestFailure("\(configuration.displayAddress): \(DatabaseConfiguration.describe(error))")
        }
    }

    /// `baseURL` naming `database` and `schema`. Cut by hand rather than by `URLComponents`,
    /// which takes no URL of several hosts (`postgres://u@h1:5432,h2:5433/postgres`).
    static func url(_ baseURL: String, database: String, schema: String) throws -> String {
        guard let scheme = baseURL.range(of: "://") else { throw TestFailure("not a URL: \(baseURL)") }
        var rest = baseURL[scheme.upperBound...]
        var query = ""
        if let mark = rest.firstIndex(of: "?") {
            query = String(rest[rest.index(after: mark)...])
            rest = rest[..<mark]
        }
        if let slash = rest.firstIndex(of: "/") { rest = rest[..<slash] }
        let parameters = (query.isEmpty ? [] : [query]) + ["schema=\(schema)"]
        return baseURL[..<scheme.upperBound] + rest + "/\(database)?" + parameters.joined(separator: "&")
    }

    /// FNV-1a, 64 bits, of `texts`, in hex: a name that changes when the migrations do.
    private static func digest(_ texts: [String]) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in texts.joined(separator: "\u{0}").utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
        }
        return String(hash, radix: 16)
    }
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
                // 10 connections, some with worker processes of their own. When many pools open
                // at the same moment, a run's bursts go far above the connections it usually holds
                // (docs/benchmarks.md#the-test-suites-start).
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

/// Runs `body` with a streaming standby of `primary` (``LocalPostgres/startStandby(name:options:)``),
/// then shuts it down, awaited.
public func withStandby<T>(
    of primary: LocalPostgres, name: String = "standby", _ body: (LocalPostgres) async throws -> T
) async throws -> T {
    let standby = try await primary.startStandby(name: name)
    return try await run({ try await body(standby) }, thenAlways: { await standby.shutdown() })
}

/// Runs `body` with a PgBouncer in front of `server`, then shuts it down, awaited.
public func withLocalPgBouncer<T>(
    in server: LocalPostgres, mode: LocalPgBouncer.PoolMode, poolSize: Int = 20,
    _ body: (LocalPgBouncer) async throws -> T
) async throws -> T {
    let bouncer = try await LocalPgBouncer.start(in: server, mode: mode, poolSize: poolSize)
    return try await run({ try await body(bouncer) }, thenAlways: { await bouncer.shutdown() })
}
