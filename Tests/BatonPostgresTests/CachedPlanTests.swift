import BatonPostgres
import BatonTestSupport
import Testing

/// A plan PostgreSQL caches for a worker's connection while `jobs` is nearly empty (a worker
/// started on a new database, then a burst) stays good as the table grows: the statistics it was
/// made with are not looked at again until `ANALYZE`, which autovacuum runs a minute later at best.
@Suite(.timeLimit(.minutes(2)))
struct CachedPlanTests {
    /// One connection flushes a few outcomes while the table holds 1,000 jobs (the plan of the
    /// outcomes' update is cached then), and later 3,000 at once. The update must meet the batch's
    /// rows without a nested loop over the batch: that plan (the table's primary key scanned as the
    /// outer side, one row estimated, every outcome compared with every row) took 3.3 s for a flush
    /// of 3,000 in `baton bench --mode steady`; its shape appears here on the second flush.
    @Test func theOutcomesUpdateStaysLinearAsTheTableGrows() async throws {
        try await TestDatabase.with { db async throws in
            let job = #"'{"queue": "default", "priority": 0, "chain": [{"task": "noop"}], "input": 1}'::jsonb"#
            let enqueue = { (count: Int) in
                "SELECT count(*) FROM enqueue((SELECT jsonb_agg(\(job)) FROM generate_series(1, \(count))))"
            }
            let flush = """
                SELECT count(*) FROM apply_outcomes_for('w', (SELECT jsonb_agg(jsonb_build_object('id', id, \
                'stage', 0, 'attempt', 1, 'kind', 'complete')) FROM jobs WHERE state = 'running'), '{default}', \
                '{10}', NULL)
                """
            let plans = try await AutoExplain.plans(
                in: db,
                [
                    enqueue(1_000), "SELECT count(*) FROM claim_for('default', 20, 'w', NULL)", flush,
                    enqueue(3_000), "SELECT count(*) FROM claim_for('default', 3000, 'w', NULL)", flush,
                ])
            let updates = plans.filter { AutoExplain.query(of: $0).hasPrefix("WITH b AS (") }
            try #require(updates.count == 2, "the outcomes' update was not shown twice: \(plans)")
            for plan in updates { #expect(!plan.contains("Nested Loop"), "\(plan)") }
            #expect(
                try await db.values(
                    "SELECT count(*)::int FROM \(unescaped: TestDatabase.schema).jobs WHERE state = 'completed'",
                    as: Int.self) == [3_020])
        }
    }
}
