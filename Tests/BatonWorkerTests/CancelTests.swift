import Baton
import BatonTestSupport
import Foundation
import Synchronization
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
                try await db.pool.execute(
                    "UPDATE \(unescaped: db.configuration.schema).jobs SET state = 'cancelled' WHERE id = \(job.id)")
                try await eventually(timeout: .seconds(5), "the stage to stop") {
                    !worker.runningJobs.contains(job.id)
                }
                #expect(try await db.store.job(job.id)?.state == .cancelled)
            }
        }
    }

    /// An attempt starts on the admitting thread at once (`Task.immediate`), so a run stopped
    /// before its attempt begins (a cancel heard while its claim was answered) must not begin it:
    /// the task's body never runs.
    @Test func aRunStoppedBeforeItsAttemptNeverStartsTheTask() async throws {
        try await TestDatabase.with { db async throws in
            let started = Started()
            var registry = TaskRegistry(builtins: false)
            registry.register("touch") { _, input, _ in
                started.set()
                return input
            }
            let executor = Executor(
                registry: registry, workerID: "w",
                progress: ProgressWriter(store: db.store, workerID: "w", logger: db.logger),
                signals: SignalTokens(store: db.store), deadlines: Deadlines(), logger: db.logger)
            var job = Self.claimed(1, since: .now)
            job.chain = [.task("touch")]
            let stopped = RunControl()
            stopped.stop(.cancelled)
            guard case .stopped(.cancelled) = await executor.run(job, control: stopped) else {
                Issue.record("a stopped run was not reported stopped")
                return
            }
            #expect(!started.isSet)
            // The same job, not stopped, runs its task.
            guard case .ended = await executor.run(job, control: RunControl()) else {
                Issue.record("the run did not end")
                return
            }
            #expect(started.isSet)
        }
    }
}

/// Whether a task began, read from the test.
private final class Started: Sendable {
    private let value = Atomic(false)
    func set() { value.store(true, ordering: .relaxed) }
    var isSet: Bool { value.load(ordering: .relaxed) }

    /// From Swift as over HTTP: a job scheduled an hour from now runs at once when retried, and
    /// another is skipped with a reason, which is kept as its last error.
    @Test func aSwiftServiceRetriesAScheduledJobNowAndSkipsAnother() async throws {
        try await TestDatabase.with { db async throws in
            try await withWorker(db, tasks: testTasks) { baton, _ async throws in
                let later = Date().addingTimeInterval(3600)
                let now = try await baton.enqueue(Chain(input: 1).then(Add(n: 2)), runAt: later)
                #expect(try await baton.retry(now.id) == .available)
                #expect(try await now.result() == 3)
                let unwanted = try await baton.enqueue(Chain(input: 1).then(Add(n: 2)), runAt: later)
                #expect(try await baton.skip(unwanted.id, reason: "not wanted"))
                let skipped = try await db.store.job(unwanted.id)
                #expect(skipped?.state == .discarded)
                #expect(skipped?.errors.last?.error == "skipped: not wanted")
                #expect(try await baton.skip(unwanted.id, reason: "twice") == false)
            }
        }
    }
}
