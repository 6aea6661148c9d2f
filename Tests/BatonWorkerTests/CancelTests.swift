import Baton
import BatonTestSupport
import Testing

@testable import BatonPostgres
@testable import BatonWorker

/// Cancels reach the stage they are about, whenever their notice arrives.
@Suite struct CancelTests {
    static func claimed(_ id: Int64, since: ContinuousClock.Instant) -> ClaimedJob {
        var job = ClaimedJob(
            id: id, queue: "default", stage: 0, attempt: 1, chain: [], input: "1", earlier: [], metadata: [:],
            groupOutput: nil)
        job.claimedSince = since
        return job
    }

    /// The claim that brings a job here can commit before a cancel and be answered after the
    /// cancel's notice: the job is stopped as it arrives. A cancel heard before the claim was sent
    /// (of an earlier run, since retried) does not touch it; a job running here is stopped at once.
    @Test func aCancelHeardWhileTheClaimIsAnsweredStopsTheJob() {
        let intake = Intake(capacities: ["default": 4])
        let asked = ContinuousClock.now
        intake.cancel(7)
        #expect(intake.admit(Self.claimed(7, since: asked)).stopReason == .cancelled)

        intake.cancel(8)
        #expect(intake.admit(Self.claimed(8, since: .now)).stopReason == nil)

        let running = intake.admit(Self.claimed(9, since: .now))
        #expect(running.stopReason == nil)
        intake.cancel(9)
        #expect(running.stopReason == .cancelled)
    }

    /// A cancel whose notice never reached the worker (its LISTEN connection was down) still stops
    /// the stage: the next heartbeat finds the job cancelled.
    @Test func aCancelWhoseNoticeWasLostStopsTheStageAtTheNextHeartbeat() async throws {
        try await TestDatabase.with { db async throws in
            try await withWorker(db, tasks: TaskRegistry()) { baton, worker async throws in
                let job = try await baton.enqueue([
                    NewJob(chain: ChainDefinition(input: 1, stages: [.task("sleep", args: ["ms": 60_000])]))
                ])[0]
                try await eventually("the stage to start") { worker.runningJobs.contains(job.id) }
                // Cancelled as `cancel` does it, without its NOTIFY.
                try await db.pool.perform(
                    "UPDATE \(unescaped: db.configuration.schema).jobs SET state = 'cancelled' WHERE id = \(job.id)")
                try await eventually(timeout: .seconds(5), "the stage to stop") {
                    !worker.runningJobs.contains(job.id)
                }
                #expect(try await db.store.job(job.id)?.state == .cancelled)
            }
        }
    }
}
