import Logging
import Metrics
import PostgresNIO
import Synchronization

/// The cluster's state as gauges, read from the database (two statements) when metrics are
/// scraped, at most once a second:
///
/// - `baton_queue_jobs{queue, state}`: jobs not finished, per queue and state (queue depth),
///   every state of every queue present, 0 included.
/// - `baton_queue_oldest_available_seconds{queue}`: how long the oldest claimable job has waited.
/// - `baton_queue_unserved{queue}`: 1 when the queue has available jobs and no live worker (a
///   heartbeat within its lease) serves it.
/// - `baton_queue_paused{queue}`: 1 when the queue is paused.
/// - `baton_queue_task_unserved{queue, task}`: 1 when some of the queue's oldest available jobs
///   are of a task no live worker serving the queue runs (``Store/unservedTasks()``).
/// - `baton_lanes_blocked`: lanes whose holder failed and waits to retry (nothing behind it moves).
/// - `baton_workers_alive`: workers whose last heartbeat is within their lease.
/// - `baton_workers_silent`: registered workers whose last heartbeat is older than their lease.
/// - `baton_schedules_late`: schedules not paused whose next run is more than a minute overdue
///   (no worker leads the maintenance that runs them).
/// - `baton_fair_keys_waiting{queue}`: in a fair queue, the keys with stages waiting.
/// - `baton_fair_key_stages{queue, key}`: the stages waiting of the five keys with the most
///   (``Store/fairShareBacklogs()``); a key that leaves those five leaves the page, so that the
///   series stay as few as the queues, whatever the number of tenants.
///
/// A queue is reported while it has unfinished jobs or is paused, and with zeros once it has
/// neither, so that a series ends at 0 rather than at its last value; an unserved task likewise.
///
/// The control plane refreshes them on each `GET /metrics`, so they come from the API: one reader
/// per scrape rather than one per worker, and none when nobody scrapes.
package final class ClusterMetrics: Sendable {
    let store: Store
    private let state = Mutex<
        (reported: Set<String>, tasks: Set<[String]>, fairKeys: [[String]: Gauge], last: ContinuousClock.Instant?)
    >(([], [], [:], nil))

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
            let (previously, tasks, fairKeys) = state.withLock { ($0.reported, $0.tasks, $0.fairKeys) }
            let reported = try await read(previously: previously)
            let unserved = try await readUnservedTasks(previously: tasks)
            let keys = try await readFairKeys(previously: fairKeys)
            state.withLock { ($0.reported, $0.tasks, $0.fairKeys) = (reported, unserved, keys) }
        } catch {
            store.logger.debug("cluster metrics not read", metadata: ["error": "\(error.logDescription)"])
        }
    }

    /// Reads the gauges once; returns the queues reported, those reported before included.
    private func read(previously: Set<String>) async throws -> Set<String> {
        let rows = try await store.pool.read(
            """
            WITH live AS (
                SELECT queues FROM \(unescaped: store.schema).workers WHERE heartbeat_at > now() - lease
            )
            SELECT 'queue', queue, state::text, count(*)::float8,
                   extract(epoch FROM now() - min(run_at) FILTER (WHERE state = 'available'))::float8,
                   state = 'available' AND NOT EXISTS (SELECT 1 FROM live WHERE queue = ANY (live.queues))
            FROM \(unescaped: store.schema).jobs
            WHERE state IN ('available', 'scheduled', 'retryable', 'running', 'waiting')
            GROUP BY queue, state
            UNION ALL
            SELECT 'paused', queue, NULL, 1, NULL, NULL FROM \(unescaped: store.schema).paused_queues
            UNION ALL
            SELECT 'lanes', NULL, NULL, count(*)::float8, NULL, NULL FROM \(unescaped: store.schema).jobs
            WHERE lane IS NOT NULL AND state = 'retryable'
            UNION ALL
            SELECT 'workers', NULL, NULL, count(*)::float8, NULL, NULL FROM live
            UNION ALL
            SELECT 'silent', NULL, NULL, count(*)::float8, NULL, NULL FROM \(unescaped: store.schema).workers
            WHERE heartbeat_at <= now() - lease
            UNION ALL
            SELECT 'late', NULL, NULL, count(*)::float8, NULL, NULL FROM \(unescaped: store.schema).schedules
            WHERE NOT paused AND next_run_at < now() - interval '1 minute'
            """, logger: store.logger)
        var queues = previously
        var counts: [String: [String: Double]] = [:]
        var oldest: [String: Double] = [:]
        var unserved: Set<String> = []
        var paused: Set<String> = []
        for row in rows {
            let (kind, queue, state, count, age, noWorker) = try row.decode(
                (String, String?, String?, Double, Double?, Bool?).self)
            switch kind {
            case "queue":
                guard let queue, let state else { continue }
                queues.insert(queue)
                counts[queue, default: [:]][state] = count
                if let age { oldest[queue] = max(oldest[queue] ?? 0, age) }
                if noWorker == true { unserved.insert(queue) }
            case "paused":
                guard let queue else { continue }
                queues.insert(queue)
                paused.insert(queue)
            case "lanes": Gauge(label: "baton_lanes_blocked").record(count)
            case "silent": Gauge(label: "baton_workers_silent").record(count)
            case "late": Gauge(label: "baton_schedules_late").record(count)
            default: Gauge(label: "baton_workers_alive").record(count)
            }
        }
        for queue in queues {
            for state in Self.unfinished {
                Gauge(label: "baton_queue_jobs", dimensions: [("queue", queue), ("state", state)])
                    .record(counts[queue]?[state] ?? 0)
            }
            Gauge(label: "baton_queue_oldest_available_seconds", dimensions: [("queue", queue)])
                .record(oldest[queue] ?? 0)
            Gauge(label: "baton_queue_unserved", dimensions: [("queue", queue)]).record(
                unserved.contains(queue) ? 1 : 0)
            Gauge(label: "baton_queue_paused", dimensions: [("queue", queue)]).record(paused.contains(queue) ? 1 : 0)
        }
        return queues
    }

    /// Sets `baton_queue_task_unserved`: 1 for each queue and task unserved now, 0 for those that
    /// were and are not; returns those set.
    private func readUnservedTasks(previously: Set<[String]>) async throws -> Set<[String]> {
        let now = Set(try await store.unservedTasks().map { [$0.queue, $0.task] })
        for pair in previously.union(now) {
            Gauge(label: "baton_queue_task_unserved", dimensions: [("queue", pair[0]), ("task", pair[1])])
                .record(now.contains(pair) ? 1 : 0)
        }
        return previously.union(now)
    }

    /// Sets `baton_fair_keys_waiting` for each fair queue and `baton_fair_key_stages` for the keys
    /// with the most stages waiting now; the gauges of keys no longer among them are destroyed.
    /// Returns those set.
    private func readFairKeys(previously: [[String]: Gauge]) async throws -> [[String]: Gauge] {
        let backlogs = try await store.fairShareBacklogs()
        for (queue, backlog) in backlogs {
            Gauge(label: "baton_fair_keys_waiting", dimensions: [("queue", queue)]).record(backlog.keys)
        }
        var gauges: [[String]: Gauge] = [:]
        for (queue, backlog) in backlogs {
            for key in backlog.top {
                let gauge =
                    previously[[queue, key.key]]
                    ?? Gauge(label: "baton_fair_key_stages", dimensions: [("queue", queue), ("key", key.key)])
                gauge.record(key.stages)
                gauges[[queue, key.key]] = gauge
            }
        }
        for (pair, gauge) in previously where gauges[pair] == nil { gauge.destroy() }
        return gauges
    }

    private static let unfinished = ["available", "running", "scheduled", "retryable", "waiting"]
}
