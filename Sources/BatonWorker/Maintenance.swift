import Baton
import BatonPostgres
import Logging

/// Cluster chores, done by whichever worker holds the maintenance lead (see `leaders` in the schema):
/// the scheduler (due jobs become available), the rescuer (stages of lost workers are failed and
/// retried) and the pruner (finished jobs past retention are deleted).
struct Maintenance: Sendable {
    let worker: Worker

    var store: Store { worker.store }
    var configuration: WorkerConfiguration { worker.configuration }
    /// How long a lead lasts without renewal: the scheduler interval ×10, at least a second.
    var leadLease: Duration { max(.seconds(1), configuration.schedulerInterval * 10) }

    func run() async {
        let clock = ContinuousClock()
        var nextRescue = clock.now
        var nextPrune = clock.now
        while !Task.isCancelled {
            do {
                // Held for a few ticks: another worker takes over within that if this one stops.
                if try await store.lead("maintenance", worker: worker.id, lease: leadLease) {
                    try await promoteDue()
                    if clock.now >= nextRescue {
                        nextRescue = clock.now + configuration.lease / 2
                        try await rescueLost()
                        try await releaseOrphans()
                    }
                    if clock.now >= nextPrune {
                        nextPrune = clock.now + .seconds(60)
                        try await prune()
                    }
                }
            } catch {
                if Task.isCancelled { return }
                worker.logger.warning("maintenance failed", metadata: ["error": "\(error.logDescription)"])
            }
            try? await Task.sleep(for: configuration.schedulerInterval)
        }
    }

    /// Scheduled and retryable jobs whose time has come.
    func promoteDue() async throws {
        while true {
            let queues = try await store.promoteDue(limit: 1000)
            if queues.isEmpty { return }
            for queue in queues { worker.fetchers[queue]?.wake() }
            worker.waker.wake(queues)
            if queues.count < 1000 { return }
        }
    }

    /// Stages whose worker stopped sending heartbeats count as failed attempts ("worker lost").
    func rescueLost() async throws {
        let lost = try await store.lostStages(lease: configuration.lease, limit: 1000)
        guard !lost.isEmpty else { return }
        for (workerID, stages) in Dictionary(grouping: lost, by: \.workerID) {
            let outcomes = stages.map { stage in
                let spec = stage.chain[stage.stage]
                let next = stage.stage + 1 < stage.chain.count ? stage.chain[stage.stage + 1] : nil
                return Outcome(
                    jobID: stage.jobID, stage: stage.stage, attempt: stage.attempt,
                    transition: Transition.decide(
                        stage: spec, next: next, attempt: stage.attempt,
                        outcome: .failed(
                            error: "worker lost: \(workerID) stopped sending heartbeats", retry: .byPolicy),
                        canHop: false, random: Double.random(in: 0..<1)))
            }
            let result = try await store.apply(outcomes, worker: workerID)
            worker.logger.warning(
                "rescued stages of a lost worker",
                metadata: ["lost_worker": "\(workerID)", "jobs": "\(result.applied.sorted().prefix(50))"])
            worker.waker.wake(result.woken)
            worker.waker.announceFinished(result.finished)
        }
        try await store.forgetWorkers(silentFor: .seconds(3600))
    }

    /// Stages running under a live worker that does not hold them (their claim's answer was lost
    /// with its connection) go back to their queue, their attempt not counted: that worker never
    /// ran them, and would otherwise keep them, and their lane, for ever.
    func releaseOrphans() async throws {
        let orphans = try await store.orphanedStages(lease: configuration.lease, limit: 1000)
        for (workerID, stages) in Dictionary(grouping: orphans, by: \.workerID) {
            let outcomes = stages.map { stage in
                Outcome(jobID: stage.jobID, stage: stage.stage, attempt: stage.attempt, transition: .release)
            }
            let result = try await store.apply(outcomes, worker: workerID)
            worker.logger.warning(
                "put back stages their worker never received",
                metadata: ["holder": "\(workerID)", "jobs": "\(result.applied.sorted().prefix(50))"])
            worker.waker.wake(result.woken)
        }
    }

    /// Finished jobs past retention, in batches.
    func prune() async throws {
        while try await store.prune(retention: configuration.retention, limit: 5000) == 5000 {}
    }
}
