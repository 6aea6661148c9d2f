import Baton
import BatonPostgres
import Logging
import ServiceLifecycle

/// Every half lease, while this worker holds the maintenance lead: stages of workers that stopped
/// sending heartbeats count as failed attempts and are retried; stages a live worker never
/// received go back to their queue; workers silent for an hour are forgotten.
struct Rescuer: Service {
    let store: Store
    let leadership: Leadership
    let lease: Duration
    let waker: Waker
    let failures: FailureReporter
    let logger: Logger

    func run() async {
        await leadership.repeatWhileLeading(every: lease / 2, "rescuing stages") {
            try await rescueLost()
            try await releaseOrphans()
            try await store.forgetWorkers(silentFor: .seconds(3600))
            return nil
        }
    }

    /// Stages whose worker stopped sending heartbeats count as failed attempts ("worker lost").
    func rescueLost() async throws {
        let lost = try await store.lostStages(lease: lease, limit: 1000)
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

    /// Stages running under a live worker that does not hold them (their claim's answer was lost
    /// with its connection) go back to their queue, their attempt not counted: that worker never
    /// ran them, and would otherwise keep them, and their lane, for ever.
    func releaseOrphans() async throws {
        let orphans = try await store.orphanedStages(lease: lease, limit: 1000)
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
}
