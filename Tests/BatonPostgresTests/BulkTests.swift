import Baton
import BatonPostgres
import BatonTestSupport
import Foundation
import Testing

/// Bulk retry, cancel and delete by filter, in batches, in the store.
@Suite(.timeLimit(.minutes(2)))
struct BulkTests {
    /// Enqueues `count` jobs in `queue` (in `lane`, if given) and sets them to `state`, as a
    /// finished or failed run would have left them.
    static func jobs(
        _ db: TestDatabase, _ count: Int, queue: String = "default", lane: String? = nil, state: JobState,
        error: String? = nil
    ) async throws -> [Int64] {
        let ids = try await db.store.enqueue(
            (0..<count).map { _ in
                NewJob(chain: ChainDefinition(input: 1, stages: [.task("noop", lane: lane)]), queue: queue)
            }
        ).map(\.id)
        let errors = error.map { #"[{"stage": 0, "attempt": 1, "at": "2026-01-01T00:00:00Z", "error": "\#($0)"}]"# }
        try await db.pool.execute(
            """
            UPDATE \(unescaped: db.configuration.schema).jobs
            SET state = \(unescaped: "'\(state.rawValue)'"), finished_at = now(), lane_ready_at = NULL,
                errors = coalesce(\(errors)::jsonb, errors)
            WHERE id = ANY(\(ids))
            """)
        return ids
    }

    func states(_ db: TestDatabase, _ ids: [Int64]) async throws -> [JobState] {
        var states: [JobState] = []
        for id in ids { states.append(try #require(try await db.store.job(id)).state) }
        return states
    }

    /// A dry run counts what a filter matches in the states the action applies to, and changes
    /// nothing; the run itself changes them all, a batch at a time, and nothing else.
    @Test func retryByFilterCountsFirstThenRetriesEveryMatchInBatches() async throws {
        try await TestDatabase.with { db async throws in
            let billing = try await Self.jobs(db, 7, queue: "billing", state: .discarded, error: "HTTP 503")
            let other = try await Self.jobs(db, 2, queue: "billing", state: .discarded, error: "bad input")
            let elsewhere = try await Self.jobs(db, 3, queue: "mail", state: .discarded, error: "HTTP 503")
            let done = try await Self.jobs(db, 2, queue: "billing", state: .completed)
            let filter = JobFilter(queue: "billing", error: "503")

            let dry = try await db.store.bulk(.retry, filter, dryRun: true, batchSize: 3, sampleSize: 4)
            #expect(dry.matched == 7 && dry.changed == 0)
            #expect(dry.sample.map(\.id) == Array(billing.reversed().prefix(4)), "the newest first")
            #expect(try await states(db, billing).allSatisfy { $0 == .discarded })

            let run = try await db.store.bulk(.retry, filter, dryRun: false, batchSize: 3)
            #expect(run.matched == 7 && run.changed == 7)
            #expect(try await states(db, billing).allSatisfy { $0 == .available })
            #expect(try await states(db, other + elsewhere).allSatisfy { $0 == .discarded })
            #expect(try await states(db, done).allSatisfy { $0 == .completed }, "completed jobs are not retried")
        }
    }

    /// Retried in bulk, a lane's failed jobs rejoin it one at a time, in the order they are
    /// retried: one holds the lane, the others wait behind it.
    @Test func bulkRetriedLanedJobsRejoinTheirLane() async throws {
        try await TestDatabase.with { db async throws in
            let laned = try await Self.jobs(db, 5, lane: "acct-1", state: .discarded)
            let run = try await db.store.bulk(.retry, JobFilter(lane: "acct-1"), dryRun: false, batchSize: 2)
            #expect(run.changed == 5)
            let states = try await states(db, laned)
            #expect(states.filter { $0 == .available }.count == 1)
            #expect(states.filter { $0 == .waiting }.count == 4)
        }
    }

    /// Cancel applies to unfinished jobs, delete to finished ones; a filter's states outside the
    /// action's match nothing; ids narrow a filter.
    @Test func cancelAndDeleteTakeTheirOwnStates() async throws {
        try await TestDatabase.with { db async throws in
            let waiting = try await Self.jobs(db, 3, queue: "q", state: .available)
            let finished = try await Self.jobs(db, 2, queue: "q", state: .completed)
            #expect(try await db.store.bulk(.cancel, JobFilter(states: [.completed]), dryRun: true).matched == 0)
            let cancelled = try await db.store.bulk(
                .cancel, JobFilter(queue: "q", ids: [waiting[0], waiting[1]]), dryRun: false)
            #expect(cancelled.changed == 2)
            #expect(try await states(db, waiting) == [.cancelled, .cancelled, .available])
            let deleted = try await db.store.bulk(.delete, JobFilter(queue: "q"), dryRun: false)
            #expect(deleted.matched == 4 && deleted.changed == 4, "two completed, two cancelled")
            for id in finished + waiting.prefix(2) { #expect(try await db.store.job(id) == nil) }
            #expect(try await db.store.job(waiting[2]) != nil)
        }
    }
}
