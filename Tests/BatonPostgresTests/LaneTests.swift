import Baton
import BatonPostgres
import BatonTestSupport
import Foundation
import PostgresNIO
import Testing

/// Lanes as the database enforces them, without a worker.
@Suite(.timeLimit(.minutes(3)))
struct LaneTests {
    func laned(_ lane: String, _ input: Int) -> NewJob {
        NewJob(chain: ChainDefinition(input: .number(input), stages: [.task("t", lane: lane)]))
    }

    func states(_ db: TestDatabase, _ ids: [Int64]) async throws -> [JobState] {
        var states: [JobState] = []
        for id in ids { states.append(try #require(try await db.store.job(id)).state) }
        return states
    }

    @Test func oneJobHoldsALaneAndTheRestWaitInOrder() async throws {
        try await TestDatabase.with { db async throws in
            let ids = try await db.store.enqueue((0..<4).map { laned("a", $0) }).map(\.id)
            let other = try await db.store.enqueue([laned("b", 9)])[0].id
            #expect(try await states(db, ids + [other]) == [.available, .waiting, .waiting, .waiting, .available])

            // Complete the holder: the oldest waiting job takes the lane.
            let claimed = try await db.store.claim(queue: "default", limit: 10, worker: "w")
            #expect(Set(claimed.map(\.id)) == [ids[0], other])
            _ = try await db.store.apply(
                [Outcome(jobID: ids[0], stage: 0, attempt: 1, transition: .complete(output: "0"))], worker: "w")
            #expect(try await states(db, ids) == [.completed, .available, .waiting, .waiting])
        }
    }

    @Test func aRetryingHolderKeepsItsLaneAndADiscardReleasesIt() async throws {
        try await TestDatabase.with { db async throws in
            let ids = try await db.store.enqueue((0..<3).map { laned("a", $0) }).map(\.id)
            _ = try await db.store.claim(queue: "default", limit: 10, worker: "w")
            _ = try await db.store.apply(
                [Outcome(jobID: ids[0], stage: 0, attempt: 1, transition: .retry(error: "e", delay: .zero))],
                worker: "w")
            #expect(try await states(db, ids) == [.retryable, .waiting, .waiting])
            _ = try await db.store.promoteDue(limit: 10)
            #expect(try await states(db, ids) == [.available, .waiting, .waiting])
            _ = try await db.store.claim(queue: "default", limit: 10, worker: "w")
            _ = try await db.store.apply(
                [Outcome(jobID: ids[0], stage: 0, attempt: 2, transition: .discard(error: "e"))], worker: "w")
            #expect(try await states(db, ids) == [.discarded, .available, .waiting])
        }
    }

    @Test func cancellingTheHolderOrAWaiterKeepsTheLaneMoving() async throws {
        try await TestDatabase.with { db async throws in
            let ids = try await db.store.enqueue((0..<3).map { laned("a", $0) }).map(\.id)
            try await db.store.cancel(ids[1])
            #expect(try await states(db, ids) == [.available, .cancelled, .waiting])
            _ = try await db.store.claim(queue: "default", limit: 10, worker: "w")
            try await db.store.cancel(ids[0])
            #expect(try await states(db, ids) == [.cancelled, .cancelled, .available])
            #expect(try await db.store.cancel(ids[0]).isEmpty)
            await #expect(throws: BatonError.jobNotFound(999_999)) { try await db.store.cancel(999_999) }
        }
    }

    @Test func aStageEnteringALaneQueuesBehindTheJobsAlreadyThere() async throws {
        try await TestDatabase.with { db async throws in
            let chain = ChainDefinition(stages: [.task("render"), .task("deliver", lane: "a")])
            let first = try await db.store.enqueue([NewJob(chain: chain)])[0].id
            let holder = try await db.store.enqueue([laned("a", 1)])[0].id
            let claimed = try await db.store.claim(queue: "default", limit: 10, worker: "w")
            #expect(Set(claimed.map(\.id)) == [first, holder])
            _ = try await db.store.apply(
                [Outcome(jobID: first, stage: 0, attempt: 1, transition: .advance(output: "1", lane: "a"))], worker: "w"
            )
            #expect(try await states(db, [holder, first]) == [.running, .waiting])
            _ = try await db.store.apply(
                [Outcome(jobID: holder, stage: 0, attempt: 1, transition: .complete(output: "1"))], worker: "w")
            #expect(try await states(db, [holder, first]) == [.completed, .available])
        }
    }

    @Test func theSchemaItselfRefusesASecondHolder() async throws {
        try await TestDatabase.with { db async throws in
            let ids = try await db.store.enqueue((0..<2).map { laned("a", $0) }).map(\.id)
            // A buggy writer that skips the lane functions still cannot make two holders.
            await #expect(throws: PSQLError.self) {
                try await db.pool.perform(
                    "UPDATE \(unescaped: db.configuration.schema).jobs SET state = 'available' WHERE id = \(ids[1])")
            }
        }
    }

    @Test func concurrentTransitionsOnManyLanesKeepOneHolderEach() async throws {
        try await TestDatabase.with { db async throws in
            let jobs = (0..<200).map { laned("lane-\($0 % 10)", $0) }
            for slice in stride(from: 0, to: 200, by: 20) {
                _ = try await db.store.enqueue(Array(jobs[slice..<slice + 20]))
            }
            // Four "workers" claim and complete until everything is done.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for worker in 0..<4 {
                    group.addTask {
                        var idle = 0
                        while idle < 50 {
                            let claimed = try await db.store.claim(queue: "default", limit: 5, worker: "w\(worker)")
                            if claimed.isEmpty {
                                idle += 1
                                try await Task.sleep(for: .milliseconds(5))
                                continue
                            }
                            idle = 0
                            _ = try await db.store.apply(
                                claimed.map {
                                    Outcome(
                                        jobID: $0.id, stage: 0, attempt: $0.attempt,
                                        transition: .complete(output: $0.input))
                                }, worker: "w\(worker)")
                        }
                    }
                }
                try await group.waitForAll()
            }
            let schema = db.configuration.schema
            #expect(
                try await db.values(
                    "SELECT count(*)::int FROM \(unescaped: schema).jobs WHERE state = 'completed'", as: Int.self) == [
                        200
                    ])
            // FIFO per lane: completion order follows enqueue order.
            let disorder = try await db.values(
                """
                SELECT count(*)::int FROM (
                    SELECT id, lag(id) OVER (PARTITION BY lane ORDER BY finished_at, id) AS previous
                    FROM \(unescaped: schema).jobs) x
                WHERE previous > id
                """, as: Int.self)
            #expect(disorder == [0])
        }
    }
}
