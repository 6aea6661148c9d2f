import Baton
import BatonTestSupport
import Testing

@testable import BatonPostgres
@testable import BatonWorker

/// Stages whose worker is gone, or never received them, are not lost.
@Suite(.timeLimit(.minutes(3)))
struct RescuerTests {
    /// A stage whose worker stopped sending heartbeats counts as a failed attempt ("worker lost")
    /// and is retried; a stage of a worker still beating is left alone.
    @Test func aStageOfAWorkerThatStoppedBeatingIsRetried() async throws {
        try await TestDatabase.with { db async throws in
            let schema = db.configuration.schema
            let jobs = try await db.store.enqueue(
                ["lost", "alive"].map { NewJob(chain: ChainDefinition(input: 1, stages: [.task("noop")]), queue: $0) })
            for worker in ["lost", "alive"] {
                try await db.store.registerWorker(id: worker, host: "h", pid: 1, queues: [worker], tasks: ["noop"])
                #expect(try await db.store.claim(queue: worker, limit: 1, worker: worker).count == 1)
            }
            try await db.pool.execute(
                "UPDATE \(unescaped: schema).workers SET heartbeat_at = now() - interval '20 seconds' WHERE id = 'lost'"
            )
            try await rescuer(db).rescueLost()
            let lost = try #require(try await db.store.job(jobs[0].id))
            #expect([.retryable, .available].contains(lost.state))
            #expect(lost.errors.map(\.error) == ["worker lost: lost stopped sending heartbeats"])
            #expect(try await db.store.job(jobs[1].id)?.state == .running)
        }
    }

    /// The sweep finds what the frequent look leaves: a stage of a worker silent for longer than
    /// the sweep period, and one whose worker has no row (forgotten, or never registered); both
    /// count as failed attempts.
    @Test func theSweepRetriesStagesOfWorkersLongSilentOrGone() async throws {
        try await TestDatabase.with { db async throws in
            let schema = db.configuration.schema
            let jobs = try await db.store.enqueue(
                ["silent", "gone"].map { NewJob(chain: ChainDefinition(input: 1, stages: [.task("noop")]), queue: $0) })
            try await db.store.registerWorker(id: "silent", host: "h", pid: 1, queues: ["silent"], tasks: ["noop"])
            for worker in ["silent", "gone"] {
                #expect(try await db.store.claim(queue: worker, limit: 1, worker: worker).count == 1)
            }
            try await db.pool.execute(
                "UPDATE \(unescaped: schema).workers SET heartbeat_at = now() - interval '1 hour' WHERE id = 'silent'")
            let rescuer = rescuer(db)
            try await rescuer.rescueLost()
            #expect(try await db.store.job(jobs[0].id)?.state == .running, "silent for longer than a sweep period")
            try await rescuer.sweep()
            for (job, worker) in zip(jobs, ["silent", "gone"]) {
                let rescued = try #require(try await db.store.job(job.id))
                #expect([.retryable, .available].contains(rescued.state))
                #expect(rescued.errors.map(\.error) == ["worker lost: \(worker) stopped sending heartbeats"])
            }
        }
    }

    /// A stage claimed for a live worker that never received it (the claim's answer lost) is put
    /// back after a lease, its attempt not counted, and then runs.
    @Test func aStageALiveWorkerNeverReceivedIsPutBackAndRuns() async throws {
        try await TestDatabase.with { db async throws in
            try await withWorker(db, tasks: testTasks, configuration: .test(lease: .seconds(2))) {
                _, worker async throws in
                let id = try await db.store.enqueue([
                    NewJob(chain: ChainDefinition(input: 1, stages: [.task("Add", args: ["n": 2])]), queue: "elsewhere")
                ])[0].id
                // Claimed in the worker's name from here: the worker never hears of it.
                let claimed = try await db.store.claim(queue: "elsewhere", limit: 1, worker: worker.id)
                #expect(claimed.map(\.id) == [id])
                try await db.pool.execute(
                    "UPDATE \(unescaped: db.configuration.schema).jobs SET queue = 'default' WHERE id = \(id)")
                try await eventually("the stage to be put back and run") {
                    try await db.store.job(id)?.state == .completed
                }
                let job = try #require(try await db.store.job(id))
                #expect(job.output == 3)
                #expect(job.results.map(\.attempts) == [1], "the put-back attempt does not count")
                #expect(job.errors.isEmpty)
            }
        }
    }

    private func rescuer(_ db: TestDatabase) -> Rescuer {
        Rescuer(
            store: db.store,
            leadership: Leadership(store: db.store, workerID: "r", interval: .milliseconds(20), logger: db.logger),
            lease: .seconds(10), waker: Waker(store: db.store, logger: db.logger),
            failures: FailureReporter(reporting: FailureReporting(), logger: db.logger), logger: db.logger)
    }
}
