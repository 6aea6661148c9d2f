import Baton
import BatonPostgres
import BatonTestSupport
import BatonWorker
import Testing

/// Stages routed to their own queue: a pool of workers that serves it runs them, the rest of the
/// chain runs on the job's queue (issue 20, part 4).
@Suite(.timeLimit(.minutes(3)))
struct StageQueueTests {
    /// Appends the name of the worker that ran it to its input (an array of names).
    static func tasks(_ worker: String) -> TaskRegistry {
        var tasks = TaskRegistry()
        tasks.register(name: "where") { _, input, _ in .array((input.arrayValue ?? []) + [.string(worker)]) }
        return tasks
    }

    static func configuration(_ queue: String) -> WorkerConfiguration {
        var configuration = WorkerConfiguration.test()
        configuration.queues = [queue: 8]
        return configuration
    }

    @Test func aStageWithItsOwnQueueRunsOnTheWorkersServingIt() async throws {
        try await TestDatabase.with { db async throws in
            try await withWorker(db, tasks: Self.tasks("cpu"), configuration: Self.configuration("default")) {
                baton, _ async throws in
                try await withWorker(db, tasks: Self.tasks("gpu"), configuration: Self.configuration("gpu")) {
                    _, _ async throws in
                    let chains: [[StageSpec]] = [
                        [.task("where"), .task("where", queue: "gpu"), .task("where")],
                        // The first stage routed, and a group whose members go their own ways.
                        [.task("where", queue: "gpu"), .group([.task("where", queue: "gpu"), .task("where")])],
                    ]
                    let jobs = try await baton.enqueue(
                        chains.map { NewJob(chain: ChainDefinition(input: [], stages: $0)) })
                    var records: [JobRecord] = []
                    for job in jobs {
                        records.append(try await baton.waitUntilFinished(job.id, timeout: .seconds(30)))
                    }
                    #expect(records[0].state == .completed)
                    #expect(records[0].output == ["cpu", "gpu", "cpu"])
                    #expect(records[0].queue == "default")
                    #expect(records[1].state == .completed)
                    #expect(records[1].output == [["gpu", "gpu"], ["gpu", "cpu"]])
                }
            }
        }
    }

    /// A worker serving only the job's queue hands a routed stage on: it waits, available, in its
    /// own queue until a worker serving that queue comes.
    @Test func aRoutedStageWaitsInItsQueueForAWorkerThatServesIt() async throws {
        try await TestDatabase.with { db async throws in
            try await withWorker(db, tasks: Self.tasks("cpu"), configuration: Self.configuration("default")) {
                baton, _ async throws in
                let job = try await baton.enqueue([
                    NewJob(chain: ChainDefinition(input: [], stages: [.task("where"), .task("where", queue: "gpu")]))
                ])[0]
                try await eventually("the routed stage to wait in its queue") {
                    let record = try await baton.job(job.id)
                    return record.stage == 1 && record.state == .available && record.queue == "gpu"
                }
                let record = try await withWorker(
                    db, tasks: Self.tasks("gpu"), configuration: Self.configuration("gpu")
                ) { _, _ async throws in
                    try await baton.waitUntilFinished(job.id, timeout: .seconds(30))
                }
                #expect(record.output == ["cpu", "gpu"])
                #expect(record.queue == "gpu", "a job's queue is its current stage's")
            }
        }
    }

    /// A worker serving both queues runs the routed stage straight after the one before (a hop).
    /// Back from it to the job's queue the stage is handed on through the queue: the worker does
    /// not know the job's own queue while it runs a routed stage (the database does).
    @Test func aWorkerServingBothQueuesHopsIntoTheRoutedStage() async throws {
        try await TestDatabase.with { db async throws in
            var both = WorkerConfiguration.test()
            both.queues = ["default": 8, "gpu": 8]
            try await withWorker(db, tasks: Self.tasks("both"), configuration: both) { baton, _ async throws in
                let job = try await baton.enqueue([
                    NewJob(
                        chain: ChainDefinition(
                            input: [], stages: [.task("where"), .task("where", queue: "gpu"), .task("where")]))
                ])[0]
                let record = try await baton.waitUntilFinished(job.id, timeout: .seconds(30))
                #expect(record.output == ["both", "both", "both"])
                // Hops: a hop starts the next stage in the transaction that ends the one before, so
                // its start is that transaction's time, to the microsecond; a claim's comes later.
                let started = record.results.map(\.startedAt)
                let finished = record.results.map(\.finishedAt)
                #expect(started[1] == finished[0], "\(record.results)")
                #expect(started[2] != finished[1], "\(record.results)")
                #expect(record.queue == "default")
            }
        }
    }

    /// A worker serving both queues does not hop into a stage whose queue is rate limited as a
    /// whole: the database hands it on, and it starts with a token; stages without one wait.
    @Test func aWorkerHandsOnAStageWhoseQueueIsRateLimited() async throws {
        try await TestDatabase.with { db async throws in
            try await db.store.setRateLimit(RateLimit(key: "queue:gpu", rate: 2, per: .seconds(3600)))
            var both = WorkerConfiguration.test()
            both.queues = ["default": 8, "gpu": 8]
            try await withWorker(db, tasks: Self.tasks("both"), configuration: both) { baton, _ async throws in
                let jobs = try await baton.enqueue(
                    (0..<3).map { _ in
                        NewJob(
                            chain: ChainDefinition(input: [], stages: [.task("where"), .task("where", queue: "gpu")]))
                    })
                try await eventually("two jobs to complete and one to wait for a token") {
                    var records: [JobRecord] = []
                    for job in jobs { records.append(try await baton.job(job.id)) }
                    return records.filter { $0.state == .completed }.count == 2
                        && records.contains { $0.stage == 1 && $0.waitingFor.map(\.kind) == [.rateLimited] }
                }
                for job in jobs {
                    let record = try await baton.job(job.id)
                    guard record.state == .completed else { continue }
                    // Claimed, not hopped into: a hop starts at the instant the stage before ended.
                    #expect(record.results[1].startedAt != record.results[0].finishedAt, "\(record.results)")
                }
                try await db.store.deleteRateLimit("queue:gpu")
                for job in jobs {
                    let record = try await baton.waitUntilFinished(job.id, timeout: .seconds(30))
                    #expect(record.output == ["both", "both"])
                }
            }
        }
    }
}
