import BatonTestSupport
import Testing

@testable import BatonPostgres
@testable import BatonWorker

/// Cancels reach the stage they are about, whenever their notice arrives.
@Suite struct CancelTests {
    static func claimed(_ id: Int64, since: ContinuousClock.Instant) -> ClaimedJob {
        var job = ClaimedJob(
            id: id, queue: "default", stage: 0, attempt: 1, chain: [], input: "1", earlierOutputs: [], metadata: [:],
            groupOutput: nil)
        job.claimedSince = since
        return job
    }

    /// The claim that brings a job here can commit before a cancel and be answered after the
    /// cancel's notice: the job is stopped as it arrives. A cancel heard before the claim was sent
    /// (of an earlier run, since retried) does not touch it; a job running here is stopped at once.
    @Test func aCancelHeardWhileTheClaimIsAnsweredStopsTheJob() async throws {
        try await TestDatabase.with { db async throws in
            let worker = Worker(pool: db.pool, tasks: TaskRegistry(), logger: db.logger)
            let asked = ContinuousClock.now
            worker.heard(.cancel(jobID: 7))
            #expect(worker.admit(Self.claimed(7, since: asked)).stopReason == .cancelled)

            worker.heard(.cancel(jobID: 8))
            #expect(worker.admit(Self.claimed(8, since: .now)).stopReason == nil)

            let running = worker.admit(Self.claimed(9, since: .now))
            #expect(running.stopReason == nil)
            worker.heard(.cancel(jobID: 9))
            #expect(running.stopReason == .cancelled)
        }
    }
}
