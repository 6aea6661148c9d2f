import BatonPostgres
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// The worker's share of the per-minute history the dashboard charts (`queue_minutes`): jobs it
/// completed or discarded and how long the stages it claimed had waited, per queue and minute,
/// gathered in memory and written every ``period`` in one statement (and once more when the
/// worker stops). Counted when the worker decides an outcome, as its metrics are; a worker killed
/// outright loses its last few seconds of history, never a job.
final class QueueHistory: Service, Sendable {
    private struct Key: Hashable {
        var queue: String
        var minute: Date
    }

    let store: Store
    let logger: Logger
    let period: Duration
    private let gathered = Mutex<[Key: Store.HistoryMinute]>([:])

    init(store: Store, logger: Logger, period: Duration = .seconds(5)) {
        self.store = store
        self.logger = logger
        self.period = period
    }

    func completed(queue: String) { add(queue) { $0.completed += 1 } }

    func discarded(queue: String) { add(queue) { $0.discarded += 1 } }

    func pickedUp(queue: String, waited: Double) {
        let bucket = Store.waitBuckets.firstIndex { waited <= $0.bound } ?? Store.waitBuckets.count - 1
        add(queue) { $0.waits[bucket] += 1 }
    }

    private func add(_ queue: String, _ change: (inout Store.HistoryMinute) -> Void) {
        let now = Date().timeIntervalSince1970
        let minute = Date(timeIntervalSince1970: (now / 60).rounded(.down) * 60)
        gathered.withLock { gathered in
            let key = Key(queue: queue, minute: minute)
            change(&gathered[key, default: Store.HistoryMinute(queue: queue, minute: minute)])
        }
    }

    func run() async {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try? await Task.sleep(for: self.period)
                await self.write()
            }
        }
        await write()
    }

    /// Writes what was gathered; kept for the next round if the database is away.
    func write() async {
        let minutes = gathered.withLock { gathered in
            defer { gathered.removeAll() }
            return Array(gathered.values)
        }
        guard !minutes.isEmpty else { return }
        do {
            try await store.recordHistory(minutes)
        } catch {
            logger.debug("cannot write queue history; keeping it", metadata: ["error": "\(error.logDescription)"])
            gathered.withLock { gathered in
                for minute in minutes {
                    let key = Key(queue: minute.queue, minute: minute.minute)
                    var merged = gathered[key] ?? Store.HistoryMinute(queue: minute.queue, minute: minute.minute)
                    merged.completed += minute.completed
                    merged.discarded += minute.discarded
                    merged.waits = zip(merged.waits, minute.waits).map(+)
                    gathered[key] = merged
                }
            }
        }
    }
}
