import Baton
import BatonPostgres
import BatonTestSupport
import BatonWorker
import Foundation
import PostgresNIO
import Synchronization
import Testing

/// Upgrading a database made by the previous release's layout (four numbered files holding tables
/// and functions alike, `Tests/BatonWorkerTests/Fixtures/layout-v4/`, as main had them before
/// functions moved to `migrations/functions/`).
@Suite(.timeLimit(.minutes(3)))
struct UpgradeTests {
    /// Runs every stage it is given and notes, per lane, the order in which stages started.
    static let started = Mutex<[String: [Int]]>([:])

    /// Loaded by the previous layout's functions with jobs of every kind (done, running under a
    /// worker that has since stopped, waiting in lanes behind a running holder, retrying,
    /// scheduled), the database is migrated by this binary; this binary's worker then finishes
    /// every job, each lane's stages in the order they were enqueued, and the dead `claim` is gone.
    @Test func aDatabaseOfThePreviousLayoutIsMigratedAndEveryJobFinishes() async throws {
        try await TestDatabase.with { db async throws in
            let schema = db.configuration.schema
            try await Self.installPreviousLayout(db)
            let run = "upgrade-\(UUID().uuidString)"
            func job(_ input: Int, lane: String? = nil, runAt: Date? = nil) -> NewJob {
                NewJob(
                    chain: ChainDefinition(
                        input: .number(input),
                        stages: [
                            .task(
                                "ordered", args: ["run": .string(run)], lane: lane, retry: .constant(.zero, attempts: 5)
                            )
                        ]),
                    runAt: runAt)
            }
            // Enqueued and moved by the previous layout's functions, as its workers would have.
            var jobs = (0..<20).map { job($0) }
            for lane in 0..<3 { jobs += (0..<5).map { job(lane * 100 + $0, lane: "lane-\(lane)") } }
            jobs.append(job(1000, runAt: Date().addingTimeInterval(2)))
            // (Through `enqueue`, which the previous layout has; not this binary's `enqueue_committed`.)
            let enqueued = try await db.pool.withConnection { [jobs] in try await db.store.enqueue(jobs, on: $0) }
            // Registered as the previous release did (its `workers` has no `lease`).
            try await db.pool.perform(
                """
                INSERT INTO \(unescaped: schema).workers (id, host, pid, queues, tasks)
                VALUES ('old-worker', 'old', 1, '{default}', '{ordered}')
                """)
            // Claimed and failed through the previous layout's own functions, as its workers called them.
            let claimed = try await db.values(
                "SELECT id FROM \(unescaped: schema).claim_waited('default', 6, 'old-worker')", as: Int64.self)
            #expect(!claimed.isEmpty)
            // One claimed stage failed and waits for its retry; the others stay running under a
            // worker that stopped (its heartbeat an hour old).
            let retried = try #require(claimed.first)
            let batch: JSONValue = [
                [
                    "id": .number(JSONNumber(retried)), "stage": 0, "attempt": 1, "kind": "retry",
                    "error": "failed under the old layout", "delay_ms": 500,
                ]
            ]
            _ = try await db.values(
                """
                SELECT event FROM \(unescaped: schema).apply_outcomes(
                    'old-worker', \(batch.jsonText)::jsonb, '{}'::text[], '{}'::int[])
                """, as: String.self)
            try await db.pool.perform(
                "UPDATE \(unescaped: schema).workers SET heartbeat_at = now() - interval '1 hour' WHERE id = 'old-worker'"
            )
            let states = try await db.values(
                "SELECT DISTINCT state::text FROM \(unescaped: schema).jobs ORDER BY 1", as: String.self)
            #expect(states == ["available", "retryable", "running", "scheduled", "waiting"])

            let applied = try await Migrator(schema: schema, logger: db.logger).migrate(db.pool)
            #expect(applied == Migrator.migrations.filter { $0.version >= 5 }.map(\.file))
            #expect(
                try await db.values(
                    """
                    SELECT count(*)::int FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
                    WHERE n.nspname = \(schema) AND p.proname = 'claim'
                    """, as: Int.self) == [0])

            var tasks = TaskRegistry()
            tasks.register(name: "ordered") { args, input, context in
                if args["run"]?.stringValue == run, let lane = context.lane,
                    let value = input.numberValue?.integer(as: Int.self)
                {
                    Self.started.withLock { $0[lane, default: []].append(value) }
                }
                return input
            }
            try await withWorker(db, tasks: tasks) { _, _ async throws in
                try await eventually(timeout: .seconds(60), "every job to complete") {
                    try await db.values(
                        "SELECT count(*)::int FROM \(unescaped: schema).jobs WHERE state = 'completed'", as: Int.self)
                        == [enqueued.count]
                }
            }
            let order = Self.started.withLock { $0 }
            #expect(order.keys.sorted() == ["lane-0", "lane-1", "lane-2"])
            for lane in 0..<3 {
                // A lane's stages start in enqueue order; a stage that ran under the stopped worker
                // and was rescued starts again in its place.
                let seen = order["lane-\(lane)"] ?? []
                var deduplicated: [Int] = []
                for value in seen where deduplicated.last != value { deduplicated.append(value) }
                #expect(deduplicated == (0..<5).map { lane * 100 + $0 }, "lane-\(lane): \(seen)")
            }
        }
    }

    /// Replaces this test's schema with one made by the previous layout's files, recorded as that
    /// release's migrator did.
    static func installPreviousLayout(_ db: TestDatabase) async throws {
        let schema = db.configuration.schema
        var directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        directory.append(path: "Fixtures/layout-v4")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".sql") }
            .sorted()
        #expect(files.count == 4)
        try await db.pool.perform("DROP SCHEMA \(unescaped: schema) CASCADE")
        try await db.pool.perform("CREATE SCHEMA \(unescaped: schema)")
        let sqls = try files.map { try String(contentsOf: directory.appending(path: $0), encoding: .utf8) }
        let migrator = Migrator(schema: schema, logger: db.logger)
        try await db.pool.withTransaction(logger: db.logger) { connection in
            for sql in sqls { try await migrator.execute(sql, on: connection) }
            try await connection.perform(
                """
                CREATE TABLE migrations (
                    version int PRIMARY KEY, file text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())
                """, logger: db.logger)
            try await connection.perform(
                """
                INSERT INTO migrations (version, file)
                SELECT version, file FROM unnest(\(files)::text[]) WITH ORDINALITY AS f(file, version)
                """, logger: db.logger)
        }
    }
}
