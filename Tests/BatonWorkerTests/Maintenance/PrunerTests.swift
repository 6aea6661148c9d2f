import Baton
import BatonPostgres
import BatonTestSupport
import BatonWorker
import Foundation
import Testing

/// Finished jobs go once their retention is over.
@Suite(.timeLimit(.minutes(3)))
struct PrunerTests {
    /// Finished jobs older than the retention go, with their group members; younger ones, and a
    /// finished parent whose members still run, stay.
    @Test func finishedJobsPastTheRetentionArePruned() async throws {
        try await TestDatabase.with { db async throws in
            let schema = db.configuration.schema
            let jobs = try await db.store.enqueue(
                (0..<3).map { _ in NewJob(chain: ChainDefinition(input: 1, stages: [.task("noop")])) })
            let (old, recent, parent) = (jobs[0].id, jobs[1].id, jobs[2].id)
            try await db.pool.execute(
                """
                UPDATE \(unescaped: schema).jobs SET state = 'completed', finished_at = now() - interval '2 days'
                WHERE id IN (\(old), \(parent))
                """)
            try await db.pool.execute(
                "UPDATE \(unescaped: schema).jobs SET state = 'completed', finished_at = now() WHERE id = \(recent)")
            // A member of `parent` still running: the parent is kept until it has finished.
            try await db.pool.execute(
                """
                INSERT INTO \(unescaped: schema).jobs (queue, state, chain, stage_count, parent_id, parent_stage, member_index)
                VALUES ('default', 'running', '[{"task": "noop"}]', 1, \(parent), 0, 0)
                """)
            try await withWorker(db, tasks: testTasks) { _, _ async throws in
                try await eventually("the old job to be pruned") { try await db.store.job(old) == nil }
            }
            #expect(try await db.store.job(recent) != nil)
            #expect(try await db.store.job(parent) != nil)
        }
    }

    /// Each final state keeps its own retention (by default a day for completed jobs, two weeks
    /// for discarded and cancelled ones): two-day-old dead letters stay while two-day-old
    /// successes go.
    @Test func deadLettersAreKeptLongerThanSuccesses() async throws {
        try await TestDatabase.with { db async throws in
            let schema = db.configuration.schema
            let ids = try await db.store.enqueue(
                (0..<5).map { _ in NewJob(chain: ChainDefinition(input: 1, stages: [.task("noop")])) }
            ).map(\.id)
            for (id, state, age) in [
                (ids[0], "completed", "2 days"), (ids[1], "discarded", "2 days"), (ids[2], "cancelled", "2 days"),
                (ids[3], "discarded", "15 days"), (ids[4], "cancelled", "15 days"),
            ] {
                try await db.pool.execute(
                    """
                    UPDATE \(unescaped: schema).jobs
                    SET state = \(unescaped: "'\(state)'"), finished_at = now() - \(unescaped: "interval '\(age)'")
                    WHERE id = \(id)
                    """)
            }
            try await withWorker(db, tasks: testTasks) { _, _ async throws in
                try await eventually("the old jobs to be pruned") {
                    var gone = 0
                    for id in [ids[0], ids[3], ids[4]] where try await db.store.job(id) == nil { gone += 1 }
                    return gone == 3
                }
            }
            #expect(try await db.store.job(ids[1]) != nil, "a discarded job is kept two weeks")
            #expect(try await db.store.job(ids[2]) != nil, "a cancelled job is kept two weeks")
        }
    }

    /// A backlog larger than a batch is pruned batch after batch, resting between them, to the
    /// end; the jobs still within their retention stay.
    @Test func aBacklogIsPrunedInBatchesWithRests() async throws {
        try await TestDatabase.with { db async throws in
            let schema = db.configuration.schema
            try await db.pool.execute(
                """
                INSERT INTO \(unescaped: schema).jobs (queue, state, chain, stage_count, finished_at)
                SELECT 'default', 'completed', '[{"task": "noop"}]', 1,
                       CASE WHEN i <= 12000 THEN now() - interval '2 days' ELSE now() END
                FROM generate_series(1, 12010) AS i
                """)
            let pruned = try await Pruner.prune(.completed, retention: .seconds(86400), store: db.store, restFactor: 1)
            #expect(pruned == 12000)
            #expect(try await db.values("SELECT count(*)::int FROM \(unescaped: schema).jobs", as: Int.self) == [10])
        }
    }
}
