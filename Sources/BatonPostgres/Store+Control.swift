import Baton
import Foundation
import PostgresNIO

/// What the control plane reads and steers: listings, retry, delete, pause.
extension Store {
    // MARK: jobs

    /// Jobs (not group members) newest first, by keyset on the id: a page never repeats or skips
    /// a job however many are inserted meanwhile (new jobs have larger ids). A backward scan of the
    /// primary key, filtered.
    package func jobs(_ filter: JobFilter) async throws -> [JobSummary] {
        let states = filter.states.isEmpty ? nil : filter.states.map(\.rawValue)
        // The text as it is: LIKE's wildcards in it are escaped.
        let errorPattern = filter.error.map { text in
            "%"
                + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "%", with: "\\%")
                .replacingOccurrences(of: "_", with: "\\_") + "%"
        }
        let rows = try await pool.read(
            """
            SELECT id, queue, priority::int, state::text, stage, stage_count, chain -> stage ->> 'task', lane,
                   attempt, run_at, created_at, finished_at, errors -> -1 ->> 'error'
            FROM \(unescaped: schema).jobs
            WHERE parent_id IS NULL
              AND (\(filter.before)::bigint IS NULL OR id < \(filter.before))
              AND (\(states)::text[] IS NULL OR state = ANY(\(states)::\(unescaped: schema).job_state[]))
              AND (\(filter.queue)::text IS NULL OR queue = \(filter.queue))
              AND (\(filter.lane)::text IS NULL OR lane = \(filter.lane))
              AND (\(filter.task)::text IS NULL
                   OR jsonb_path_exists(chain, 'strict $.**.task ? (@ == $t)', jsonb_build_object('t', \(filter.task)::text)))
              AND (\(errorPattern)::text IS NULL OR errors -> -1 ->> 'error' ILIKE \(errorPattern))
              AND (\(filter.createdAfter)::timestamptz IS NULL OR created_at >= \(filter.createdAfter))
              AND (\(filter.createdBefore)::timestamptz IS NULL OR created_at < \(filter.createdBefore))
              AND (\(filter.enqueuedBy)::text IS NULL OR enqueued_by = \(filter.enqueuedBy))
            ORDER BY id DESC LIMIT \(filter.limit)
            """, logger: logger)
        var jobs: [JobSummary] = []
        for row in rows {
            let (id, queue, priority, state, stage, count, task, lane, attempt, runAt) =
                try row.decode((Int64, String, Int, String, Int, Int, String?, String?, Int, Date).self)
            let columns = Array(row)
            jobs.append(
                JobSummary(
                    id: id, queue: queue, priority: priority, state: JobState(rawValue: state) ?? .available,
                    stage: stage, stageCount: count, task: task, lane: lane, attempt: attempt, runAt: runAt,
                    createdAt: try columns[10].decode(Date.self), finishedAt: try columns[11].decode(Date?.self),
                    lastError: try columns[12].decode(String?.self)))
        }
        return jobs
    }

    /// Starts a discarded or cancelled job again at the stage it stopped on, with fresh attempts
    /// (`retry_job` in the schema). Returns the job's new state, or nil when it cannot be retried:
    /// it has not finished, it completed, it is a group member (retry its parent), or members of its
    /// failed group are still running. Throws `BatonError.jobNotFound` for an unknown id.
    package func retry(_ id: Int64) async throws -> JobState? {
        do {
            let rows = try await pool.rows(
                "SELECT queue, state::text FROM \(unescaped: schema).retry_job(\(id))", logger: logger)
            for row in rows {
                let (queue, name) = try row.decode((String, String).self)
                let state = JobState(rawValue: name) ?? .available
                if state == .available { try await notify(["q:" + queue]) }
                return state
            }
            return nil
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "P0002" {
            throw BatonError.jobNotFound(id)
        }
    }

    /// Deletes a finished job with its group members. Returns false when the job has not finished,
    /// is a group member (delete its parent) or has members still running (a failed group's
    /// siblings); throws `BatonError.jobNotFound` for an unknown id.
    package func delete(_ id: Int64) async throws -> Bool {
        let rows = try await pool.rows(
            """
            WITH d AS (
                DELETE FROM \(unescaped: schema).jobs
                WHERE id = \(id) AND state IN ('completed', 'discarded', 'cancelled') AND parent_id IS NULL
                  AND NOT \(unescaped: schema).unfinished_members(id)
                RETURNING id
            ) SELECT (SELECT count(*) FROM d)::int,
                     EXISTS (SELECT 1 FROM \(unescaped: schema).jobs WHERE id = \(id))
            """, logger: logger)
        for row in rows {
            let (deleted, exists) = try row.decode((Int, Bool).self)
            if deleted == 1 { return true }
            if !exists { throw BatonError.jobNotFound(id) }
        }
        return false
    }

    // MARK: queues

    /// Every queue with jobs or paused, with its counts per state (a scan of the table: an
    /// operator's query, not a hot one).
    package func queues() async throws -> [QueueStatus] {
        let rows = try await pool.read(
            """
            SELECT coalesce(c.queue, p.queue), c.state::text, coalesce(c.n, 0)::int, c.oldest, p.queue IS NOT NULL
            FROM (SELECT queue, state, count(*) AS n, min(run_at) FILTER (WHERE state = 'available') AS oldest
                  FROM \(unescaped: schema).jobs GROUP BY queue, state) c
            FULL JOIN \(unescaped: schema).paused_queues p ON p.queue = c.queue
            """, logger: logger)
        var queues: [String: QueueStatus] = [:]
        for row in rows {
            let (name, state, count, oldest, paused) = try row.decode((String, String?, Int, Date?, Bool).self)
            var queue = queues[name] ?? QueueStatus(name: name, counts: [:], oldestAvailable: nil, paused: paused)
            if let state = state.flatMap(JobState.init(rawValue:)) { queue.counts[state] = count }
            if let oldest { queue.oldestAvailable = oldest }
            queues[name] = queue
        }
        return queues.values.sorted { $0.name < $1.name }
    }

    /// Pauses or resumes a queue: workers claim nothing from a paused queue (running stages finish).
    /// Resuming wakes the queue's workers.
    ///
    /// Pausing a queue that no job is in and no registered worker serves pauses nothing and
    /// returns false, unless `unchecked`: a misspelled name would otherwise leave the real queue
    /// running while its operator believes it paused. (A queue's jobs have no index of their own
    /// but the available ones: an unknown name costs a scan of the table, once, on refusal.)
    @discardableResult
    package func setPaused(_ paused: Bool, queue: String, unchecked: Bool = false) async throws -> Bool {
        if paused {
            let rows = try await pool.rows(
                """
                INSERT INTO \(unescaped: schema).paused_queues (queue)
                SELECT \(queue) WHERE \(unchecked)
                    OR EXISTS (SELECT 1 FROM \(unescaped: schema).paused_queues WHERE queue = \(queue))
                    OR EXISTS (SELECT 1 FROM \(unescaped: schema).workers WHERE \(queue) = ANY (queues))
                    OR EXISTS (SELECT 1 FROM \(unescaped: schema).jobs WHERE queue = \(queue) AND state = 'available')
                    OR EXISTS (SELECT 1 FROM \(unescaped: schema).jobs WHERE queue = \(queue))
                ON CONFLICT (queue) DO UPDATE SET paused_at = paused_queues.paused_at
                RETURNING 1
                """, logger: logger)
            return !rows.isEmpty
        } else {
            try await pool.perform(
                "DELETE FROM \(unescaped: schema).paused_queues WHERE queue = \(queue)", logger: logger)
            try await notify(["q:" + queue])
            return true
        }
    }

    // MARK: lanes and workers

    /// Lanes with a holder or jobs waiting, by name after `after`; heads from `jobs_lane_head`,
    /// waiting counts from `jobs_lane_waiting`.
    package func lanes(after: String? = nil, limit: Int = 100) async throws -> [LaneStatus] {
        let rows = try await pool.read(
            """
            WITH heads AS (
                SELECT lane, id, queue, state::text AS state, stage, chain -> stage ->> 'task' AS task, attempt, run_at,
                       errors -> -1 ->> 'error' AS error
                FROM \(unescaped: schema).jobs
                WHERE lane IS NOT NULL AND state IN ('available', 'running', 'retryable')
                  AND (\(after)::text IS NULL OR lane > \(after))
            ), waiting AS (
                SELECT lane, count(*)::int AS n FROM \(unescaped: schema).jobs
                WHERE lane IS NOT NULL AND state = 'waiting' AND (\(after)::text IS NULL OR lane > \(after))
                GROUP BY lane
            )
            SELECT coalesce(h.lane, w.lane) AS l, coalesce(w.n, 0), h.id, h.queue, h.state, h.stage, h.task, h.attempt,
                   h.run_at, h.error
            FROM heads h FULL JOIN waiting w ON w.lane = h.lane
            ORDER BY l LIMIT \(limit)
            """, logger: logger)
        var lanes: [LaneStatus] = []
        for row in rows {
            let (lane, waiting, id, queue, state, stage, task, attempt, runAt, error) =
                try row.decode((String, Int, Int64?, String?, String?, Int?, String?, Int?, Date?, String?).self)
            var head: LaneStatus.Head?
            if let id, let queue, let state, let stage, let attempt, let runAt {
                head = LaneStatus.Head(
                    id: id, queue: queue, state: JobState(rawValue: state) ?? .available, stage: stage, task: task,
                    attempt: attempt, runAt: runAt, lastError: error)
            }
            lanes.append(LaneStatus(lane: lane, head: head, waiting: waiting))
        }
        return lanes
    }

    /// Registered workers, oldest first, with the jobs each runs now (`jobs_running` index).
    package func workers() async throws -> [WorkerRecord] {
        let rows = try await pool.read(
            """
            SELECT w.id, w.host, w.pid, w.queues, w.tasks, w.started_at, w.heartbeat_at,
                   ARRAY(SELECT j.id FROM \(unescaped: schema).jobs j
                         WHERE j.state = 'running' AND j.worker_id = w.id ORDER BY j.id)
            FROM \(unescaped: schema).workers w ORDER BY w.started_at, w.id
            """, logger: logger)
        var workers: [WorkerRecord] = []
        for row in rows {
            let (id, host, pid, queues, tasks, started, heartbeat, running) = try row.decode(
                (String, String, Int, [String], [String], Date, Date, [Int64]).self)
            workers.append(
                WorkerRecord(
                    id: id, host: host, pid: pid, queues: queues, tasks: tasks, startedAt: started,
                    heartbeatAt: heartbeat, runningJobs: running))
        }
        return workers
    }
}
