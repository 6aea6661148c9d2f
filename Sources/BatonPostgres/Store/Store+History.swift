import Baton
import Foundation
import PostgresNIO

/// Per-minute history per queue (`queue_minutes`): written by each worker in batches, read by the
/// dashboard.
extension Store {
    /// The pickup-wait histogram's buckets: each bucket's column in `queue_minutes` and its upper
    /// bound in seconds (the last, `wait_more`, has none).
    package static let waitBuckets: [(column: String, bound: Double)] = [
        ("wait_10ms", 0.01), ("wait_25ms", 0.025), ("wait_50ms", 0.05), ("wait_100ms", 0.1), ("wait_250ms", 0.25),
        ("wait_500ms", 0.5), ("wait_1s", 1), ("wait_2500ms", 2.5), ("wait_5s", 5), ("wait_10s", 10),
        ("wait_30s", 30), ("wait_1m", 60), ("wait_5m", 300), ("wait_30m", 1800), ("wait_more", .infinity),
    ]

    /// How many keys a minute of ``HistoryMinute/fairStarts`` keeps, those with the most
    /// (`fair_starts_added` in the schema keeps as many).
    package static let fairStartKeysKept = 20

    /// One queue's minute (or a longer bin of them).
    package struct HistoryMinute: Sendable, Hashable {
        package var queue: String
        package var minute: Date
        package var completed = 0
        package var discarded = 0
        package var cancelled = 0
        /// Pickups per bucket of ``Store/waitBuckets``.
        package var waits = [Int](repeating: 0, count: Store.waitBuckets.count)
        /// In a fair queue: the pickups per fairness key ("" for stages without one), as the worker
        /// estimated them from a sample (``Store/fairKeys(ofClaims:)``); the ``fairStartKeysKept``
        /// keys with the most.
        package var fairStarts: [String: Int] = [:]

        package init(queue: String, minute: Date) {
            self.queue = queue
            self.minute = minute
        }
    }

    /// The histogram's columns, comma-separated, optionally each wrapped (`sum(…)::int`).
    private static func waitColumns(_ wrap: (String) -> String = { $0 }) -> String {
        waitBuckets.map { wrap($0.column) }.joined(separator: ", ")
    }

    /// Adds `minutes` to the history, in one statement.
    package func recordHistory(_ minutes: [HistoryMinute]) async throws {
        guard !minutes.isEmpty else { return }
        let rows = JSONValue.array(
            minutes.map { minute in
                var row: [String: JSONValue] = [
                    "minute": .string(RFC3339.format(minute.minute)), "queue": .string(minute.queue),
                    "completed": .number(JSONNumber(minute.completed)),
                    "discarded": .number(JSONNumber(minute.discarded)),
                    "cancelled": .number(JSONNumber(minute.cancelled)),
                ]
                for (bucket, count) in zip(Self.waitBuckets, minute.waits) {
                    row[bucket.column] = .number(JSONNumber(count))
                }
                if !minute.fairStarts.isEmpty {
                    row["fair_starts"] = .object(minute.fairStarts.mapValues { .number(JSONNumber($0)) })
                }
                return .object(row)
            })
        let columns = Self.waitColumns()
        // Rows in key order: two workers adding to the same minutes lock them in the same order.
        try await pool.execute(
            """
            INSERT INTO \(unescaped: schema).queue_minutes AS q
                (minute, queue, completed, discarded, cancelled, fair_starts, \(unescaped: columns))
            SELECT r.* FROM jsonb_to_recordset(\(rows.jsonText)::jsonb)
                AS r(minute timestamptz, queue text, completed int, discarded int, cancelled int, fair_starts jsonb,
                     \(unescaped: Self.waitColumns { "\($0) int" }))
            ORDER BY r.minute, r.queue
            ON CONFLICT (minute, queue) DO UPDATE SET
                completed = q.completed + excluded.completed, discarded = q.discarded + excluded.discarded,
                cancelled = q.cancelled + excluded.cancelled,
                fair_starts = \(unescaped: schema).fair_starts_added(q.fair_starts, excluded.fair_starts),
                \(unescaped: Self.waitColumns { "\($0) = q.\($0) + excluded.\($0)" })
            """, logger: logger)
    }

    /// The history since `since` in bins of `bin` (a minute, a quarter of an hour), per queue,
    /// oldest first (primary key range scan).
    package func history(since: Date, bin: Duration) async throws -> [HistoryMinute] {
        let seconds = Int(bin.components.seconds)
        let rows = try await pool.read(
            """
            SELECT queue, date_bin(\(seconds) * interval '1 second', minute, timestamptz '2000-01-01') AS t,
                   sum(completed)::int, sum(discarded)::int, sum(cancelled)::int,
                   \(unescaped: Self.waitColumns { "sum(\($0))::int" })
            FROM \(unescaped: schema).queue_minutes WHERE minute >= \(since)
            GROUP BY queue, t ORDER BY t, queue
            """, logger: logger)
        var minutes: [HistoryMinute] = []
        for row in rows {
            let cells = Array(row)
            var minute = HistoryMinute(queue: try cells[0].decode(String.self), minute: try cells[1].decode(Date.self))
            minute.completed = try cells[2].decode(Int.self)
            minute.discarded = try cells[3].decode(Int.self)
            minute.cancelled = try cells[4].decode(Int.self)
            minute.waits = try cells[5...].map { try $0.decode(Int.self) }
            minutes.append(minute)
        }
        return minutes
    }

    /// Deletes history older than `keep`.
    package func pruneHistory(keep: Duration) async throws {
        try await pool.execute(
            """
            DELETE FROM \(unescaped: schema).queue_minutes
            WHERE minute < now() - \(keep.milliseconds) * interval '1 millisecond'
            """, logger: logger)
    }

    /// Each queue's jobs per state, each the number of jobs `GET /v1/jobs?queue=…&state=…` lists
    /// (group members left out, as there): every state but completed from `jobs_state_id` (an
    /// index-only scan of those jobs alone); completed ones are not counted row by row but taken
    /// from the history since `finishedSince`, which counts completions (group members' included);
    /// with each queue's oldest available job, whether it is paused, and how many live workers
    /// serve it. Queues are those with such jobs, history or a pause.
    package func queueSummaries(finishedSince: Date) async throws -> [QueueStatus] {
        // Three statements on three connections at once: the answer waits for the slowest only.
        async let unservedTasks = unservedTasks()
        async let fairShareBacklogs = fairShareBacklogs()
        let rows = try await pool.read(
            """
            WITH counts AS (
                SELECT queue, state::text AS state, count(*)::int AS n FROM \(unescaped: schema).jobs
                WHERE state <> 'completed' AND parent_id IS NULL GROUP BY queue, state
                UNION ALL
                SELECT queue, 'completed', sum(completed)::int
                FROM \(unescaped: schema).queue_minutes WHERE minute >= \(finishedSince) GROUP BY queue
            ), oldest AS (
                SELECT queue, min(run_at) AS at FROM \(unescaped: schema).jobs WHERE state = 'available' GROUP BY queue
            ), names AS (
                SELECT queue FROM counts UNION SELECT queue FROM \(unescaped: schema).paused_queues
            )
            SELECT n.queue, c.state, coalesce(c.n, 0), o.at,
                   EXISTS (SELECT 1 FROM \(unescaped: schema).paused_queues p WHERE p.queue = n.queue),
                   (SELECT count(*)::int FROM \(unescaped: schema).workers w
                    WHERE n.queue = ANY (w.queues) AND w.heartbeat_at > now() - w.lease)
            FROM names n LEFT JOIN counts c ON c.queue = n.queue LEFT JOIN oldest o ON o.queue = n.queue
            """, logger: logger)
        var queues: [String: QueueStatus] = [:]
        let unserved = Dictionary(grouping: try await unservedTasks, by: \.queue)
        let fairShare = try await fairShareBacklogs
        for row in rows {
            let (name, state, count, oldest, paused, workers) = try row.decode(
                (String, String?, Int, Date?, Bool, Int).self)
            var queue =
                queues[name]
                ?? QueueStatus(
                    name: name, counts: [:], oldestAvailable: oldest, paused: paused, workers: workers,
                    unservedTasks: (unserved[name] ?? []).map(\.task))
            queue.fairShare = fairShare[name]
            if let state = state.flatMap(JobState.init(rawValue:)), count > 0 { queue.counts[state] = count }
            queues[name] = queue
        }
        // A queue that derives keys is shown before any job has entered it.
        for (name, fair) in fairShare where queues[name] == nil && fair.keyFrom != nil {
            var queue = QueueStatus(name: name)
            queue.fairShare = fair
            queues[name] = queue
        }
        return queues.values.sorted { $0.name < $1.name }
    }
}

extension Store {
    /// Tasks that no live worker serving their queue runs, among the queue's 100 oldest available
    /// jobs (a row of `ready` that is no longer one is left out, not replaced), with how many of
    /// those they are; only for queues some live worker serves (a queue
    /// none serves is flagged as a whole, ``QueueStatus/unserved``). A worker claims only the tasks
    /// it runs, so such jobs stay available and soon are the oldest: a look at those, in `ready`
    /// (the claim's narrow table, which holds each available stage's task), each checked against
    /// its job, not a read of every available job's row.
    package func unservedTasks() async throws -> [(queue: String, task: String, jobs: Int)] {
        try await pool.read(
            """
            WITH live AS (
                SELECT queues, tasks FROM \(unescaped: schema).workers WHERE heartbeat_at > now() - lease
            ), served AS (
                SELECT DISTINCT unnest(queues) AS queue FROM live
            )
            SELECT s.queue, t.task, count(*)::int
            FROM served s
            CROSS JOIN LATERAL (
                SELECT r.task FROM (
                    SELECT task, job_id FROM \(unescaped: schema).ready
                    WHERE queue = s.queue ORDER BY run_at LIMIT 100) r
                -- A look-up of each row's job by its key (a subquery the planner cannot turn into
                -- a join): with `jobs`' statistics stale (a burst of available jobs since the last
                -- analyze), a join was planned as a scan of every available job, the sort of
                -- `ready` repeated for each: minutes, seen under schemathesis.
                WHERE (SELECT j.state = 'available' AND j.queue = s.queue
                       FROM \(unescaped: schema).jobs j WHERE j.id = r.job_id)) t
            WHERE t.task IS NOT NULL
              AND NOT EXISTS (SELECT 1 FROM live w WHERE s.queue = ANY (w.queues) AND t.task = ANY (w.tasks))
            GROUP BY s.queue, t.task ORDER BY s.queue, t.task
            """, logger: logger
        ).map { row in
            let (queue, task, jobs) = try row.decode((String, String, Int).self)
            return (queue, task, jobs)
        }
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
                return Store.waitBuckets[index].bound.isFinite ? Store.waitBuckets[index].bound : 3600
            }
        }
        return nil
    }
}
