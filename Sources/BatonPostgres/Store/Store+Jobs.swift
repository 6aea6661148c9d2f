import Baton
import Foundation
import PostgresNIO

extension Store {
    // MARK: inspect

    /// The job with this id, with why it is not running (``JobRecord/waitingFor``), or nil.
    package func job(_ id: Int64) async throws -> JobRecord? {
        let rows = try await pool.read(
            """
            SELECT \(unescaped: Self.recordColumns), \(unescaped: waitFacts), \(unescaped: progressColumn)
            FROM \(unescaped: schema).jobs j WHERE id = \(id)
            """, logger: logger)
        return try rows.first.map { try Self.jobRecord($0, waitFactsAt: Self.recordColumnCount) }
    }

    /// How many members of a stage ``jobWithMembers(_:)`` lists (a group has at most this many;
    /// a map may have a hundred thousand, counted by ``JobRecord/memberCounts``).
    package static let membersListed = 100

    /// The job with this id and its group members (the first ``membersListed`` of each stage, the
    /// first ``membersListed`` that failed after them, so that a failed run of a large map is one
    /// click away, how many are in each state, and a bounded map's elements not started yet), read
    /// in one statement: one snapshot, so that a parent is never
    /// seen still running beside the members its fan-out has just started (two statements could
    /// see either side of that commit). Nil if there is no such job.
    package func jobWithMembers(_ id: Int64) async throws -> (job: JobRecord, members: [MemberRecord])? {
        let rows = try await pool.read(
            """
            SELECT \(unescaped: Self.recordColumns), \(unescaped: waitFacts), \(unescaped: progressColumn),
                (SELECT json_agg(json_build_array(m.parent_stage, m.member_index, m.id, m.state, m.attempt,
                        CASE WHEN m.state = 'completed' THEN m.results -> -1 -> 'output' END, m.errors,
                        m.chain -> m.stage ->> 'task', m.chain -> m.stage ->> 'lane',
                        CASE WHEN m.state = 'completed' THEN m.results -> -1 ->> 'log' END)
                    ORDER BY m.parent_stage, m.member_index)
                 FROM generate_series(0, j.stage_count - 1) s(stage)
                 CROSS JOIN LATERAL (
                     SELECT * FROM \(unescaped: schema).jobs m WHERE m.id IN (
                         (SELECT f.id FROM \(unescaped: schema).jobs f
                          WHERE f.parent_id = j.id AND f.parent_stage = s.stage
                          ORDER BY f.member_index LIMIT \(unescaped: "\(Self.membersListed)"))
                         UNION
                         (SELECT f.id FROM \(unescaped: schema).jobs f
                          WHERE f.parent_id = j.id AND f.parent_stage = s.stage AND f.state IN ('discarded', 'cancelled')
                          ORDER BY f.member_index LIMIT \(unescaped: "\(Self.membersListed)")))) m)::text,
                (SELECT json_agg(json_build_array(c.parent_stage, c.state, c.n))
                 FROM (SELECT m.parent_stage, m.state, count(*) AS n FROM \(unescaped: schema).jobs m
                       WHERE m.parent_id = j.id GROUP BY m.parent_stage, m.state) c)::text,
                (SELECT json_agg(json_build_array(e.stage, e.n))
                 FROM (SELECT e.stage, count(*) AS n FROM \(unescaped: schema).map_elements e
                       WHERE e.parent_id = j.id AND e.job_id IS NULL GROUP BY e.stage) e)::text
            FROM \(unescaped: schema).jobs j WHERE id = \(id)
            """, logger: logger)
        guard let row = rows.first else { return nil }
        var job = try Self.jobRecord(row, waitFactsAt: Self.recordColumnCount)
        for count in try JSONValue(parsing: try Array(row)[Self.recordColumnCount + 3].decode(String?.self) ?? "[]")
            .arrayValue ?? []
        {
            guard let fields = count.arrayValue, fields.count == 3,
                let state = JobState(rawValue: fields[1].stringValue ?? "")
            else { continue }
            job.memberCounts[try fields[0].decode(as: Int.self), default: [:]][state] = try fields[2].decode(
                as: Int.self)
        }
        for count in try JSONValue(parsing: try Array(row)[Self.recordColumnCount + 4].decode(String?.self) ?? "[]")
            .arrayValue ?? []
        {
            guard let fields = count.arrayValue, fields.count == 2 else { continue }
            job.unstartedElements[try fields[0].decode(as: Int.self)] = try fields[1].decode(as: Int.self)
        }
        let members =
            try JSONValue(parsing: try Array(row)[Self.recordColumnCount + 2].decode(String?.self) ?? "[]").arrayValue
            ?? []
        return (
            job,
            try members.map { member in
                let fields = member.arrayValue ?? []
                guard fields.count == 10 else {
                    throw BatonError.invalidChain(path: "members", reason: "unreadable member row")
                }
                return MemberRecord(
                    stage: try fields[0].decode(as: Int.self), index: try fields[1].decode(as: Int.self),
                    id: try fields[2].decode(as: Int64.self),
                    state: JobState(rawValue: fields[3].stringValue ?? "") ?? .available,
                    attempt: try fields[4].decode(as: Int.self), output: fields[5] == .null ? nil : fields[5],
                    log: fields[9].stringValue, errors: try fields[6].decode(as: [JobRecord.AttemptError].self),
                    task: fields[7].stringValue,
                    lane: fields[8].stringValue)
            }
        )
    }

    /// The job's input (its first stage's), as stored. Primary key.
    package func jobInput(_ id: Int64) async throws -> JSONValue {
        let rows = try await pool.read(
            "SELECT input::text FROM \(unescaped: schema).jobs WHERE id = \(id)", logger: logger)
        guard let text = try rows.first?.decode(String.self) else { throw BatonError.jobNotFound(id) }
        return try JSONValue(parsing: text)
    }

    /// The job's place in its group or map, nil for a job that is no member. Primary key.
    package func memberIndex(_ id: Int64) async throws -> Int? {
        let rows = try await pool.read(
            "SELECT member_index FROM \(unescaped: schema).jobs WHERE id = \(id)", logger: logger)
        guard let row = rows.first else { throw BatonError.jobNotFound(id) }
        return try row.decode(Int?.self)
    }

    /// Marks the job as awaited, so that its end is notified, and returns it as it is now.
    package func watch(_ id: Int64) async throws -> JobRecord? {
        try await fetchJob(
            """
            UPDATE \(unescaped: schema).jobs SET watched = true WHERE id = \(id)
            RETURNING \(unescaped: Self.recordColumns)
            """, changes: true)
    }

    /// How many `recordColumns` are: what a statement selects after them starts there.
    static let recordColumnCount = 23
    static let recordColumns = """
        id, queue, priority::int, state::text, run_at, created_at, attempted_at, finished_at, chain::text, stage,
        attempt, input::text, results::text, errors::text, metadata::text, lane, worker_id, parent_id,
        member_index, idempotency_key, enqueued_by, fair_key, fair_weight
        """

    /// A column of `j`'s ``WaitFacts`` as JSON text, null once it has finished: whether its queue
    /// is paused; how many live workers serve the queue and, of those, its current task; for a job
    /// waiting in a lane, the lane's head and how many wait ahead of it (both index look-ups).
    private var waitFacts: String {
        """
        CASE WHEN j.state IN ('scheduled', 'available', 'retryable', 'waiting') THEN (
            SELECT json_build_object(
                'paused', EXISTS (SELECT 1 FROM \(schema).paused_queues p WHERE p.queue = j.queue),
                'queue_workers', count(*),
                'task_workers', count(*) FILTER (WHERE j.chain -> j.stage ->> 'task' = ANY (w.tasks)),
                'features', j.features,
                'feature_workers', count(*) FILTER (WHERE j.features IS NULL OR j.features <@ w.features),
                'pending', j.pending, 'snoozed', j.snoozed,
                -- the rate limit of an available stage: key, rate, period, tokens now, ms to the next
                'rate', (SELECT json_build_array(r.key, r.rate, r.per_ms, t.tokens,
                                                 (1 - t.tokens) * r.per_ms / r.rate)
                         FROM \(schema).rate_limits r
                         LEFT JOIN \(schema).rate_tokens b ON b.key = r.key,
                              LATERAL (SELECT least(r.burst, coalesce(b.tokens, r.tokens)
                                                             + extract(epoch FROM now() - coalesce(b.refilled_at, r.refilled_at))
                                                             * 1000.0 * r.rate / r.per_ms) AS tokens) t
                         WHERE j.state = 'available' AND j.rate_key <> '' AND r.key = j.rate_key),
                -- an available stage in a fair queue: the keys with stages waiting there, and its
                -- key's stages (each counted only so far, through `ready_keys`)
                'fair', (SELECT json_build_array(
                             (SELECT count(*) FROM (
                                  WITH RECURSIVE k(key) AS (
                                      (SELECT r.fair_key FROM \(schema).ready r
                                       WHERE r.queue = j.queue AND r.fair_key IS NOT NULL ORDER BY r.fair_key LIMIT 1)
                                      UNION ALL
                                      SELECT (SELECT r.fair_key FROM \(schema).ready r
                                              WHERE r.queue = j.queue AND r.fair_key > k.key ORDER BY r.fair_key LIMIT 1)
                                      FROM k WHERE k.key IS NOT NULL)
                                  SELECT 1 FROM k WHERE k.key IS NOT NULL
                                  LIMIT \(WaitFacts.FairShareFacts.countedKeys + 1)) n),
                             (SELECT count(*) FROM (
                                  SELECT 1 FROM \(schema).ready r
                                  WHERE r.queue = j.queue AND r.fair_key = coalesce(j.fair_key, '')
                                  LIMIT \(WaitFacts.FairShareFacts.countedStages + 1)) n),
                             f.key_from)
                         FROM \(schema).fair_queues f
                         WHERE j.state = 'available' AND f.queue = j.queue),
                -- a holder waiting to retry (it keeps its place), else the oldest; and how many hold it
                'head', (SELECT json_build_array(h.id, h.state, h.run_at, count(*) OVER ())
                         FROM \(laneHolders(job: "h")) WHERE j.state = 'waiting' AND o.lane = j.lane
                         ORDER BY h.state = 'retryable' DESC, h.lane_ready_at, h.id LIMIT 1),
                'ahead', (SELECT count(*) FROM \(schema).jobs a
                          WHERE j.state = 'waiting' AND a.lane = j.lane AND a.state = 'waiting'
                            AND (a.lane_ready_at, a.id) < (j.lane_ready_at, j.id)),
                -- a holder waiting to retry: how many wait in its lane meanwhile
                'behind', (SELECT count(*) FROM \(schema).jobs b
                           WHERE j.state = 'retryable' AND j.lane IS NOT NULL AND b.lane = j.lane
                             AND b.state = 'waiting'))
            FROM \(schema).workers w
            WHERE j.queue = ANY (w.queues) AND w.heartbeat_at > now() - w.lease)::text
        END
        """
    }

    private func fetchJob(_ query: PostgresQuery, changes: Bool) async throws -> JobRecord? {
        let rows = try await changes ? pool.execute(query, logger: logger) : pool.read(query, logger: logger)
        return try rows.first.map { try Self.jobRecord($0) }
    }

    /// A row that starts with `recordColumns`, with `waitFacts` at `waitFactsAt` if given and
    /// `progressColumn` right after it.
    private static func jobRecord(_ row: PostgresRow, waitFactsAt factsColumn: Int? = nil) throws -> JobRecord {
        do {
            let (id, queue, priority, state, runAt, createdAt, attemptedAt, finishedAt, chain, stage) =
                try row.decode((Int64, String, Int, String, Date, Date, Date?, Date?, String, Int).self)
            let columns = Array(row)
            func text(_ index: Int) throws -> String? { try columns[index].decode(String?.self) }
            var job = JobRecord(
                id: id, queue: queue, priority: priority, state: JobState(rawValue: state) ?? .available,
                runAt: runAt, createdAt: createdAt, attemptedAt: attemptedAt, finishedAt: finishedAt,
                // A chain written around the Swift API may not decode: show the job anyway.
                chain: (try? JSONValue(parsing: chain).decode(as: [StageSpec].self)) ?? [], stage: stage,
                attempt: try columns[10].decode(Int.self),
                input: try JSONValue(parsing: try text(11) ?? "null"),
                results: try JSONValue(parsing: try text(12) ?? "[]").decode(as: [JobRecord.StageResult].self),
                errors: try JSONValue(parsing: try text(13) ?? "[]").decode(as: [JobRecord.AttemptError].self),
                metadata: try JSONValue(parsing: try text(14) ?? "{}"),
                lane: try text(15), workerID: try text(16),
                parentID: try columns[17].decode(Int64?.self), memberIndex: try columns[18].decode(Int?.self),
                idempotencyKey: try text(19), enqueuedBy: try text(20))
            job.fairKey = try text(21)
            job.fairWeight = try columns[22].decode(Double?.self)
            if let factsColumn, let facts = try text(factsColumn) {
                job.waitingFor = WaitReason.reasons(for: job, facts: try waitFacts(JSONValue(parsing: facts)))
            }
            if let factsColumn { job.progress = try progress(try text(factsColumn + 1)) }
            return job
        }
    }

    /// `waitFacts` as read.
    private static func waitFacts(_ json: JSONValue) throws -> WaitFacts {
        var head: WaitFacts.LaneHead?
        if let fields = json["head"]?.arrayValue, fields.count == 4 {
            head = WaitFacts.LaneHead(
                id: try fields[0].decode(as: Int64.self),
                state: JobState(rawValue: fields[1].stringValue ?? "") ?? .available,
                runAt: RFC3339.parse(fields[2].stringValue ?? "") ?? Date(),
                held: try fields[3].decode(as: Int.self))
        }
        var facts = WaitFacts(
            queuePaused: json["paused"] == .bool(true),
            queueWorkers: try json["queue_workers"]?.decode(as: Int.self) ?? 0,
            taskWorkers: try json["task_workers"]?.decode(as: Int.self) ?? 0, laneHead: head,
            laneAhead: try json["ahead"]?.decode(as: Int.self) ?? 0,
            laneBehind: try json["behind"]?.decode(as: Int.self) ?? 0,
            pendingMembers: json["pending"] == .null ? nil : try json["pending"]?.decode(as: Int.self),
            snoozed: json["snoozed"] == .bool(true),
            rateLimit: try json["rate"]?.arrayValue.flatMap { fields in
                guard fields.count == 5, let key = fields[0].stringValue else { return nil }
                return WaitFacts.RateLimitFacts(
                    key: key, rate: try fields[1].decode(as: Int.self),
                    per: .milliseconds(try fields[2].decode(as: Int64.self)),
                    tokens: fields[3].numberValue?.double ?? 0,
                    nextIn: .milliseconds(Int64((fields[4].numberValue?.double ?? 0).rounded(.up))))
            })
        facts.features = json["features"]?.arrayValue?.compactMap(\.stringValue) ?? []
        if let fields = json["fair"]?.arrayValue, fields.count == 3 {
            facts.fairShare = WaitFacts.FairShareFacts(
                keys: try fields[0].decode(as: Int.self), stages: try fields[1].decode(as: Int.self),
                keyFrom: fields[2].stringValue)
        }
        facts.featureWorkers = try json["feature_workers"]?.decode(as: Int.self) ?? 0
        return facts
    }

    /// Ids of the group members of `parent` at `stage`, in member order.
    package func members(of parent: Int64, stage: Int) async throws -> [Int64] {
        let rows = try await pool.read(
            """
            SELECT id FROM \(unescaped: schema).jobs WHERE parent_id = \(parent) AND parent_stage = \(stage)
            ORDER BY member_index
            """, logger: logger)
        var ids: [Int64] = []
        for row in rows {
            let id = try row.decode(Int64.self)
            ids.append(id)
        }
        return ids
    }

    // MARK: cancel

    /// Cancels the job (and its unfinished group members) unless it has finished; a lane it held
    /// moves on. Workers running it are told to stop. Returns the ids cancelled (empty if the job
    /// had already finished); throws `BatonError.jobNotFound` for an unknown id. With an actor, the
    /// cancel is recorded in the audit trail.
    @discardableResult
    package func cancel(_ id: Int64, by actor: AuditActor? = nil) async throws -> [Int64] {
        let rows = try await audited(actor) { connection in
            let rows = try await connection.execute(
                "SELECT id, worker_id, watched FROM \(unescaped: self.schema).cancel_job(\(id))", logger: self.logger)
            // The queue, for the record only: no read without an actor.
            guard actor != nil, !rows.isEmpty, let queue = try await self.queue(of: id, on: connection) else {
                return (rows, [])
            }
            let change = AuditChange(
                "cancelJob", "job:\(id)",
                ["queue": .string(queue), "to": "cancelled", "cancelled": .number(JSONNumber(rows.count))])
            return (rows, [change])
        }
        var cancelled: [Int64] = []
        var payloads: [String] = []
        for row in rows {
            let (job, worker, watched) = try row.decode((Int64, String?, Bool).self)
            cancelled.append(job)
            if worker != nil { payloads.append("c:\(job)") }
            if watched { payloads.append("f:\(job)") }
        }
        if cancelled.isEmpty, try await self.job(id) == nil { throw BatonError.jobNotFound(id) }
        try await notify(payloads)
        return cancelled
    }

    /// The job's own queue (where its stages run unless one names another), a group member's its
    /// top job's; nil if there is no such job: what a token limited to queues is judged by.
    package func ownQueue(of id: Int64) async throws -> String? {
        try await pool.read(
            """
            WITH RECURSIVE up AS (
                SELECT id, parent_id, coalesce(home_queue, queue) AS queue
                FROM \(unescaped: schema).jobs WHERE id = \(id)
                UNION ALL
                SELECT j.id, j.parent_id, coalesce(j.home_queue, j.queue)
                FROM up JOIN \(unescaped: schema).jobs j ON j.id = up.parent_id
            ) SELECT queue FROM up WHERE parent_id IS NULL
            """, logger: logger
        ).first?.decode(String.self)
    }

    /// A job's own queue, read in a change's transaction for its audit record.
    func queue(of id: Int64, on connection: PostgresConnection) async throws -> String? {
        try await connection.execute(
            "SELECT coalesce(home_queue, queue) FROM \(unescaped: schema).jobs WHERE id = \(id)", logger: logger
        ).first?.decode(String.self)
    }
}
