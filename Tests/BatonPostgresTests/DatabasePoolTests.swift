import BatonPostgres
import BatonTestSupport
import Foundation
import LocalPostgres
import Logging
import PostgresNIO
import Testing

/// `DatabasePool` against a PostgreSQL that goes away and comes back, next to the PostgresNIO
/// behaviour it works around.
@Suite struct DatabasePoolTests {
    static var logger: Logger {
        var logger = Logger(label: "baton.test.pool")
        logger.logLevel = .critical
        return logger
    }

    /// With the database stopped, PostgresNIO's own pool keeps a statement waiting (3 s and
    /// counting), where `DatabasePool` says after its patience (a second) that the database is away;
    /// once it is back, the pool serves again within two seconds.
    @Test func theDatabaseAwayIsSaidAtOnceWhereAPostgresClientWaits() async throws {
        try await withLocalPostgres(LocalPostgres.Options(fast: true)) { cluster in
            let configuration = try DatabaseConfiguration(url: cluster.url)
            let client = PostgresClient(
                configuration: .init(
                    host: "127.0.0.1", port: cluster.port, username: "postgres", password: nil, database: "postgres",
                    tls: .disable),
                backgroundLogger: Self.logger)
            let pool = DatabasePool(configuration: configuration, logger: Self.logger)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addImmediateTask { await client.run() }
                group.addImmediateTask { await pool.run() }
                defer { group.cancelAll() }
                _ = try await client.query("SELECT 1", logger: Self.logger)
                try await pool.execute("SELECT 1")

                try await cluster.stopServer(mode: "fast")
                // A statement may first go to a connection the client has not yet seen closed, and
                // fail at once; the one after it waits for a new connection.
                var outcome = Outcome.failed
                for _ in 1...3 where outcome == .failed {
                    outcome = await ending(within: .seconds(3)) {
                        _ = try await client.query("SELECT 1", logger: Self.logger)
                    }
                }
                #expect(
                    outcome == .waiting,
                    "PostgresNIO's pool answered during the outage (\(outcome)): it no longer needs working around")

                let asked = ContinuousClock.now
                await #expect(throws: DatabaseUnavailable.self) { try await pool.execute("SELECT 1") }
                // ``DatabasePool/patience`` (1 s), then a probe whose connection is refused at
                // once: about a second. The bound leaves room for a loaded two-core machine (3.2 s
                // was seen in a full run), and is still well short of a wait without end.
                #expect(asked.duration(to: .now) < .seconds(5))
                #expect(pool.isDatabaseAway)

                try await cluster.startServer()
                let back = ContinuousClock.now
                do {
                    try await eventually("the pool to serve again") { (try? await pool.execute("SELECT 1")) != nil }
                } catch {
                    let log = cluster.socketDirectory.deletingLastPathComponent().appending(path: "server.log")
                    Issue.record("server log: \((try? String(contentsOf: log, encoding: .utf8)) ?? "none")")
                    throw error
                }
                #expect(back.duration(to: .now) < .seconds(2.5))
            }
        }
    }

    /// Every connection busy is not an outage: a statement waits past the pool's patience for
    /// one to come back, and gets it.
    @Test func aBusyPoolIsWaitedFor() async throws {
        try await withLocalPostgres(LocalPostgres.Options(fast: true)) { cluster in
            var configuration = try DatabaseConfiguration(url: cluster.url)
            configuration.maximumConnections = 1
            let pool = DatabasePool(configuration: configuration, logger: Self.logger)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addImmediateTask { await pool.run() }
                defer { group.cancelAll() }
                try await pool.execute("SELECT 1")
                let held = WakeUp()
                async let holding: Void = pool.withConnection { connection in
                    held.signal()
                    try await connection.execute("SELECT pg_sleep(2)", logger: Self.logger)
                }
                await held.wait()
                let asked = ContinuousClock.now
                let rows = try await pool.execute("SELECT 42", logger: Self.logger)
                #expect(try rows.first?.decode(Int.self) == 42)
                #expect(asked.duration(to: .now) > DatabasePool.patience)
                #expect(!pool.isDatabaseAway)
                try await holding
            }
        }
    }

    enum Outcome { case succeeded, failed, waiting }

    /// How `body` ends within `limit`. If it has not ended it is cancelled, but not waited for: a
    /// statement waiting in PostgresNIO's pool need not end when cancelled, and this test must not
    /// hang on it.
    func ending(within limit: Duration, _ body: @escaping @Sendable () async throws -> Void) async -> Outcome {
        let (ended, end) = AsyncStream.makeStream(of: Outcome.self)
        let running = Task {
            do {
                try await body()
                end.yield(.succeeded)
            } catch {
                end.yield(.failed)
            }
            end.finish()
        }
        let timer = Task {
            try? await Task.sleep(for: limit)
            end.yield(.waiting)
            end.finish()
        }
        var iterator = ended.makeAsyncIterator()
        let outcome = await iterator.next() ?? .waiting
        running.cancel()
        timer.cancel()
        return outcome
    }
}
