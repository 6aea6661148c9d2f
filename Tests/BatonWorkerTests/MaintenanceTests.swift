import Baton
import BatonPostgres
import BatonTestSupport
import BatonWorker
import Foundation
import Testing

/// The cluster chores one worker at a time does: the lead, pruning, putting back stages a live
/// worker never received.
@Suite(.timeLimit(.minutes(3)))
struct MaintenanceTests {
    /// One worker holds the maintenance lead at a time; it renews it; another takes it once it
    /// has run out (a holder that stopped).
    @Test func theLeadIsHeldByOneWorkerAndTakenOverWhenItLapses() async throws {
        try await TestDatabase.with { db async throws in
            let store = db.store
            #expect(try await store.lead("maintenance", worker: "a", lease: .seconds(60)))
            #expect(try await !store.lead("maintenance", worker: "b", lease: .seconds(60)))
            #expect(try await store.lead("maintenance", worker: "a", lease: .seconds(60)), "renewed by its holder")
            try await db.pool.perform(
                """
                UPDATE \(unescaped: db.configuration.schema).leaders SET expires_at = now() - interval '1 second'
                WHERE name = 'maintenance'
                """)
            #expect(try await store.lead("maintenance", worker: "b", lease: .seconds(60)), "taken over once lapsed")
            #expect(try await !store.lead("maintenance", worker: "a", lease: .seconds(60)))
        }
    }

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
                try await db.eventually("the old job to be pruned") { try await db.store.job(old) == nil }
            }
            #expect(try await db.store.job(recent) != nil)
            #expect(try await db.store.job(parent) != nil)
        }
    }

    /// A stage claimed for a live worker that never received it (the claim's answer lost) is put
    /// back after a lease, its attempt not counted, and then runs.
    @Test func aStageALiveWorkerNeverReceivedIsPutBackAndRuns() async throws {
        try await TestDatabase.with { db async throws in
            try await withWorker(db, tasks: testTasks) { _, worker async throws in
                let id = try await db.store.enqueue([
                    NewJob(chain: ChainDefinition(input: 1, stages: [.task("Add", args: ["n": 2])]), queue: "elsewhere")
                ])[0].id
                // Claimed in the worker's name from here: the worker never hears of it.
                let claimed = try await db.store.claim(queue: "elsewhere", limit: 1, worker: worker.id)
                #expect(claimed.map(\.id) == [id])
                try await db.pool.perform(
                    "UPDATE \(unescaped: db.configuration.schema).jobs SET queue = 'default' WHERE id = \(id)")
                try await db.eventually("the stage to be put back and run") {
                    try await db.store.job(id)?.state == .completed
                }
                let job = try #require(try await db.store.job(id))
                #expect(job.output == 3)
                #expect(job.results.map(\.attempts) == [1], "the put-back attempt does not count")
                #expect(job.errors.isEmpty)
            }
        }
    }
}
