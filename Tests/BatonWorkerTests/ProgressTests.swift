import Baton
import BatonTestSupport
import Foundation
import Testing

@testable import BatonPostgres
@testable import BatonWorker

/// Imports `pages` pages, saving a checkpoint after each; its first attempt fails after
/// `failAfter` pages. Returns where it resumed and the cursor it resumed with.
struct PagedImport: BatonTask {
    struct Checkpoint: Codable, Sendable {
        var page: Int
        var cursor: JSONNumber
    }
    struct Output: Codable, Sendable, Equatable {
        var resumedAt: Int
        var cursor: JSONNumber?
    }
    struct Boom: Error {}

    var pages: Int
    var failAfter: Int

    func run(_ input: Int, context: StageContext) async throws -> Output {
        let saved = try await context.checkpoint(as: Checkpoint.self)
        var page = saved?.page ?? 0
        while page < pages {
            page += 1
            try context.progress(
                Double(page) / Double(pages), "page \(page) of \(pages)",
                checkpoint: Checkpoint(page: page, cursor: JSONNumber("12345678901234567890.00000\(page)")!))
            if context.attempt == 1, page == failAfter { throw Boom() }
        }
        return Output(resumedAt: saved?.page ?? 0, cursor: saved?.cursor)
    }
}

/// Reports `reports` times as fast as it can, then works on for `holdMs` before returning.
struct Chatty: BatonTask {
    var reports: Int
    var holdMs: Int

    func run(_ input: Int, context: StageContext) async throws -> Int {
        for report in 1...reports { context.progress(Double(report) / Double(reports), "\(report) of \(reports)") }
        try await Task.sleep(for: .milliseconds(holdMs))
        return input
    }
}

@Suite(.timeLimit(.minutes(2)))
struct ProgressTests {
    static var tasks: TaskRegistry {
        var tasks = TaskRegistry()
        tasks.register(PagedImport.self)
        tasks.register(Chatty.self)
        return tasks
    }

    /// The attempt after a failure reads the checkpoint its predecessor saved last (exact numbers
    /// included), so a long import resumes instead of starting over; the job keeps the last report.
    @Test func theNextAttemptResumesFromTheLastCheckpoint() async throws {
        try await TestDatabase.with { db async throws in
            try await withWorker(db, tasks: Self.tasks) { baton, _ async throws in
                let job = try await baton.enqueue(
                    Chain(input: 0).then(PagedImport(pages: 10, failAfter: 3)).retry(.constant(.zero, attempts: 3)))
                let output = try await job.result()
                #expect(output == .init(resumedAt: 3, cursor: JSONNumber("12345678901234567890.000003")))
                let record = try await baton.job(job.id)
                #expect(record.errors.map(\.attempt) == [1])
                let last = try #require(record.progress.first)
                #expect(record.progress.count == 1)
                #expect(last.stage == 0 && last.attempt == 2)
                #expect(last.progress.fraction == 1 && last.progress.message == "page 10 of 10")
                #expect(last.progress.checkpoint?["cursor"] == .number(JSONNumber("12345678901234567890.0000010")!))
            }
        }
    }

    /// Reports cost no statement each: ten thousand in a burst are written once or twice (each
    /// write counted by a trigger), and the latest is what the job shows while the stage runs.
    @Test func reportsAreCoalescedIntoAtMostOneWriteASecond() async throws {
        try await TestDatabase.with { db async throws in
            let schema = db.configuration.schema
            for statement in [
                "CREATE TABLE \(schema).progress_writes (at timestamptz NOT NULL DEFAULT clock_timestamp())",
                """
                CREATE FUNCTION \(schema).count_progress_write() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN INSERT INTO \(schema).progress_writes DEFAULT VALUES; RETURN NULL; END $$
                """,
                """
                CREATE TRIGGER counted AFTER INSERT OR UPDATE ON \(schema).job_progress
                    FOR EACH ROW EXECUTE FUNCTION \(schema).count_progress_write()
                """,
            ] {
                try await db.pool.execute("\(unescaped: statement)")
            }
            try await withWorker(db, tasks: Self.tasks) { baton, _ async throws in
                let started = ContinuousClock.now
                let job = try await baton.enqueue(Chain(input: 1).then(Chatty(reports: 10_000, holdMs: 1_500)))
                try await eventually("the last report to be shown while the stage runs") {
                    let record = try await baton.job(job.id)
                    return record.progress.first?.progress.message == "10000 of 10000" && record.state == .running
                }
                #expect(try await job.result() == 1)
                let elapsed = ContinuousClock.now - started
                let rows = try await db.pool.read(
                    "SELECT count(*)::int FROM \(unescaped: schema).progress_writes", logger: db.logger)
                let writes = try #require(try rows.first?.decode(Int.self))
                // One a second at most, and one more as the attempt ends.
                #expect(writes >= 1 && writes <= Int(elapsed.components.seconds) + 2, "\(writes) writes in \(elapsed)")
            }
        }
    }

    /// Only the attempt that runs writes its progress: a report of a job no longer running there
    /// (a worker that lost its lease, a job cancelled meanwhile) changes nothing.
    @Test func onlyTheRunningAttemptWritesItsProgress() async throws {
        try await TestDatabase.with { db async throws in
            let job = try await db.store.enqueue([
                NewJob(chain: ChainDefinition(input: 1, stages: [.task("noop")]))
            ])[0]
            let report = Store.ProgressReport(
                jobID: job.id, stage: 0, attempt: 1, progress: StageProgress(fraction: 0.5, checkpoint: ["page": 5]))
            try await db.store.recordProgress([report], worker: "nobody")
            #expect(try await db.store.job(job.id)?.progress == [])
            #expect(try await db.store.checkpoint(job: job.id, stage: 0) == nil)
        }
    }

    /// A task's own tests read the checkpoint they give and the progress it reported.
    @Test func aTestContextHandsOverACheckpointAndKeepsWhatWasReported() async throws {
        let context = StageContext(testingJob: 3, attempt: 2, checkpoint: ["page": 7, "cursor": 1])
        let output = try await PagedImport(pages: 8, failAfter: 1).run(0, context: context)
        #expect(output.resumedAt == 7)
        #expect(context.reportedProgress?.message == "page 8 of 8")
        #expect(context.reportedProgress?.checkpoint?["page"] == 8)
        #expect(throws: BatonError.checkpointTooLarge(bytes: StageProgress.checkpointLimit + 3)) {
            try context.progress(nil, checkpoint: String(repeating: "x", count: StageProgress.checkpointLimit + 1))
        }
    }
}
