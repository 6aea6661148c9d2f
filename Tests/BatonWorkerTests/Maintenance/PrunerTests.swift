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
            try await db.pool.perform(
                """
                UPDATE \(unescaped: schema).jobs SET state = 'completed', finished_at = now() - interval '2 days'
                WHERE id IN (\(old), \(parent))
                """)
            try await db.pool.perform(
                "UPDATE \(unescaped: schema).jobs SET state = 'completed', finished_at = now() WHERE id = \(recent)")
            // A member of `parent` still running: the parent is kept until it has finished.
            try await db.pool.perform(
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
}
