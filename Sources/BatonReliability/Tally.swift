import Foundation
import PostgresNIO

/// What became of the jobs a scenario enqueued: from the jobs table and from the ledger the workers'
/// `record` task wrote before returning (its own idempotency log).
struct Tally: Sendable {
    var enqueued = 0
    /// Rows in the jobs table: more than `enqueued` would be an enqueue that happened twice.
    var stored = 0
    var completed = 0
    /// Discarded by the stages' own policy (every attempt failed): accounted for, not lost.
    var discarded = 0
    /// Enqueued and not finished once the scenario's recovery window ran out: lost.
    var lost = 0
    /// Stages whose task returned success more than once (allowed only after a lost lease).
    var completedTwice = 0
    var completedTwiceAfterLostLease = 0
    /// Two runs of one lane that overlapped in time.
    var laneOverlaps = 0
    /// When jobs were lost: where they are stuck, and what the processes last said.
    var diagnostics: String?
    /// Whether losing acknowledged jobs is what the scenario expects (a failover to an
    /// asynchronous standby): then it is reported, not a violation.
    var lossExpected = false

    /// Waits (up to `settle`) for every job to finish, then counts.
    static func count(_ rig: Rig, enqueued: Int, settle: Duration) async throws -> Tally {
        let schema = Rig.schema
        try? await eventually("every job to finish", timeout: settle) {
            try await rig.count(
                sql:
                    "SELECT count(*)::int FROM \(schema).jobs WHERE state NOT IN ('completed', 'discarded', 'cancelled')"
            ) == 0
        }
        var tally = Tally(enqueued: enqueued)
        tally.stored = try await rig.count(sql: "SELECT count(*)::int FROM \(schema).jobs")
        tally.completed = try await rig.count(sql: "SELECT count(*)::int FROM \(schema).jobs WHERE state = 'completed'")
        tally.discarded = try await rig.count(sql: "SELECT count(*)::int FROM \(schema).jobs WHERE state = 'discarded'")
        tally.lost = max(0, enqueued - tally.completed - tally.discarded)
        if tally.lost > 0 { tally.diagnostics = await rig.diagnostics() }
        let succeeded = succeededRuns
        let twice = """
            SELECT r.job, r.stage, EXISTS (
                SELECT 1 FROM \(schema).jobs j, jsonb_array_elements(j.errors) e
                WHERE j.id = r.job AND (e ->> 'stage')::int = r.stage AND e ->> 'error' LIKE 'worker lost%') AS rescued
            FROM (\(succeeded)) r GROUP BY r.job, r.stage HAVING count(*) > 1
            """
        let counts = try await rig.pool.execute(
            PostgresQuery(
                unsafeSQL: "SELECT count(*)::int, (count(*) FILTER (WHERE rescued))::int FROM (\(twice)) d"),
            logger: rig.logger)
        (tally.completedTwice, tally.completedTwiceAfterLostLease) = try counts[0].decode((Int, Int).self)
        if tally.completedTwice > tally.completedTwiceAfterLostLease {
            let runs = try await rig.pool.execute(
                PostgresQuery(
                    unsafeSQL: """
                        SELECT d.job, format('job %s stage %s: runs %s; errors %s', d.job, d.stage,
                            (SELECT string_agg(format('attempt %s on %s %s–%s failed=%s', r.attempt, r.worker,
                                to_char(r.started_at, 'HH24:MI:SS.MS'), to_char(r.ended_at, 'HH24:MI:SS.MS'), r.failed),
                                '; ' ORDER BY r.started_at)
                             FROM \(schema).reliability_runs r WHERE r.job = d.job AND r.stage = d.stage),
                            (SELECT errors::text FROM \(schema).jobs WHERE id = d.job))
                        FROM (\(twice)) d WHERE NOT d.rescued LIMIT 10
                        """), logger: rig.logger)
            let doubles = try runs.map { try $0.decode((Int64, String).self) }
            let lines = doubles.map { "  " + $0.1 } + rig.logLines(mentioning: doubles.map(\.0))
            tally.diagnostics = ([tally.diagnostics].compactMap { $0 } + ["completed twice:"] + lines)
                .joined(separator: "\n")
        }
        tally.laneOverlaps = try await rig.count(
            sql: """
                SELECT count(*)::int FROM (
                    SELECT started_at, max(ended_at) OVER (
                        PARTITION BY lane ORDER BY started_at, ended_at ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
                    ) AS earlier_end
                    FROM \(schema).reliability_runs WHERE lane IS NOT NULL) r
                WHERE started_at < earlier_end
                """)
        return tally
    }

    /// The ledger's runs whose task returned success: a ledger row is written before the task
    /// returns, so a row whose insert committed while its answer was lost (the connection killed)
    /// belongs to a run that failed, and the job's errors hold that stage and attempt.
    static var succeededRuns: String {
        """
        SELECT r.* FROM \(Rig.schema).reliability_runs r JOIN \(Rig.schema).jobs j ON j.id = r.job
        WHERE NOT r.failed AND NOT EXISTS (
            SELECT 1 FROM jsonb_array_elements(j.errors) e
            WHERE (e ->> 'stage')::int = r.stage AND (e ->> 'attempt')::int = r.attempt
              AND e ->> 'error' NOT LIKE 'worker lost%')
        """
    }

    /// What must not happen, whatever the faults.
    var violations: [String] {
        var violations: [String] = []
        if lost > 0, !lossExpected { violations.append("\(lost) jobs lost") }
        if stored > enqueued { violations.append("\(stored - enqueued) jobs stored twice") }
        if completedTwice > completedTwiceAfterLostLease {
            violations.append(
                "\(completedTwice - completedTwiceAfterLostLease) stages completed twice without a lost lease")
        }
        if laneOverlaps > 0 { violations.append("\(laneOverlaps) overlapping runs in a lane") }
        return violations
    }

    var fields: [(String, String)] {
        [
            ("enqueued", "\(enqueued)"), ("completed", "\(completed)"), ("discarded", "\(discarded)"),
            ("lost", "\(lost)"), ("completed_twice", "\(completedTwice)"),
            ("completed_twice_after_lost_lease", "\(completedTwiceAfterLostLease)"),
            ("lane_overlaps", "\(laneOverlaps)"),
        ]
    }
}

/// Completions per second over a window, sampled from the ledger.
struct Throughput: Sendable {
    let rig: Rig

    /// Successful stage runs per second during the next `window`.
    func measure(for window: Duration) async throws -> Double {
        let before = try await rig.completedRuns()
        let start = ContinuousClock.now
        try await Task.sleep(for: window)
        let after = try await rig.completedRuns()
        return Double(after - before) / (ContinuousClock.now - start).seconds
    }
}
