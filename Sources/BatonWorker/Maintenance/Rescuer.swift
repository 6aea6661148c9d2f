import Baton
import BatonPostgres
import Logging
import ServiceLifecycle

/// While this worker holds the maintenance lead: every half lease, the stages of workers that
/// went silent within the last sweep count as failed attempts and are retried; every
/// ``sweepPeriod``, a sweep finds every other running stage no live worker answers for (its worker
/// silent for longer or without a row: retried likewise; claimed for a live worker that never
/// received it: put back, its attempt not counted) and forgets workers silent for an hour.
///
/// Two looks, not one, because of a held xmin horizon: the frequent one reads only the silent
/// workers' own entries of `jobs_running`, the sweep reads all of them, one for every job run
/// since the hold began (docs/storage.md#the-rescuer).
struct Rescuer: Service {
    let store: Store
    let leadership: Leadership
    let lease: Duration
    let waker: Waker
    let failures: FailureReporter
    let logger: Logger

    /// Four leases: a minute with the default lease. A stage put back by the sweep waits a lease
    /// and this long at most; a lost worker's stages, half a lease after its lease ran out.
    var sweepPeriod: Duration { lease * 4 }

    func run() async {
        await withDiscardingTaskGroup { group in
            group.addTask {
                await leadership.repeatWhileLeading(every: lease / 2, "rescuing stages") {
                    try await rescueLost()
                    return nil
                }
            }
            group.addTask {
                await leadership.repeatWhileLeading(every: sweepPeriod, "sweeping for stray stages") {
                    try await sweep()
                    try await store.forgetWorkers(silentFor: .seconds(3600))
                    return nil
                }
            }
        }
    }

    /// Stages whose worker stopped sending heartbeats within the last sweep period count as
    /// failed attempts ("worker lost"); older silences are the sweep's.
    func rescueLost() async throws {
        try await fail(try await store.lostStages(lease: lease, within: sweepPeriod, limit: 1000))
    }

    /// Every running stage no live worker answers for: those of workers silent or gone fail as
    /// lost; those running under a live worker that does not hold them (their claim's answer was
    /// lost with its connection) go back to their queue, their attempt not counted: that worker
    /// never ran them, and would otherwise keep them, and their lane, for ever.
    func sweep() async throws {
        let strays = try await store.strayStages(lease: lease, limit: 1000)
        try await fail(strays.filter(\.lost).map(\.stage))
        let orphans = strays.filter { !$0.lost }.map(\.stage)
        for (workerID, stages) in Dictionary(grouping: orphans, by: \.workerID) {
            let outcomes = stages.map { stage in
                Outcome(jobID: stage.jobID, stage: stage.stage, attempt: stage.attempt, transition: .release)
            }
            let result = try await store.apply(outcomes, worker: workerID)
            logger.warning(
                "put back stages their worker never received",
                metadata: ["holder": "\(workerID)", "jobs": "\(result.applied.sorted().prefix(50))"])
            waker.wake(result.woken)
        }
    }

    /// Fails `lost` stages as attempts of a worker that stopped sending heartbeats.
    private func fail(_ lost: [LostStage]) async throws {
        for (workerID, stages) in Dictionary(grouping: lost, by: \.workerID) {
            let outcomes = stages.map { stage in
                Outcome(
                    jobID: stage.jobID, stage: stage.stage, attempt: stage.attempt,
                    transition: Transition.decide(
                        chain: stage.chain, stage: stage.stage, attempt: stage.attempt,
                        outcome: .failed(
                            error: "worker lost: \(workerID) stopped sending heartbeats", retry: .byPolicy),
                        canHop: { _ in false }, random: Double.random(in: 0..<1)))
            }
            let result = try await store.apply(outcomes, worker: workerID)
            for (stage, outcome) in zip(stages, outcomes) where result.applied.contains(stage.jobID) {
                failures.report(outcome.transition, of: stage)
            }
            logger.warning(
                "rescued stages of a lost worker",
                metadata: ["lost_worker": "\(workerID)", "jobs": "\(result.applied.sorted().prefix(50))"])
            waker.wake(result.woken)
            waker.announceFinished(result.finished)
        }
    }
}
