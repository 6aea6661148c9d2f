import Baton
import Foundation
import PostgresNIO

/// Lanes: what holds and waits in each, and the widths operators set.
extension Store {
    /// Lanes with a holder or jobs waiting (only those with a holder that waits to retry, if
    /// `blocked`), by name after `after`. The page's names first (from `lane_holds` and
    /// `jobs_lane_waiting`, in order, stopping at `limit`), then each one's holders, waiting count
    /// and width: the cost follows the page, not the number of lanes.
    package func lanes(after: String? = nil, limit: Int = 100, blocked: Bool = false) async throws -> [LaneStatus] {
        let rows = try await pool.read(
            """
            WITH names AS (
                SELECT lane FROM (
                    (SELECT DISTINCT o.lane FROM \(unescaped: laneHolders(job: "j"))
                     WHERE (\(after)::text IS NULL OR o.lane > \(after)) AND (NOT \(blocked) OR j.state = 'retryable')
                     ORDER BY o.lane LIMIT \(limit))
                    UNION
                    (SELECT DISTINCT lane FROM \(unescaped: schema).jobs
                     WHERE NOT \(blocked) AND lane IS NOT NULL AND state = 'waiting'
                       AND (\(after)::text IS NULL OR lane > \(after))
                     ORDER BY lane LIMIT \(limit))
                ) u ORDER BY lane LIMIT \(limit)
            )
            SELECT n.lane, w.n, held.n, \(unescaped: schema).lane_width(n.lane),
                   h.id, h.queue, h.state::text, h.stage, h.chain -> h.stage ->> 'task', h.attempt,
                   h.run_at, h.errors -> -1 ->> 'error'
            FROM names n
            -- the head: a holder waiting to retry (it blocks its slot), else the oldest holder
            LEFT JOIN LATERAL (
                SELECT j.* FROM \(unescaped: laneHolders(job: "j")) WHERE o.lane = n.lane
                ORDER BY j.state = 'retryable' DESC, j.lane_ready_at, j.id LIMIT 1) h ON true
            CROSS JOIN LATERAL (
                SELECT count(DISTINCT j.id)::int AS n FROM \(unescaped: laneHolders(job: "j"))
                WHERE o.lane = n.lane) held
            CROSS JOIN LATERAL (
                SELECT count(*)::int AS n FROM \(unescaped: schema).jobs j
                WHERE j.lane = n.lane AND j.state = 'waiting') w
            ORDER BY n.lane
            """, logger: logger)
        var lanes: [LaneStatus] = []
        for row in rows {
            let (lane, waiting, held, width, id, queue, state, stage, task, attempt, runAt, error) =
                try row.decode(
                    (String, Int, Int, Int, Int64?, String?, String?, Int?, String?, Int?, Date?, String?).self)
            var head: LaneStatus.Head?
            if let id, let queue, let state, let stage, let attempt, let runAt {
                head = LaneStatus.Head(
                    id: id, queue: queue, state: JobState(rawValue: state) ?? .available, stage: stage, task: task,
                    attempt: attempt, runAt: runAt, lastError: error)
            }
            lanes.append(LaneStatus(lane: lane, head: head, held: held, width: width, waiting: waiting))
        }
        return lanes
    }

    /// How many lanes have a holder or jobs waiting, and how many of them are blocked (a holder
    /// failed and waits to retry): two index scans (`lane_holds`, `jobs_lane_waiting`) and the
    /// retrying jobs.
    package func laneCounts() async throws -> (lanes: Int, blocked: Int) {
        let rows = try await pool.read(
            """
            SELECT (SELECT count(*) FROM (
                        SELECT o.lane FROM \(unescaped: laneHolders(job: "j"))
                        UNION
                        SELECT lane FROM \(unescaped: schema).jobs WHERE lane IS NOT NULL AND state = 'waiting') l)::int,
                   (SELECT count(DISTINCT lane) FROM \(unescaped: schema).jobs
                    WHERE lane IS NOT NULL AND state = 'retryable')::int
            """, logger: logger)
        for row in rows { return try row.decode((Int, Int).self) }
        return (0, 0)
    }
}

/// Lane widths: set through the API or a settings file, read by every hand-over (`lane_width`).
extension Store {
    /// Every lane setting, by name.
    package func laneSettings() async throws -> [LaneSetting] {
        let rows = try await pool.read(
            "SELECT lane, width, source, updated_at FROM \(unescaped: schema).lane_settings ORDER BY lane",
            logger: logger)
        return try rows.map { row in
            let (lane, width, source, updated) = try row.decode((String, Int, String, Date).self)
            return LaneSetting(
                lane: lane, width: width, source: SettingSource(rawValue: source) ?? .api, updatedAt: updated)
        }
    }

    /// Sets the width of `lane` (a lane, or a prefix ending in `*`), or deletes its setting
    /// (`width` nil). The lanes it widens admit their waiting jobs in the same transaction.
    package func setLaneWidth(
        _ width: Int?, lane: String, source: SettingSource = .api, by actor: AuditActor? = nil
    ) async throws {
        try Self.check(width, lane: lane)
        let queues = try await audited(actor) { connection in
            // The width before, for the record only: no read without an actor.
            guard actor != nil else {
                return (try await self.setLaneWidth(width, lane: lane, source: source, on: connection), [])
            }
            let before = try await connection.execute(
                "SELECT width FROM \(unescaped: self.schema).lane_settings WHERE lane = \(lane)", logger: self.logger
            ).first?.decode(Int.self)
            let queues = try await self.setLaneWidth(width, lane: lane, source: source, on: connection)
            // Recorded when the width changed: setting it again to what it was changes nothing.
            guard before != width else { return (queues, []) }
            let change = AuditChange(
                width == nil ? "deleteLaneSetting" : "setLaneSetting", "lane:\(lane)",
                [
                    "from": before.map { .number(JSONNumber($0)) } ?? nil,
                    "width": width.map { .number(JSONNumber($0)) } ?? nil,
                ])
            return (queues, [change])
        }
        if !queues.isEmpty { try await notify(queues.map { "q:" + $0 }) }
    }

    /// Makes the lane settings owned by the settings file exactly `settings`: saves each, deletes
    /// the file's others, in one transaction.
    package func syncSettingsLanes(_ settings: [LaneSetting]) async throws {
        for setting in settings { try Self.check(setting.width, lane: setting.lane) }
        let queues = try await pool.withTransaction(logger: logger) { connection in
            var queues: Set<String> = []
            for setting in settings {
                queues.formUnion(
                    try await self.setLaneWidth(setting.width, lane: setting.lane, source: .settings, on: connection))
            }
            let dropped = try await connection.execute(
                """
                SELECT lane FROM \(unescaped: self.schema).lane_settings
                WHERE source = 'settings' AND lane <> ALL(\(settings.map(\.lane)))
                """, logger: self.logger)
            for row in dropped {
                let lane = try row.decode(String.self)
                queues.formUnion(try await self.setLaneWidth(nil, lane: lane, source: .settings, on: connection))
            }
            return queues
        }
        if !queues.isEmpty { try await notify(queues.sorted().map { "q:" + $0 }) }
    }

    private func setLaneWidth(
        _ width: Int?, lane: String, source: SettingSource, on connection: PostgresConnection
    ) async throws -> Set<String> {
        let rows = try await connection.execute(
            "SELECT queue FROM \(unescaped: schema).save_lane_setting(\(lane), \(width)::int, \(source.rawValue))",
            logger: logger)
        return Set(try rows.map { try $0.decode(String.self) })
    }

    /// Checked before the transaction, so that a refusal reaches the caller as itself (a 400
    /// naming the field), not as the transaction's failure.
    private static func check(_ width: Int?, lane: String) throws {
        try ChainDefinition.checkName(lane, path: "lane", what: "lane")
        if let width, !LaneSetting.widths.contains(width) {
            throw BatonError.invalidChain(
                path: "width",
                reason: "a lane's width is \(LaneSetting.widths.lowerBound) to \(LaneSetting.widths.upperBound)")
        }
    }
}

extension Store {
    /// A lane's holders, for a `FROM`: the rows of `lane_holds` (alias `o`) whose jobs (alias
    /// `job`) still hold that lane and slot. Each job is found by its key alone: the check, `IS
    /// TRUE`, is no index condition, so that no plan reads `jobs_state_id`'s holding states, which
    /// keep an entry of every job that held since vacuum last ran.
    func laneHolders(job: String) -> String {
        """
        \(schema).lane_holds o JOIN \(schema).jobs \(job) ON \(job).id = o.job_id
            AND (\(job).lane = o.lane AND \(job).lane_slot = o.lane_slot
                 AND \(job).state IN ('available', 'running', 'retryable')) IS TRUE
        """
    }
}
