import Logging
import Metrics
import PostgresNIO
import Synchronization

/// The cluster's state as gauges, read from the database (one statement) when metrics are
/// scraped, at most once a second:
///
/// - `baton_queue_jobs{queue, state}`: jobs not finished, per queue and state (queue depth).
/// - `baton_queue_oldest_available_seconds{queue}`: how long the oldest claimable job has waited.
/// - `baton_lanes_blocked`: lanes whose holder failed and waits to retry (nothing behind it moves).
/// - `baton_workers_alive`: workers whose heartbeat is younger than a minute.
///
/// The control plane refreshes them on each `GET /metrics`, so they come from the API: one reader
/// per scrape rather than one per worker, and none when nobody scrapes.
package final class ClusterMetrics: Sendable {
    let store: Store
    private let state = Mutex<(reported: Set<[String]>, last: ContinuousClock.Instant?)>(([], nil))

    package init(store: Store) {
        self.store = store
    }

    /// Reads the gauges unless they were read less than a second ago; a failure leaves them as
    /// they were (and is logged at debug).
    package func refresh() async {
        let due = state.withLock { state in
            if let last = state.last, ContinuousClock.now - last < .seconds(1) { return false }
            state.last = .now
            return true
        }
        guard due else { return }
        do {
            let previously = state.withLock { $0.reported }
            let reported = try await read(previously: previously)
            state.withLock { $0.reported = reported }
        } catch {
            store.logger.debug("cluster metrics not read", metadata: ["error": "\(error.logDescription)"])
        }
    }

    /// Reads the gauges once; series reported before and absent now are set to 0.
    private func read(previously: Set<[String]>) async throws -> Set<[String]> {
        let rows = try await store.pool.read(
            """
            SELECT 'queue', queue, state::text, count(*)::float8,
                   extract(epoch FROM now() - min(run_at) FILTER (WHERE state = 'available'))::float8
            FROM \(unescaped: store.schema).jobs
            WHERE state IN ('available', 'scheduled', 'retryable', 'running', 'waiting')
            GROUP BY queue, state
            UNION ALL
            SELECT 'lanes', NULL, NULL, count(*)::float8, NULL FROM \(unescaped: store.schema).jobs
            WHERE lane IS NOT NULL AND state = 'retryable'
            UNION ALL
            SELECT 'workers', NULL, NULL, count(*)::float8, NULL FROM \(unescaped: store.schema).workers
            WHERE heartbeat_at > now() - interval '1 minute'
            """, logger: store.logger)
        var seen: Set<[String]> = []
        var oldest: [String: Double] = [:]
        for row in rows {
            let (kind, queue, state, count, age) = try row.decode((String, String?, String?, Double, Double?).self)
            switch kind {
            case "queue":
                guard let queue, let state else { continue }
                Gauge(label: "baton_queue_jobs", dimensions: [("queue", queue), ("state", state)]).record(count)
                seen.insert(["jobs", queue, state])
                if let age { oldest[queue] = max(oldest[queue] ?? 0, age) }
            case "lanes": Gauge(label: "baton_lanes_blocked").record(count)
            default: Gauge(label: "baton_workers_alive").record(count)
            }
        }
        for (queue, age) in oldest {
            Gauge(label: "baton_queue_oldest_available_seconds", dimensions: [("queue", queue)]).record(age)
            seen.insert(["oldest", queue])
        }
        for series in previously.subtracting(seen) {
            if series[0] == "jobs" {
                Gauge(label: "baton_queue_jobs", dimensions: [("queue", series[1]), ("state", series[2])]).record(0)
            } else {
                Gauge(label: "baton_queue_oldest_available_seconds", dimensions: [("queue", series[1])]).record(0)
            }
        }
        return seen
    }
}
