import Baton
import Foundation
import PostgresNIO

/// Schedules: saved from the settings file or the API, run by the maintenance leader's
/// `ScheduleRunner`.
extension Store {
    private static let scheduleColumns = """
        name, cron, time_zone, misfire, paused, source, request::text, queue, priority, metadata::text, input::text,
        chain::text, next_run_at, last_run_at, last_job_id, created_at, updated_at, fair_key, fair_weight
        """

    /// Creates or replaces `schedule`, owned by `source`. Its next slot is computed from `now`
    /// unless it keeps its expression, zone and pause (an edit of what it runs keeps its place).
    ///
    /// With `replacing`, a schedule of that name is replaced only if its queue is one of those
    /// (checked by the upsert itself, so that no concurrent save slips between): false if not,
    /// and nothing is saved.
    @discardableResult
    package func saveSchedule(
        _ schedule: ScheduleDefinition, source: ScheduleRecord.Source, now: Date, replacing queues: [String]? = nil,
        by actor: AuditActor? = nil
    ) async throws -> Bool {
        try await audited(actor) { connection in
            guard try await self.saveSchedule(schedule, source: source, now: now, replacing: queues, on: connection)
            else { return (false, []) }
            let change = AuditChange(
                "putSchedule", "schedule:\(schedule.name)",
                [
                    "cron": .string(schedule.cron.description), "time_zone": .string(schedule.timeZone.identifier),
                    "queue": .string(schedule.job.queue), "paused": .bool(schedule.paused),
                ])
            return (true, [change])
        }
    }

    @discardableResult
    private func saveSchedule(
        _ schedule: ScheduleDefinition, source: ScheduleRecord.Source, now: Date, replacing queues: [String]? = nil,
        on connection: PostgresConnection
    ) async throws -> Bool {
        try ChainDefinition.checkName(schedule.name, path: "name", what: "schedule name")
        _ = try validated(schedule.job)
        let next = schedule.cron.next(after: now, in: schedule.timeZone)
        let chain = JSONValue.array(schedule.job.chain.stages.map(\.json)).jsonText
        return try await !connection.execute(
            """
            INSERT INTO \(unescaped: schema).schedules AS s
                (name, cron, time_zone, misfire, paused, source, request, queue, priority, metadata, input, chain,
                 next_run_at, fair_key, fair_weight)
            VALUES (\(schedule.name), \(schedule.cron.description), \(schedule.timeZone.identifier),
                    \(schedule.misfire.name), \(schedule.paused), \(source.rawValue), \(schedule.request?.jsonText)::jsonb,
                    \(schedule.job.queue), \(schedule.job.priority), \(schedule.job.metadata.jsonText)::jsonb,
                    \(schedule.job.chain.input.jsonText)::jsonb, \(chain)::jsonb, \(next), \(schedule.job.fairKey),
                    \(schedule.job.fairWeight))
            ON CONFLICT (name) DO UPDATE SET
                cron = excluded.cron, time_zone = excluded.time_zone, misfire = excluded.misfire,
                paused = excluded.paused, source = excluded.source, request = excluded.request,
                queue = excluded.queue, priority = excluded.priority, metadata = excluded.metadata,
                input = excluded.input, chain = excluded.chain, fair_key = excluded.fair_key,
                fair_weight = excluded.fair_weight, updated_at = now(),
                next_run_at = CASE
                    WHEN s.cron = excluded.cron AND s.time_zone = excluded.time_zone AND s.paused = excluded.paused
                    THEN s.next_run_at ELSE excluded.next_run_at END
            WHERE \(queues)::text[] IS NULL OR s.queue = ANY (\(queues))
            RETURNING 1
            """, logger: logger
        ).isEmpty
    }

    /// Makes the schedules owned by the settings file exactly `schedules`: saves each, deletes the
    /// file's others, in one transaction.
    package func syncSettingsSchedules(_ schedules: [ScheduleDefinition], now: Date) async throws {
        try await pool.withTransaction(logger: logger) { connection in
            for schedule in schedules {
                try await self.saveSchedule(schedule, source: .settings, now: now, on: connection)
            }
            _ = try await connection.execute(
                """
                DELETE FROM \(unescaped: self.schema).schedules
                WHERE source = 'settings' AND name <> ALL(\(schedules.map(\.name)))
                """, logger: self.logger)
        }
    }

    /// Every schedule, by name.
    package func schedules() async throws -> [ScheduleRecord] {
        try await pool.read(
            "SELECT \(unescaped: Self.scheduleColumns) FROM \(unescaped: schema).schedules ORDER BY name",
            logger: logger
        ).compactMap(Self.schedule)
    }

    /// The schedule named `name`, if there is one.
    package func schedule(_ name: String) async throws -> ScheduleRecord? {
        try await pool.read(
            "SELECT \(unescaped: Self.scheduleColumns) FROM \(unescaped: schema).schedules WHERE name = \(name)",
            logger: logger
        ).compactMap(Self.schedule).first
    }

    /// Schedules not paused whose next slot is at or before `now`, soonest first (`schedules_due`).
    package func dueSchedules(now: Date, limit: Int = 100) async throws -> [ScheduleRecord] {
        try await pool.read(
            """
            SELECT \(unescaped: Self.scheduleColumns) FROM \(unescaped: schema).schedules
            WHERE NOT paused AND next_run_at <= \(now) ORDER BY next_run_at LIMIT \(limit)
            """, logger: logger
        ).compactMap(Self.schedule)
    }

    /// Enqueues the jobs of `slots` for `schedule` and moves it on to `next`, in one transaction,
    /// if its next slot is still the one read (another runner did not get there first): returns
    /// what was enqueued, nothing if it lost. Each slot's job is keyed by schedule and slot, so
    /// even two runners that both got there could not enqueue a slot twice.
    package func runSchedule(_ schedule: ScheduleRecord, slots: [Date], next: Date?) async throws -> [EnqueuedJob] {
        let enqueued = try await pool.withTransaction(logger: logger) { connection -> [EnqueuedJob] in
            let moved = try await connection.execute(
                """
                UPDATE \(unescaped: self.schema).schedules
                SET next_run_at = \(next), last_run_at = coalesce(\(slots.last), last_run_at), updated_at = now()
                WHERE name = \(schedule.name) AND next_run_at IS NOT DISTINCT FROM \(schedule.nextRunAt) AND NOT paused
                RETURNING 1
                """, logger: self.logger)
            guard !moved.isEmpty, !slots.isEmpty else { return [] }
            let jobs = try slots.map { try self.validated(schedule.job(for: $0)) }
            let enqueued = try await self.enqueue(jobs, on: connection)
            _ = try await connection.execute(
                """
                UPDATE \(unescaped: self.schema).schedules SET last_job_id = \(enqueued.last?.id)
                WHERE name = \(schedule.name)
                """, logger: self.logger)
            return enqueued
        }
        if Self.callerWakes(afterEnqueueing: enqueued.count) {
            try await notify(Set(enqueued.filter { $0.state == .available }.map(\.queue)).sorted().map { "q:" + $0 })
        }
        return enqueued
    }

    /// Enqueues `schedule`'s job now, outside its slots (`baton schedules run-now`).
    package func runScheduleNow(_ schedule: ScheduleRecord, now: Date, by actor: AuditActor? = nil) async throws
        -> EnqueuedJob
    {
        var job = schedule.job
        job.runAt = nil
        job.idempotencyKey = nil
        let valid = try validated(job)
        let enqueued = try await audited(actor) { connection in
            let enqueued = try await self.enqueue([valid], on: connection)[0]
            _ = try await connection.execute(
                """
                UPDATE \(unescaped: self.schema).schedules SET last_run_at = \(now), last_job_id = \(enqueued.id)
                WHERE name = \(schedule.name)
                """, logger: self.logger)
            return (
                enqueued,
                [AuditChange("runSchedule", "schedule:\(schedule.name)", ["job": .number(JSONNumber(enqueued.id))])]
            )
        }
        // One job: `enqueue()` woke its queue's workers at the commit.
        return enqueued
    }

    /// Pauses or resumes `name`; a resumed schedule goes on from its next slot after `now` (the
    /// slots of the pause are not made up). False if there is no such schedule. Only a change of
    /// state is written (and recorded): pausing a paused schedule leaves it as it is.
    package func setSchedulePaused(_ name: String, _ paused: Bool, now: Date, by actor: AuditActor? = nil)
        async throws -> Bool
    {
        guard let schedule = try await schedule(name) else { return false }
        let next = paused ? schedule.nextRunAt : schedule.cron.next(after: now, in: schedule.timeZone)
        return try await audited(actor) { connection in
            let changed = try await connection.execute(
                """
                UPDATE \(unescaped: self.schema).schedules
                SET paused = \(paused), next_run_at = CASE WHEN \(paused) THEN next_run_at ELSE \(next) END,
                    updated_at = now()
                WHERE name = \(name) AND paused <> \(paused) RETURNING 1
                """, logger: self.logger)
            guard changed.isEmpty else {
                return (
                    true,
                    [
                        AuditChange(
                            paused ? "pauseSchedule" : "resumeSchedule", "schedule:\(name)", ["paused": .bool(paused)])
                    ]
                )
            }
            let exists = try await connection.execute(
                "SELECT 1 FROM \(unescaped: self.schema).schedules WHERE name = \(name)", logger: self.logger)
            return (!exists.isEmpty, [])
        }
    }

    /// Deletes `name`; false if there is no such schedule.
    package func deleteSchedule(_ name: String, by actor: AuditActor? = nil) async throws -> Bool {
        try await audited(actor) { connection in
            let rows = try await connection.execute(
                "DELETE FROM \(unescaped: self.schema).schedules WHERE name = \(name) RETURNING queue",
                logger: self.logger)
            let changes = try rows.map {
                AuditChange("deleteSchedule", "schedule:\(name)", ["queue": .string(try $0.decode(String.self))])
            }
            return (!rows.isEmpty, changes)
        }
    }

    /// A row as a record; nil (and skipped) if what it stores no longer reads.
    private static func schedule(_ row: PostgresRow) -> ScheduleRecord? {
        let cells = Array(row)
        guard let name = try? cells[0].decode(String.self), let cronText = try? cells[1].decode(String.self),
            let cron = try? CronExpression(cronText), let zoneName = try? cells[2].decode(String.self),
            let zone = TimeZone(identifier: zoneName), let misfireText = try? cells[3].decode(String.self),
            let misfire = try? MisfirePolicy(parsing: misfireText), let paused = try? cells[4].decode(Bool.self),
            let source = (try? cells[5].decode(String.self)).flatMap(ScheduleRecord.Source.init(rawValue:)),
            let queue = try? cells[7].decode(String.self), let priority = try? cells[8].decode(Int.self),
            let metadata = (try? cells[9].decode(String.self)).flatMap({ try? JSONValue(parsing: $0) }),
            let input = (try? cells[10].decode(String.self)).flatMap({ try? JSONValue(parsing: $0) }),
            let stages = (try? cells[11].decode(String.self)).flatMap({
                try? JSONValue(parsing: $0).decode(as: [StageSpec].self)
            }),
            let createdAt = try? cells[15].decode(Date.self), let updatedAt = try? cells[16].decode(Date.self)
        else { return nil }
        return ScheduleRecord(
            name: name, cron: cron, timeZone: zone, misfire: misfire, paused: paused, source: source,
            request: (try? cells[6].decode(String?.self))?.flatMap { try? JSONValue(parsing: $0) },
            job: NewJob(
                chain: ChainDefinition(input: input, stages: stages), queue: queue, priority: priority,
                metadata: metadata, fairKey: (try? cells[17].decode(String?.self)) ?? nil,
                fairWeight: (try? cells[18].decode(Double?.self)) ?? nil),
            nextRunAt: try? cells[12].decode(Date?.self), lastRunAt: try? cells[13].decode(Date?.self),
            lastJobID: try? cells[14].decode(Int64?.self), createdAt: createdAt, updatedAt: updatedAt)
    }
}
