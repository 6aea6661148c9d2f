import BatonPostgres
import Logging
import ServiceLifecycle
import Synchronization

/// The maintenance lead: one worker of the cluster at a time does the chores (``Scheduler``,
/// ``Rescuer``, ``Pruner``). Every `interval` it asks for the lead (a row in `leaders`, held for
/// `lease` unless renewed), so another worker takes over within a lease of this one stopping.
final class Leadership: Service, Sendable {
    let store: Store
    let workerID: String
    let interval: Duration
    /// How long a lead lasts without renewal: ten intervals, at least a second.
    var lease: Duration { max(.seconds(1), interval * 10) }
    let logger: Logger
    /// Until when this worker leads, by its own clock: counted from before it asked.
    private let until = Mutex<ContinuousClock.Instant?>(nil)

    init(store: Store, workerID: String, interval: Duration, logger: Logger) {
        self.store = store
        self.workerID = workerID
        self.interval = interval
        self.logger = logger
    }

    var isLeading: Bool { until.withLock { $0.map { ContinuousClock.now < $0 } ?? false } }

    func run() async {
        await cancelWhenGracefulShutdown {
            // Said once per outage, not once per interval.
            var failing = false
            while !Task.isCancelled {
                let asked = ContinuousClock.now
                do {
                    let leads = try await self.store.lead("maintenance", worker: self.workerID, lease: self.lease)
                    self.until.withLock { $0 = leads ? asked + self.lease : nil }
                    failing = false
                } catch {
                    if Task.isCancelled { return }
                    self.logger.log(
                        level: failing ? .debug : .warning, "cannot take or renew the maintenance lead",
                        metadata: ["error": "\(error.logDescription)"])
                    failing = true
                }
                try? await Task.sleep(for: self.interval)
            }
        }
    }

    /// Does `chore` every `period` while this worker leads, until graceful shutdown, or sooner
    /// when it returns how soon; a failed chore is logged and tried again next period.
    func repeatWhileLeading(
        every period: Duration, _ role: String, _ chore: @escaping @Sendable () async throws -> Duration?
    ) async {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                guard self.isLeading else {
                    try? await Task.sleep(for: self.interval)
                    continue
                }
                var next = period
                do {
                    if let sooner = try await chore() { next = min(sooner, period) }
                } catch {
                    if Task.isCancelled { return }
                    self.logger.warning("\(role) failed", metadata: ["error": "\(error.logDescription)"])
                }
                try? await Task.sleep(for: next)
            }
        }
    }
}
