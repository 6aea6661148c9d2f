import Baton
import Foundation
import PostgresNIO

/// What the control plane reads and steers: listings, retry, delete, pause.
extension Store {
    // MARK: jobs

    /// Jobs matching `filter`, newest first, at most `filter.limit`.
    ///
    /// State (`jobs_state_id` for unfinished, discarded and cancelled jobs; the primary key
    /// otherwise) and the cursor are found through indexes, and so is the lane when only states
    /// that hold or wait for a lane are asked for (`lane_holds`, `jobs_lane_waiting`). The
    /// other filters (queue, task, last error, creation and finishing times, who enqueued, a lane
    /// among finished jobs) are checked on at most ``JobFilter/scanLimit`` jobs of those, newest first, so that a
    /// page costs the same however many jobs the table holds and however rare the match: when the
    /// scan ends before the page is full, `scannedTo` is the oldest job examined, and the next page
    /// starts below it. (An index on the lane of every job would cost each laned job's every
    /// transition an index entry: lanes ran slower with one; docs/benchmarks.md#pages.)
    package func jobs(_ filter: JobFilter) async throws -> JobListing {
        // No stored text holds a NUL (PostgreSQL's text cannot): such an error, metadata or args
        // filter matches no job, and PostgreSQL would refuse it as a parameter.
        if filter.error?.unicodeScalars.contains("\u{0}") == true { return JobListing() }
        if filter.tags.contains(where: {
            $0.name.unicodeScalars.contains("\u{0}") || $0.value.unicodeScalars.contains("\u{0}")
        }) {
            return JobListing()
        }
        // States written into the statement (they are the enum's own names): a bound array would
        // reach the planner as an unknown, and neither `jobs_state_id` nor the row estimates could
        // be used.
        let states =
            filter.states.isEmpty
            ? "true" : "state IN (" + filter.states.map { "'\($0.rawValue)'" }.joined(separator: ", ") + ")"
        // The text as it is: LIKE's wildcards in it are escaped.
        let errorPattern = filter.error.map { text in
            "%"
                + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "%", with: "\\%")
                .replacingOccurrences(of: "_", with: "\\_") + "%"
        }
        let laneIndexed = !filter.states.isEmpty && filter.states.allSatisfy(JobState.laneStates.contains)
        let (indexedLane, scannedLane) = laneIndexed ? (filter.lane, nil) : (nil, filter.lane)
        // A search by metadata or args is found in `job_tags_pkey`: the first tag's range, newest
        // job first, bounds the scan instead of the state's or the table's; further tags, and a name
        // or value longer than the table keeps, are checked on the job (`tags_of`).
        let tags = filter.tags
        let tag = tags.first
        let rechecked =
            tags.count > 1
            || tag.map { $0.name.unicodeScalars.count > 120 || $0.value.unicodeScalars.count > 200 } ?? false
        let scanned =
            filter.queue != nil || filter.task != nil || filter.error != nil || filter.createdAfter != nil
            || filter.createdBefore != nil || filter.finishedAfter != nil || filter.finishedBefore != nil
            || filter.enqueuedBy != nil || filter.queues != nil || scannedLane != nil || rechecked
            || (tag != nil && (!filter.states.isEmpty || indexedLane != nil || filter.ids != nil))
        let source =
            tag == nil
            ? "\(schema).jobs"
            // Each job looked up by its key, in a subquery the planner keeps (`OFFSET 0`): as a join,
            // stale statistics of `jobs` could make it a scan of the table.
            : "tagged t CROSS JOIN LATERAL (SELECT * FROM \(schema).jobs j WHERE j.id = t.job_id OFFSET 0) jobs"
        let rows = try await pool.read(
            """
            WITH tagged AS (
                SELECT job_id FROM \(unescaped: schema).job_tags
                WHERE name = left(\(tag?.name), 120) AND value = left(\(tag?.value), 200)
                  AND (\(filter.before)::bigint IS NULL OR job_id < \(filter.before))
                ORDER BY job_id DESC LIMIT \(scanned ? filter.scanLimit : filter.limit)
            ), indexed AS (
                SELECT id,
                       (\(filter.queue)::text IS NULL OR queue = \(filter.queue))
                       AND (\(scannedLane)::text IS NULL OR lane = \(scannedLane))
                       AND (\(filter.task)::text IS NULL
                            OR jsonb_path_exists(chain, 'strict $.**.task ? (@ == $t)', jsonb_build_object('t', \(filter.task)::text)))
                       AND (\(errorPattern)::text IS NULL OR errors -> -1 ->> 'error' ILIKE \(errorPattern))
                       AND (\(filter.createdAfter)::timestamptz IS NULL OR created_at >= \(filter.createdAfter))
                       AND (\(filter.createdBefore)::timestamptz IS NULL OR created_at < \(filter.createdBefore))
                       AND (\(filter.finishedAfter)::timestamptz IS NULL OR finished_at >= \(filter.finishedAfter))
                       AND (\(filter.finishedBefore)::timestamptz IS NULL OR finished_at < \(filter.finishedBefore))
                       AND (\(filter.enqueuedBy)::text[] IS NULL OR enqueued_by = ANY(\(filter.enqueuedBy)))
                       AND (\(filter.queues)::text[] IS NULL OR coalesce(home_queue, queue) = ANY(\(filter.queues)))
                       AND (NOT \(rechecked) OR NOT EXISTS (
                           SELECT FROM unnest(\(tags.map(\.name)), \(tags.map(\.value))) f(name, value)
                           WHERE NOT EXISTS (SELECT FROM \(unescaped: schema).tags_of(chain, metadata) x
                                             WHERE x.name = f.name AND x.value = f.value))) AS hit
                FROM \(unescaped: source)
                WHERE parent_id IS NULL
                  AND (\(filter.before)::bigint IS NULL OR id < \(filter.before))
                  AND (\(filter.ids)::bigint[] IS NULL OR id = ANY(\(filter.ids)))
                  AND \(unescaped: states)
                  AND (\(indexedLane)::text IS NULL
                       OR lane = \(indexedLane) AND (state = 'waiting' OR (id, lane_slot) IN (
                           SELECT h.job_id, h.lane_slot FROM \(unescaped: schema).lane_holds h
                           WHERE h.lane = \(indexedLane))))
                ORDER BY id DESC LIMIT \(scanned ? filter.scanLimit : filter.limit)
            ), scan AS (
                SELECT CASE WHEN \(tag != nil) THEN (SELECT CASE WHEN count(*) = \(filter.scanLimit) THEN min(job_id) END
                                                      FROM tagged)
                            WHEN \(scanned) AND count(*) = \(filter.scanLimit) THEN min(id) END AS scanned_to
                FROM indexed
            ), page AS (
                SELECT id FROM indexed WHERE hit ORDER BY id DESC LIMIT \(filter.limit)
            )
            SELECT s.scanned_to, j.id, j.queue, j.priority::int, j.state::text, j.stage, j.stage_count,
                   j.chain -> j.stage ->> 'task', j.lane, j.attempt, j.run_at, j.created_at, j.finished_at,
                   j.errors -> -1 ->> 'error'
            FROM scan s LEFT JOIN (page p JOIN \(unescaped: schema).jobs j ON j.id = p.id) ON true
            ORDER BY j.id DESC
            """, logger: logger)
        var listing = JobListing()
        for row in rows {
            let columns = Array(row)
            listing.scannedTo = try columns[0].decode(Int64?.self)
            guard let id = try columns[1].decode(Int64?.self) else { continue }
            let (queue, priority, state, stage, count, task, lane, attempt, runAt) = try (
                columns[2].decode(String.self), columns[3].decode(Int.self), columns[4].decode(String.self),
                columns[5].decode(Int.self), columns[6].decode(Int.self), columns[7].decode(String?.self),
                columns[8].decode(String?.self), columns[9].decode(Int.self), columns[10].decode(Date.self)
            )
            listing.jobs.append(
                JobSummary(
                    id: id, queue: queue, priority: priority, state: JobState(rawValue: state) ?? .available,
                    stage: stage, stageCount: count, task: task, lane: lane, attempt: attempt, runAt: runAt,
                    createdAt: try columns[11].decode(Date.self), finishedAt: try columns[12].decode(Date?.self),
                    lastError: try columns[13].decode(String?.self)))
        }
        return listing
    }

    /// Starts a discarded or cancelled job again at the stage it stopped on, with fresh attempts
    /// (`retry_job` in the schema). Returns the job's new state, or nil when it cannot be retried:
    /// it has not finished, it completed, it is a group member (retry its parent), members of its
    /// failed group are still running, or another job holds its unique key
    /// (``uniqueKeyHolder(of:)``). Throws `BatonError.jobNotFound` for an unknown id.
    package func retry(_ id: Int64, by actor: AuditActor? = nil) async throws -> JobState? {
        do {
            let rows = try await audited(actor) { connection in
                let rows = try await connection.execute(
                    "SELECT queue, state::text FROM \(unescaped: self.schema).retry_job(\(id))", logger: self.logger)
                let changes = try rows.prefix(1).map { row in
                    let (queue, state) = try row.decode((String, String).self)
                    return AuditChange("retryJob", "job:\(id)", ["queue": .string(queue), "to": .string(state)])
                }
                return (rows, changes)
            }
            for row in rows {
                let (queue, name) = try row.decode((String, String).self)
                let state = JobState(rawValue: name) ?? .available
                if state == .available { try await notify(["q:" + queue]) }
                return state
            }
            return nil
        } catch let error as StoreError where error.sqlState == "P0002" {
            throw BatonError.jobNotFound(id)
        }
    }

    /// Discards job `id`, which is not running, for `reason` (`skip_job` in the schema): recorded
    /// as its stage's last error, "skipped: <reason>"; a lane it held or waited in moves on at once.
    /// Returns false when it cannot be skipped (running, finished, a group member, a group stage
    /// waiting for its members).
    package func skip(_ id: Int64, reason: String, by actor: AuditActor? = nil) async throws -> Bool {
        do {
            let rows = try await audited(actor) { connection in
                let rows = try await connection.execute(
                    """
                    SELECT queue, watched, woken FROM \(unescaped: self.schema).skip_job(\(id), \(reason))
                    """, logger: self.logger)
                let changes = try rows.prefix(1).map { row in
                    let queue = try row.decode((String, Bool, [String]).self).0
                    return AuditChange(
                        "skipJob", "job:\(id)", ["queue": .string(queue), "to": "discarded", "reason": .string(reason)])
                }
                return (rows, changes)
            }
            guard let row = rows.first else { return false }
            let (_, watched, woken) = try row.decode((String, Bool, [String]).self)
            try await notify(woken.map { "q:" + $0 } + (watched ? ["f:\(id)"] : []))
            return true
        } catch let error as StoreError where error.sqlState == "P0002" {
            throw BatonError.jobNotFound(id)
        }
    }

    /// The job that holds the unique key of job `id` now, if another does (`jobs_unique`).
    package func uniqueKeyHolder(of id: Int64) async throws -> Int64? {
        let rows = try await pool.read(
            """
            SELECT o.id FROM \(unescaped: schema).jobs j JOIN \(unescaped: schema).jobs o
                ON o.unique_key = j.unique_key AND o.state = ANY (o.unique_states) AND o.id <> j.id
            WHERE j.id = \(id)
            """, logger: logger)
        return try rows.first?.decode(Int64.self)
    }

    /// Deletes a finished job with its group members and tags. Returns false when the job has not finished,
    /// is a group member (delete its parent) or has members still running (a failed group's
    /// siblings); throws `BatonError.jobNotFound` for an unknown id.
    package func delete(_ id: Int64, by actor: AuditActor? = nil) async throws -> Bool {
        let rows = try await audited(actor) { connection in
            let rows = try await connection.execute(
                """
                WITH d AS (
                    DELETE FROM \(unescaped: self.schema).jobs
                    WHERE id = \(id) AND state IN ('completed', 'discarded', 'cancelled') AND parent_id IS NULL
                      AND NOT \(unescaped: self.schema).unfinished_members(id)
                    RETURNING queue, state::text, id, chain, metadata
                ), untagged AS (
                    SELECT \(unescaped: self.schema).forget_tags(array_agg(id), array_agg(chain), array_agg(metadata))
                    FROM d
                ) SELECT (SELECT count(*) FROM d JOIN untagged ON true)::int,
                         EXISTS (SELECT 1 FROM \(unescaped: self.schema).jobs WHERE id = \(id)),
                         (SELECT queue FROM d), (SELECT state FROM d)
                """, logger: self.logger)
            let changes = try rows.compactMap { row -> AuditChange? in
                let (deleted, _, queue, state) = try row.decode((Int, Bool, String?, String?).self)
                guard deleted == 1, let queue, let state else { return nil }
                return AuditChange("deleteJob", "job:\(id)", ["queue": .string(queue), "from": .string(state)])
            }
            return (rows, changes)
        }
        for row in rows {
            let (deleted, exists, _, _) = try row.decode((Int, Bool, String?, String?).self)
            if deleted == 1 { return true }
            if !exists { throw BatonError.jobNotFound(id) }
        }
        return false
    }

    // MARK: queues

    /// Pauses or resumes a queue: workers claim nothing from a paused queue (running stages finish).
    /// Resuming wakes the queue's workers.
    ///
    /// Pausing a queue that no job is in and no registered worker serves pauses nothing and
    /// returns false, unless `unchecked`: a misspelled name would otherwise leave the real queue
    /// running while its operator believes it paused. (A queue's jobs have no index of their own
    /// but the available ones: an unknown name costs a scan of the table, once, on refusal.)
    @discardableResult
    package func setPaused(_ paused: Bool, queue: String, unchecked: Bool = false, by actor: AuditActor? = nil)
        async throws -> Bool
    {
        if paused {
            return try await audited(actor) { connection in
                // `paused`: whether this pause is new (xmax 0: inserted, not updated).
                let rows = try await connection.execute(
                    """
                    INSERT INTO \(unescaped: self.schema).paused_queues (queue)
                    SELECT \(queue) WHERE \(unchecked)
                        OR EXISTS (SELECT 1 FROM \(unescaped: self.schema).paused_queues WHERE queue = \(queue))
                        OR EXISTS (SELECT 1 FROM \(unescaped: self.schema).workers WHERE \(queue) = ANY (queues))
                        OR EXISTS (SELECT 1 FROM \(unescaped: self.schema).jobs WHERE queue = \(queue) AND state = 'available')
                        OR EXISTS (SELECT 1 FROM \(unescaped: self.schema).jobs WHERE queue = \(queue))
                    ON CONFLICT (queue) DO UPDATE SET paused_at = paused_queues.paused_at
                    RETURNING xmax = 0
                    """, logger: self.logger)
                let changed = try rows.first?.decode(Bool.self) == true
                return (!rows.isEmpty, changed ? [AuditChange("pauseQueue", "queue:\(queue)", ["paused": true])] : [])
            }
        } else {
            try await audited(actor) { connection in
                let rows = try await connection.execute(
                    "DELETE FROM \(unescaped: self.schema).paused_queues WHERE queue = \(queue) RETURNING 1",
                    logger: self.logger)
                return ((), rows.isEmpty ? [] : [AuditChange("resumeQueue", "queue:\(queue)", ["paused": false])])
            }
            try await notify(["q:" + queue])
            return true
        }
    }

    // MARK: workers

    /// Registered workers, oldest first, with the jobs each runs now (`jobs_running` index).
    package func workers() async throws -> [WorkerRecord] {
        let rows = try await pool.read(
            """
            SELECT w.id, w.host, w.pid, w.queues, w.tasks, w.started_at, w.heartbeat_at,
                   ARRAY(SELECT j.id FROM \(unescaped: schema).jobs j
                         WHERE j.state = 'running' AND j.worker_id = w.id ORDER BY j.id),
                   w.heartbeat_at > now() - w.lease
            FROM \(unescaped: schema).workers w ORDER BY w.started_at, w.id
            """, logger: logger)
        var workers: [WorkerRecord] = []
        for row in rows {
            let (id, host, pid, queues, tasks, started, heartbeat, running, alive) = try row.decode(
                (String, String, Int, [String], [String], Date, Date, [Int64], Bool).self)
            workers.append(
                WorkerRecord(
                    id: id, host: host, pid: pid, queues: queues, tasks: tasks, startedAt: started,
                    heartbeatAt: heartbeat, runningJobs: running, alive: alive))
        }
        return workers
    }
}

extension JobState {
    /// The states in which a job holds its lane or waits for it: where the lane indexes
    /// (`lane_holds`, `jobs_lane_waiting`) find a lane's jobs.
    package static let laneStates: Set<JobState> = [.available, .running, .retryable, .waiting]
}
