import Baton
import Foundation
import PostgresNIO

/// Per-minute history per queue (`queue_minutes`): written by each worker in batches, read by the
/// dashboard.
extension Store {
    /// Upper bounds, in seconds, of the pickup-wait histogram's buckets; one more bucket counts
    /// the longer waits.
    package static let waitBucketBounds: [Double] = [
        0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800,
    ]

    /// One queue's minute as one worker saw it.
    package struct HistoryMinute: Sendable, Hashable {
        package var queue: String
        package var minute: Date
        package var completed = 0
        package var discarded = 0
        /// Counts per bucket of ``Store/waitBucketBounds`` (one more than the bounds).
        package var waits = [Int](repeating: 0, count: Store.waitBucketBounds.count + 1)

        package init(queue: String, minute: Date) {
            self.queue = queue
            self.minute = minute
        }
    }

    /// Adds `minutes` to the worker's rows, in one statement.
    package func recordHistory(worker: String, _ minutes: [HistoryMinute]) async throws {
        guard !minutes.isEmpty else { return }
        let rows = JSONValue.array(
            minutes.map { minute in
                [
                    "minute": .string(RFC3339.format(minute.minute)), "queue": .string(minute.queue),
                    "completed": .number(JSONNumber(minute.completed)),
                    "discarded": .number(JSONNumber(minute.discarded)),
                    "waits": .array(minute.waits.map { .number(JSONNumber($0)) }),
                ]
            })
        try await pool.perform(
            """
            INSERT INTO \(unescaped: schema).queue_minutes AS q (minute, queue, worker_id, completed, discarded, waits)
            SELECT r.minute, r.queue, \(worker), r.completed, r.discarded, r.waits
            FROM jsonb_to_recordset(\(rows.jsonText)::jsonb)
                AS r(minute timestamptz, queue text, completed int, discarded int, waits int[])
            ON CONFLICT (minute, queue, worker_id) DO UPDATE SET
                completed = q.completed + excluded.completed, discarded = q.discarded + excluded.discarded,
                waits = ARRAY(SELECT coalesce(a, 0) + coalesce(b, 0)
                              FROM unnest(q.waits, excluded.waits) AS w(a, b))
            """, logger: logger)
    }

    /// The history since `since`, summed over workers into bins of `bin` (a minute, an hour), per
    /// queue, oldest first.
    package func history(since: Date, bin: Duration) async throws -> [HistoryMinute] {
        let seconds = Int(bin.components.seconds)
        let rows = try await pool.read(
            """
            WITH binned AS (
                SELECT queue, date_bin(\(seconds) * interval '1 second', minute, timestamptz '2000-01-01') AS t,
                       completed, discarded, waits
                FROM \(unescaped: schema).queue_minutes WHERE minute >= \(since)
            )
            SELECT queue, t, sum(completed)::int, sum(discarded)::int,
                   (SELECT array_agg(n ORDER BY i) FROM (
                        SELECT i, sum(w)::int AS n
                        FROM binned b2, unnest(b2.waits) WITH ORDINALITY AS u(w, i)
                        WHERE b2.queue = b.queue AND b2.t = b.t GROUP BY i) s)
            FROM binned b GROUP BY queue, t ORDER BY t, queue
            """, logger: logger)
        var minutes: [HistoryMinute] = []
        for row in rows {
            let (queue, time, completed, discarded, waits) = try row.decode((String, Date, Int, Int, [Int]?).self)
            var minute = HistoryMinute(queue: queue, minute: time)
            minute.completed = completed
            minute.discarded = discarded
            if let waits, waits.count == minute.waits.count { minute.waits = waits }
            minutes.append(minute)
        }
        return minutes
    }

    /// Deletes history older than `keep`.
    package func pruneHistory(keep: Duration) async throws {
        try await pool.perform(
            """
            DELETE FROM \(unescaped: schema).queue_minutes
            WHERE minute < now() - \(keep.milliseconds) * interval '1 millisecond'
            """, logger: logger)
    }

    /// Each queue's jobs per state without counting the table: unfinished, discarded and
    /// cancelled ones from `jobs_queue_state` (an index-only scan), completed ones from the history
    /// since `completedSince`; with each queue's oldest available job and whether it is paused.
    /// Queues are those with such jobs, history or a pause.
    package func queueSummaries(completedSince: Date) async throws -> [QueueStatus] {
        let rows = try await pool.read(
            """
            WITH counts AS (
                SELECT queue, state::text AS state, count(*)::int AS n FROM \(unescaped: schema).jobs
                WHERE state <> 'completed' GROUP BY queue, state
                UNION ALL
                SELECT queue, 'completed', sum(completed)::int FROM \(unescaped: schema).queue_minutes
                WHERE minute >= \(completedSince) GROUP BY queue
            ), oldest AS (
                SELECT queue, min(run_at) AS at FROM \(unescaped: schema).jobs WHERE state = 'available' GROUP BY queue
            ), names AS (
                SELECT queue FROM counts UNION SELECT queue FROM \(unescaped: schema).paused_queues
            )
            SELECT n.queue, c.state, coalesce(c.n, 0), o.at,
                   EXISTS (SELECT 1 FROM \(unescaped: schema).paused_queues p WHERE p.queue = n.queue)
            FROM names n LEFT JOIN counts c ON c.queue = n.queue LEFT JOIN oldest o ON o.queue = n.queue
            """, logger: logger)
        var queues: [String: QueueStatus] = [:]
        for row in rows {
            let (name, state, count, oldest, paused) = try row.decode((String, String?, Int, Date?, Bool).self)
            var queue = queues[name] ?? QueueStatus(name: name, counts: [:], oldestAvailable: oldest, paused: paused)
            if let state = state.flatMap(JobState.init(rawValue:)) { queue.counts[state] = count }
            queues[name] = queue
        }
        return queues.values.sorted { $0.name < $1.name }
    }
}

extension Store.HistoryMinute {
    /// The pickup wait under which a fraction `p` of the pickups fell (a bucket's upper bound),
    /// nil without pickups.
    package func wait(percentile p: Double) -> Double? {
        let total = waits.reduce(0, +)
        guard total > 0 else { return nil }
        var seen = 0
        for (index, count) in waits.enumerated() {
            seen += count
            if Double(seen) >= p * Double(total) {
                return index < Store.waitBucketBounds.count ? Store.waitBucketBounds[index] : 3600
            }
        }
        return nil
    }
}
