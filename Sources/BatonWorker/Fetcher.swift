import BatonPostgres
import Logging
import ServiceLifecycle
import Synchronization

/// Claims stages of one queue, never more than its free slots, and hands them to the ``Intake``.
///
/// It claims when told that jobs are available (NOTIFY, or an outcome of this worker's), when a
/// quarter of the slots has freed up while the last claim filled every one, when a rate limit
/// key the last claim found out of tokens has one again, and every `pollInterval` regardless. On
/// graceful shutdown it stops claiming and returns.
final class Fetcher: Service, Sendable, CustomStringConvertible {
    let queue: String
    let store: Store
    let workerID: String
    /// The tasks this worker runs: stages of others are left for workers that run them.
    let tasks: [String]
    let intake: Intake
    let metrics: WorkerMetrics
    let pollInterval: Duration
    let logger: Logger
    /// When the loop last came round (it does at least every poll interval).
    private let tick = Mutex(ContinuousClock.now)
    /// The wake-up asked for by the last claim that found a rate limit key out of tokens.
    private let tokenWake = Mutex<ContinuousClock.Instant?>(nil)

    init(
        queue: String, store: Store, workerID: String, tasks: [String], intake: Intake, metrics: WorkerMetrics,
        pollInterval: Duration, logger: Logger
    ) {
        self.queue = queue
        self.tasks = tasks
        self.store = store
        self.workerID = workerID
        self.intake = intake
        self.metrics = metrics
        self.pollInterval = pollInterval
        self.logger = logger
    }

    var description: String { "Fetcher(\(queue))" }

    /// When the fetch loop last came round.
    var lastTick: ContinuousClock.Instant { tick.withLock { $0 } }

    func run() async {
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                // Looks for work every `pollInterval` whatever the notifications say: a lost NOTIFY
                // costs this much latency, never a job. (A ticker beside the loop, not a timeout on
                // each of its waits: those would cost two child tasks per wait on a busy worker.)
                group.addTask {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: self.pollInterval)
                        self.intake.wake(self.queue)
                    }
                }
                await self.fetchUntilDrained(in: &group)
                group.cancelAll()
            }
        } onGracefulShutdown: {
            self.intake.drain(self.queue)
        }
    }

    private func fetchUntilDrained(in group: inout DiscardingTaskGroup) async {
        var backoff = Duration.milliseconds(50)
        while !Task.isCancelled {
            tick.withLock { $0 = .now }
            switch intake.fetch(queue) {
            case .stop:
                return
            case .wait:
                await intake.waitForWork(in: queue)
            case .claim(let limit):
                do {
                    let (jobs, nextToken) = try await store.claimCountingTokens(
                        queue: queue, limit: limit, worker: workerID, tasks: tasks)
                    backoff = .milliseconds(50)
                    if let nextToken { wake(after: nextToken, in: &group) }
                    for job in jobs {
                        if let waited = job.waited { metrics.pickedUp(queue: queue, waited: waited, job: job.id) }
                    }
                    intake.receive(jobs, queue: queue, via: .claim(asked: limit))
                } catch {
                    intake.claimFailed(queue)
                    if Task.isCancelled { return }
                    logger.warning(
                        "claim failed; retrying", metadata: ["queue": "\(queue)", "error": "\(error.logDescription)"])
                    await store.pool.waitToRetry(after: backoff)
                    backoff = min(backoff * 2, .seconds(2))
                }
            }
        }
    }

    /// Claims again once `delay` has passed (a rate limit key's next token), unless a wake-up as
    /// early is already set: one sleeping child task, not one per claim.
    private func wake(after delay: Duration, in group: inout DiscardingTaskGroup) {
        let at = ContinuousClock.now + delay
        let sooner = tokenWake.withLock { wake in
            guard wake.map({ at < $0 }) ?? true else { return false }
            wake = at
            return true
        }
        guard sooner else { return }
        group.addTask {
            try? await Task.sleep(until: at)
            self.tokenWake.withLock { if $0 == at { $0 = nil } }
            self.intake.wake(self.queue)
        }
    }
}
