import Baton
import Foundation
import PostgresNIO

extension Store {
    /// What one promotion of due jobs did (``promoteDue(limit:within:)``).
    package struct Promotion: Sendable {
        /// The queues with jobs available now.
        package var queues: [String]
        /// How many jobs it promoted: the limit means there may be more.
        package var promoted: Int
        /// How long until the next job is due, by the database's clock; nil: none is.
        package var nextDue: Duration?
    }

    /// Makes scheduled and retryable jobs available, `limit` at most, of those due since `within`
    /// ago (nil: whenever; `promote_due_from` says why both), or joins them to their lanes.
    package func promoteDue(limit: Int, within: Duration?) async throws -> Promotion {
        let milliseconds = within.map { Int64($0 / .milliseconds(1)) }
        let rows = try await pool.execute(
            """
            SELECT queues, promoted, next_due_in FROM \(unescaped: schema).promote_due_from(
                \(limit)::int, now() - \(milliseconds)::bigint * interval '1 millisecond')
            """, logger: logger)
        guard let row = rows.first else { return Promotion(queues: [], promoted: 0, nextDue: nil) }
        let (queues, promoted, nextDue) = try row.decode(([String]?, Int, Double?).self)
        return Promotion(queues: queues ?? [], promoted: promoted, nextDue: nextDue.map { .seconds($0) })
    }

    /// Empties the slots of `ready` that rows are no longer written to (`rotate_ready`, migration 20):
    /// their rows not yet claimed, `mostMoved` at most, move to the current slot, and the rest, the
    /// rows claims deleted, goes with a truncation, which a held xmin horizon does not stop. Returns
    /// the slots emptied.
    @discardableResult package func rotateReady(mostMoved: Int = 2_000) async throws -> [Int] {
        try await slotsEmptied(by: "rotate_ready(\(mostMoved)::int)")
    }

    /// Empties the slots of `lane_holds` that rows are no longer written to (`rotate_lane_holds`,
    /// migration 21): the holders in them move to `lane_holds_long`, and the rows of holders that
    /// stopped holding go with a truncation. Returns the slots emptied.
    @discardableResult package func rotateLaneHolds() async throws -> [Int] {
        try await slotsEmptied(by: "rotate_lane_holds()")
    }

    /// Empties the slots of `rate_tokens` that rows are no longer written to (`rotate_rate_tokens`,
    /// migration 22): each rate limit's bucket moves to the current slot, and the versions its
    /// claims left go with a truncation. Returns the slots emptied.
    @discardableResult package func rotateRateTokens() async throws -> [Int] {
        try await slotsEmptied(by: "rotate_rate_tokens()")
    }

    /// Calls one of the rotations (`call`, the function and its arguments, none bound) and returns
    /// the slots it emptied.
    private func slotsEmptied(by call: String) async throws -> [Int] {
        try await pool.execute("SELECT s::int FROM \(unescaped: schema).\(unescaped: call) AS s", logger: logger)
            .map { try $0.decode(Int.self) }
    }

    /// Looks at every lane's floor, where its admissions start looking for waiting jobs
    /// (`review_lane_floors` in the schema), `batch` lanes a transaction: a lane with a job waiting
    /// below its floor (the database's clock stepped back) loses it and admits what it has room
    /// for; the floors of lanes that admitted nothing for an hour go. Returns how many went.
    package func reviewLaneFloors(batch: Int = 100) async throws -> Int {
        var after: String?
        var deleted = 0
        while true {
            let rows = try await pool.execute(
                "SELECT last, deleted FROM \(unescaped: schema).review_lane_floors(\(after)::text, \(batch)::int)",
                logger: logger)
            guard let row = rows.first else { return deleted }
            let (last, count) = try row.decode((String?, Int).self)
            deleted += count
            guard let last else { return deleted }
            after = last
        }
    }

    /// Running stages of the workers that went silent recently: their last heartbeat is older than
    /// `lease` and younger than `lease + within`. Each such worker's own range of `jobs_running`
    /// is read, not the index whole: during a held xmin horizon the index keeps an entry for every
    /// job run since the hold began, and a look at all of them every few seconds grew with the
    /// hold (docs/storage.md#the-rescuer). Workers silent for longer, and jobs whose worker has
    /// no row, are the sweep's (``strayStages(lease:limit:)``).
    package func lostStages(lease: Duration, within: Duration, limit: Int) async throws -> [LostStage] {
        let rows = try await pool.read(
            """
            SELECT j.id, w.id, j.stage, j.attempt, j.chain::text, j.queue, j.metadata::text
            FROM \(unescaped: schema).workers w
            CROSS JOIN LATERAL (
                SELECT id, stage, attempt, chain, queue, metadata FROM \(unescaped: schema).jobs
                WHERE worker_id = w.id AND state = 'running' LIMIT \(limit)) j
            WHERE w.heartbeat_at <= now() - \(lease.milliseconds) * interval '1 millisecond'
              AND w.heartbeat_at > now() - \((lease + within).milliseconds) * interval '1 millisecond'
            LIMIT \(limit)
            """, logger: logger)
        return try rows.map { try Self.lostStage($0) }
    }

    /// A row of `lostStages` or `strayStages`: id, worker, stage, attempt, chain, queue, metadata.
    private static func lostStage(_ row: PostgresRow) throws -> LostStage {
        let cells = Array(row)
        let stage = try cells[2].decode(Int.self)
        return LostStage(
            jobID: try cells[0].decode(Int64.self), workerID: try cells[1].decode(String?.self) ?? "",
            queue: try cells[5].decode(String.self),
            metadata: (try? JSONValue(parsing: try cells[6].decode(String.self))) ?? [:], stage: stage,
            attempt: try cells[3].decode(Int.self),
            chain: StoredChain.decode(try cells[4].decode(String.self), stage: stage).chain)
    }

    /// Every running stage that no live worker answers for, in one scan of `jobs_running`:
    /// `lost`, its worker silent for longer than `lease` or without a row (forgotten, or never
    /// registered); or not lost but orphaned, running under a live worker that was claimed for
    /// it more than `lease` before the worker's last heartbeat, which did not list it among the
    /// jobs it holds (the claim's answer was lost with its connection: the worker never ran it).
    /// The scan grows with a held xmin horizon; the rescuer sweeps seldom
    /// (docs/storage.md#the-rescuer).
    package func strayStages(lease: Duration, limit: Int) async throws -> [(stage: LostStage, lost: Bool)] {
        let rows = try await pool.read(
            """
            SELECT j.id, j.worker_id, j.stage, j.attempt, j.chain::text, j.queue, j.metadata::text, w.id IS NULL
            FROM \(unescaped: schema).jobs j
            LEFT JOIN \(unescaped: schema).workers w
                ON w.id = j.worker_id AND w.heartbeat_at > now() - \(lease.milliseconds) * interval '1 millisecond'
            WHERE j.state = 'running' AND (w.id IS NULL OR (
                j.attempted_at < w.heartbeat_at - \(lease.milliseconds) * interval '1 millisecond'
                AND NOT (j.id = ANY (w.holds))))
            LIMIT \(limit)
            """, logger: logger)
        return try rows.map { row in (try Self.lostStage(row), try Array(row)[7].decode(Bool.self)) }
    }

    /// Deletes up to `limit` jobs that finished in `state` longer than `retention` ago (with their
    /// group members and tags). Uses `jobs_finished` (state, finished_at): one state's old jobs, not the
    /// others' (a day's completed jobs are not walked past two weeks of dead letters). Returns how
    /// many were deleted.
    package func prune(_ state: JobState, retention: Duration, limit: Int) async throws -> Int {
        let rows = try await pool.execute(
            """
            WITH gone AS (
                DELETE FROM \(unescaped: schema).jobs WHERE id IN (
                    SELECT id FROM \(unescaped: schema).jobs
                    WHERE state = \(unescaped: "'\(state.rawValue)'") AND parent_id IS NULL
                      AND finished_at < now() - \(retention.milliseconds) * interval '1 millisecond'
                      AND NOT \(unescaped: schema).unfinished_members(id)
                    LIMIT \(limit))
                RETURNING id, chain, metadata)
            SELECT count(*)::int,
                   \(unescaped: schema).forget_tags(array_agg(id), array_agg(chain), array_agg(metadata))::text
            FROM gone
            """, logger: logger)
        for row in rows {
            let (count, _) = try row.decode((Int, String?).self)
            return count
        }
        return 0
    }

    /// Forgets workers silent for longer than `after`; their jobs were rescued long before.
    package func forgetWorkers(silentFor after: Duration) async throws {
        try await pool.execute(
            """
            DELETE FROM \(unescaped: schema).workers
            WHERE heartbeat_at < now() - \(after.milliseconds) * interval '1 millisecond'
            """, logger: logger)
    }

    /// Takes or renews the lead of `chore` for `worker` for `lease`; false if another worker
    /// holds an unexpired lead.
    package func lead(_ chore: String, worker: String, lease: Duration) async throws -> Bool {
        let rows = try await pool.execute(
            """
            INSERT INTO \(unescaped: schema).leaders (name, worker_id, expires_at)
            VALUES (\(chore), \(worker), now() + \(lease.milliseconds) * interval '1 millisecond')
            ON CONFLICT (name) DO UPDATE SET worker_id = excluded.worker_id, expires_at = excluded.expires_at
            WHERE leaders.worker_id = excluded.worker_id OR leaders.expires_at < now()
            RETURNING 1
            """, logger: logger)
        return !rows.isEmpty
    }
}

extension Store {
    // MARK: workers

    /// Records (or refreshes) a worker: what it serves, the chain features it reads (all this
    /// version's unless told), its lease (it counts as live while its last heartbeat is younger),
    /// and its first heartbeat.
    package func registerWorker(
        id: String, host: String, pid: Int, queues: [String], tasks: [String], lease: Duration = .seconds(15),
        features: [String] = ChainDefinition.readableFeatures.sorted()
    ) async throws {
        try await pool.execute(
            """
            INSERT INTO \(unescaped: schema).workers (id, host, pid, queues, tasks, lease, features)
            VALUES (\(id), \(host), \(pid), \(queues), \(tasks), \(lease.milliseconds) * interval '1 millisecond',
                    \(features))
            ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid, queues = excluded.queues,
                tasks = excluded.tasks, lease = excluded.lease, features = excluded.features, heartbeat_at = now()
            """, logger: logger)
    }

    /// Extends the lease of every job the worker runs, and records which jobs those are: `holds`
    /// is asked once a connection is in hand, so that the list is no older than the heartbeat.
    /// `alive` is false if the worker's row is gone (it was declared lost): the caller registers
    /// again. `cancelled`: the held jobs cancelled meanwhile, whose notice the worker may have
    /// missed (its LISTEN connection was down). Primary key look-ups.
    package func heartbeat(worker: String, holds: @escaping @Sendable () -> [Int64]) async throws
        -> (alive: Bool, cancelled: [Int64])
    {
        try await pool.withConnection { connection in
            let held = holds()
            let rows = try await connection.execute(
                """
                WITH beat AS (
                    UPDATE \(unescaped: schema).workers SET heartbeat_at = now(), holds = \(held)
                    WHERE id = \(worker) RETURNING 1)
                SELECT EXISTS (SELECT 1 FROM beat), coalesce(array_agg(id), '{}')
                FROM \(unescaped: schema).jobs WHERE id = ANY(\(held)) AND state = 'cancelled'
                """, logger: logger)
            guard let row = rows.first else { return (false, []) }
            let (alive, cancelled) = try row.decode((Bool, [Int64]).self)
            return (alive, cancelled)
        }
    }

    /// Removes a stopping worker, and gives up any lead it holds.
    package func removeWorker(id: String) async throws {
        try await pool.execute(
            """
            WITH gone AS (DELETE FROM \(unescaped: schema).leaders WHERE worker_id = \(id))
            DELETE FROM \(unescaped: schema).workers WHERE id = \(id)
            """, logger: logger)
    }

    /// The registered workers seen within `window` or their own lease, and the paused queues:
    /// what the control plane checks an enqueue against. One statement on two small tables.
    package func workersServing(within window: Duration) async throws -> WorkersServing {
        let rows = try await pool.read(
            """
            SELECT (SELECT coalesce(json_agg(json_build_array(queues, tasks, heartbeat_at > now() - lease)), '[]')
                    FROM \(unescaped: schema).workers
                    WHERE heartbeat_at > now() - greatest(lease, \(window.milliseconds) * interval '1 millisecond'))::text,
                   (SELECT coalesce(array_agg(queue), '{}') FROM \(unescaped: schema).paused_queues)
            """, logger: logger)
        guard let row = rows.first else { return WorkersServing(workers: [], paused: []) }
        let (workers, paused) = try row.decode((String, [String]).self)
        return WorkersServing(
            workers: try (JSONValue(parsing: workers).arrayValue ?? []).map { worker in
                let fields = worker.arrayValue ?? []
                guard fields.count == 3 else {
                    throw BatonError.invalidChain(path: "workers", reason: "unreadable worker row")
                }
                return WorkersServing.Worker(
                    queues: try fields[0].decode(as: [String].self),
                    tasks: Set(try fields[1].decode(as: [String].self)),
                    live: fields[2] == .bool(true))
            }, paused: Set(paused))
    }
}
