import BatonPostgres
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// The worker's row in `workers`, refreshed every third of the lease: the lease of all its jobs
/// at once. Each beat also records the jobs the worker holds (so that maintenance can put back
/// those it never received) and brings back the held jobs cancelled meanwhile, whose notice the
/// worker may have missed. Runs until the stages it keeps alive have been drained.
final class Heartbeat: Service, Sendable {
    struct Registration: Sendable {
        let workerID: String
        let queues: [String]
        let tasks: [String]
    }

    let store: Store
    let registration: Registration
    let lease: Duration
    let logger: Logger
    /// The jobs the worker answers for, read once a connection is in hand.
    let holdings: @Sendable () -> [Int64]
    /// Told which held jobs were found cancelled by the beat sent at the instant given.
    let cancelled: @Sendable (_ jobs: [Int64], _ beatSent: ContinuousClock.Instant) -> Void
    /// When the loop last came round.
    private let tick = Mutex(ContinuousClock.now)

    init(
        store: Store, registration: Registration, lease: Duration, logger: Logger,
        holdings: @escaping @Sendable () -> [Int64],
        cancelled: @escaping @Sendable (_ jobs: [Int64], _ beatSent: ContinuousClock.Instant) -> Void
    ) {
        self.store = store
        self.registration = registration
        self.lease = lease
        self.logger = logger
        self.holdings = holdings
        self.cancelled = cancelled
    }

    /// When the loop last came round.
    var lastTick: ContinuousClock.Instant { tick.withLock { $0 } }

    /// Adds (or refreshes) the worker's row, retrying until the database answers.
    func register() async throws {
        var backoff = Duration.milliseconds(100)
        while true {
            do {
                try await store.registerWorker(
                    id: registration.workerID, host: WorkerConfiguration.hostName,
                    pid: Int(ProcessInfo.processInfo.processIdentifier), queues: registration.queues,
                    tasks: registration.tasks, lease: lease)
                tick.withLock { $0 = .now }
                return
            } catch {
                logger.warning("cannot register worker; retrying", metadata: ["error": "\(error.logDescription)"])
                try await Task.sleep(for: backoff)
                backoff = min(backoff * 2, .seconds(5))
            }
        }
    }

    func run() async {
        await cancelWhenGracefulShutdown { await self.beatUntilCancelled() }
    }

    private func beatUntilCancelled() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: lease / 3)
            let sent = ContinuousClock.now
            tick.withLock { $0 = sent }
            do {
                let beat = try await store.heartbeat(worker: registration.workerID, holds: holdings)
                cancelled(beat.cancelled, sent)
                if !beat.alive {
                    logger.warning("worker row was gone (declared lost?); registering again")
                    try await register()
                }
            } catch {
                if Task.isCancelled { return }
                logger.warning("heartbeat failed", metadata: ["error": "\(error.logDescription)"])
            }
        }
    }
}
