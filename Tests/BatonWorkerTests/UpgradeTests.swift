import Baton
import BatonPostgres
import BatonTestSupport
import BatonWorker
import Foundation
import PostgresNIO
import Synchronization
import Testing

/// Upgrading a database that starts from the first release's schema (`migrations/0019_schema.sql`)
/// while it holds work: what a `baton migrate` of the next release does to a cluster in use.
@Suite(.timeLimit(.minutes(3)))
struct UpgradeTests {
    /// Runs every stage it is given and notes, per lane, the order in which stages started.
    static let started = Mutex<[String: [Int]]>([:])

    /// A database at the first release's schema, loaded with jobs of every kind (done, running under
    /// a worker that has since stopped, waiting in lanes behind a running holder, retrying,
    /// scheduled), is migrated again, as the next release's binary would (every function replaced,
    /// whatever numbered files follow applied, in one transaction); a worker then finishes every
    /// job, each lane's stages in the order they were enqueued.
    ///
    /// The work is loaded through today's store, and the schema is then taken back to version 19's
    /// shape (``backToVersion19(_:)``): the jobs' rows are the same in both, only what later files
    /// add differs, and the test checks that shape against a schema made by 0019_schema.sql alone.
    @Test func aDatabaseHoldingWorkIsMigratedAndEveryJobFinishes() async throws {
        try await TestDatabase.with { db async throws in
            let schema = db.configuration.schema
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
            var jobs = (0..<20).map { job($0) }
            for lane in 0..<3 { jobs += (0..<5).map { job(lane * 100 + $0, lane: "lane-\(lane)") } }
            jobs.append(job(1000, runAt: Date().addingTimeInterval(2)))
            let enqueued = try await db.store.enqueue(jobs)
            // A worker that stopped an hour ago, holding what it claimed; one of its stages failed
            // and waits for its retry.
            try await db.pool.execute(
                """
                INSERT INTO \(unescaped: schema).workers (id, host, pid, queues, tasks)
                VALUES ('old-worker', 'old', 1, '{default}', '{ordered}')
                """)
            let claimed = try await db.store.claim(queue: "default", limit: 6, worker: "old-worker")
            let retried = try #require(claimed.first)
            _ = try await db.store.apply(
                [
                    Outcome(
                        jobID: retried.id, stage: retried.stage, attempt: retried.attempt,
                        transition: .retry(error: StageError("failed before the upgrade"), delay: .milliseconds(500)))
                ], worker: "old-worker")
            try await db.pool.execute(
                "UPDATE \(unescaped: schema).workers SET heartbeat_at = now() - interval '1 hour' WHERE id = 'old-worker'"
            )
            let states = try await db.values(
                "SELECT DISTINCT state::text FROM \(unescaped: schema).jobs ORDER BY 1", as: String.self)
            #expect(states == ["available", "retryable", "running", "scheduled", "waiting"])

            try await Self.backToVersion19(db)
            #expect(try await Migrator(schema: schema, logger: db.logger).currentVersion(db.pool) == 19)
            let applied = try await Migrator(schema: schema, logger: db.logger).migrate(db.pool)
            #expect(applied == Migrator.migrations.filter { $0.version > 19 }.map(\.file))
            // Every job stored before is found by its args (0023_job_tags.sql).
            let found = try await db.store.jobs(JobFilter(args: ["run": run], limit: 100)).jobs.map(\.id)
            #expect(Set(found) == Set(enqueued.map(\.id)))

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

    /// Undoes what the files after 0019_schema.sql did to `db`'s schema (its functions stay: the
    /// migration replaces them all), and checks its tables, indexes and triggers against a schema
    /// made by 0019_schema.sql alone.
    static func backToVersion19(_ db: TestDatabase) async throws {
        let schema = db.configuration.schema
        // 0028_fair_share.sql (its ready columns and indexes go with the table, below)
        try await db.pool.execute("DROP TABLE \(unescaped: schema).fair_queues")
        try await db.pool.execute("ALTER TABLE \(unescaped: schema).jobs DROP COLUMN fair_key, DROP COLUMN fair_weight")
        try await db.pool.execute(
            "ALTER TABLE \(unescaped: schema).schedules DROP COLUMN fair_key, DROP COLUMN fair_weight")
        try await db.pool.execute("ALTER TABLE \(unescaped: schema).queue_minutes DROP COLUMN fair_starts")
        // 0027_map_failures.sql (its map_elements column goes with the table)
        try await db.pool.execute("ALTER TABLE \(unescaped: schema).jobs DROP COLUMN failed")
        // 0026_map_elements.sql
        try await db.pool.execute("DROP TABLE \(unescaped: schema).map_elements")
        // 0025_chain_features.sql
        try await db.pool.execute("ALTER TABLE \(unescaped: schema).jobs DROP COLUMN features")
        try await db.pool.execute("ALTER TABLE \(unescaped: schema).workers DROP COLUMN features")
        // 0024_top_level_counts.sql
        try await db.pool.execute("DROP INDEX \(unescaped: schema).jobs_state_id")
        try await db.pool.execute(
            "CREATE INDEX jobs_state_id ON \(unescaped: schema).jobs (state, id, queue) WHERE state <> 'completed'")
        // 0023_job_tags.sql
        try await db.pool.execute("DROP TABLE \(unescaped: schema).job_tags")
        // 0022_rate_tokens.sql
        try await db.pool.execute("DROP TABLE \(unescaped: schema).rate_tokens")
        // 0021_lane_holds.sql
        try await db.pool.execute("DROP TABLE \(unescaped: schema).lane_holds")
        try await db.pool.execute(
            """
            CREATE UNIQUE INDEX jobs_lane_head ON \(unescaped: schema).jobs (lane, lane_slot)
            WHERE lane IS NOT NULL AND state IN ('available', 'running', 'retryable')
            """)
        // 0020_ready.sql
        try await db.pool.execute("DROP TRIGGER jobs_ready_inserted ON \(unescaped: schema).jobs")
        try await db.pool.execute("DROP TRIGGER jobs_ready_updated ON \(unescaped: schema).jobs")
        try await db.pool.execute("DROP TABLE \(unescaped: schema).ready")
        try await db.pool.execute(
            "DROP FUNCTION \(unescaped: schema).ready_inserted, \(unescaped: schema).ready_updated")
        try await db.pool.execute(
            """
            CREATE INDEX jobs_available ON \(unescaped: schema).jobs (queue, rate_key, priority, run_at, id)
            WHERE state = 'available'
            """)
        try await db.pool.execute("DELETE FROM \(unescaped: schema).migrations WHERE version > 19")
        let reference = "version19_\(UInt32.random(in: 0...UInt32.max))"
        try await db.pool.execute("CREATE SCHEMA \(unescaped: reference)")
        let baseline = try #require(Migrator.migrations.first { $0.version == 19 })
        try await db.pool.withTransaction { connection in
            try await Migrator(schema: reference, logger: db.logger).execute(baseline.sql, on: connection)
        }
        func shape(_ name: String) async throws -> [String] {
            try await db.values(
                """
                SELECT c.relkind::text || ' ' || c.relname FROM pg_class c
                WHERE c.relnamespace = \(name)::regnamespace AND c.relname <> 'migrations'
                  AND c.relname NOT LIKE 'migrations_%'
                UNION ALL
                SELECT 'trigger ' || t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
                WHERE c.relnamespace = \(name)::regnamespace AND NOT t.tgisinternal
                ORDER BY 1
                """, as: String.self)
        }
        #expect(try await shape(schema) == shape(reference))
        try await db.pool.execute("DROP SCHEMA \(unescaped: reference) CASCADE")
    }

    /// A schema a development build left below the first release's version is refused, saying what
    /// to do, and nothing is applied over it.
    @Test func aSchemaFromBeforeTheFirstReleaseIsRefused() async throws {
        try await TestDatabase.with { db async throws in
            let schema = "predates_\(UInt32.random(in: 0...UInt32.max))"
            try await db.pool.execute("CREATE SCHEMA \(unescaped: schema)")
            try await db.pool.execute(
                """
                CREATE TABLE \(unescaped: schema).migrations (
                    version int PRIMARY KEY, file text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())
                """)
            try await db.pool.execute(
                "INSERT INTO \(unescaped: schema).migrations (version, file) VALUES (18, '0018_lane_floors.sql')")
            await #expect {
                try await Migrator(schema: schema, logger: db.logger).migrate(db.pool)
            } throws: { error in
                "\(error)".contains("reached version 18") && "\(error)".contains("0019_schema.sql")
            }
            #expect(
                try await db.values(
                    "SELECT count(*)::int FROM pg_tables WHERE schemaname = \(schema)", as: Int.self) == [1])
            try await db.pool.execute("DROP SCHEMA \(unescaped: schema) CASCADE")
        }
    }
}
