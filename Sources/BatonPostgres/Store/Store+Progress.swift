import Baton
import Foundation
import PostgresNIO

/// A running stage's progress and checkpoint (`job_progress`): written by the worker that runs
/// it, coalesced, read by the next attempt and by whoever looks at the job.
extension Store {
    /// One attempt's latest report, as a worker writes it.
    package struct ProgressReport: Sendable, Hashable {
        package var jobID: Int64
        package var stage: Int
        package var attempt: Int
        package var progress: StageProgress

        package init(jobID: Int64, stage: Int, attempt: Int, progress: StageProgress) {
            self.jobID = jobID
            self.stage = stage
            self.attempt = attempt
            self.progress = progress
        }
    }

    /// Writes `reports` in one statement, each only while its attempt still runs on `worker`: a
    /// worker that lost its lease (or a cancelled job) writes nothing. A report without a
    /// checkpoint keeps the stage's earlier one. Rows in key order, so that two writers never wait
    /// on each other crosswise. Relies on the jobs primary key and `job_progress`'s.
    package func recordProgress(_ reports: [ProgressReport], worker: String) async throws {
        guard !reports.isEmpty else { return }
        let rows = JSONValue.array(
            reports.map { report in
                .object([
                    "job_id": .number(JSONNumber(report.jobID)), "stage": .number(JSONNumber(report.stage)),
                    "attempt": .number(JSONNumber(report.attempt)),
                    "fraction": report.progress.fraction.flatMap(JSONNumber.init).map(JSONValue.number) ?? .null,
                    "message": report.progress.message.map(JSONValue.string) ?? .null,
                    "checkpoint": report.progress.checkpoint ?? .null,
                ])
            })
        // Rows found by id; the worker and state checked on them, not used to find them (see
        // apply_outcomes_for: a probe by worker walks every job it ran since the last vacuum).
        try await pool.execute(
            """
            INSERT INTO \(unescaped: schema).job_progress AS p
                (job_id, stage, attempt, fraction, message, checkpoint, updated_at)
            SELECT r.job_id, r.stage, r.attempt, r.fraction, r.message, nullif(r.checkpoint, 'null'), now()
            FROM jsonb_to_recordset(\(rows.jsonText)::jsonb)
                AS r(job_id bigint, stage int, attempt int, fraction float8, message text, checkpoint jsonb)
            JOIN \(unescaped: schema).jobs j ON j.id = r.job_id AND j.stage = r.stage AND j.attempt = r.attempt
                AND (j.state = 'running' AND j.worker_id = \(worker)) IS TRUE
            ORDER BY r.job_id, r.stage
            ON CONFLICT (job_id, stage) DO UPDATE SET
                attempt = excluded.attempt, fraction = excluded.fraction, message = excluded.message,
                checkpoint = coalesce(excluded.checkpoint, p.checkpoint), updated_at = excluded.updated_at
            """, logger: logger)
    }

    /// The checkpoint saved at stage `stage` of job `job`, nil if none was.
    package func checkpoint(job: Int64, stage: Int) async throws -> JSONValue? {
        let rows = try await pool.read(
            """
            SELECT checkpoint::text FROM \(unescaped: schema).job_progress WHERE job_id = \(job) AND stage = \(stage)
            """, logger: logger)
        guard let text = try rows.first?.decode(String?.self) else { return nil }
        return try JSONValue(parsing: text)
    }

    /// A column of job `j`'s progress rows as JSON text (one array per stage that reported:
    /// stage, attempt, fraction, message, checkpoint, updated_at), null when none did.
    var progressColumn: String {
        """
        (SELECT json_agg(json_build_array(p.stage, p.attempt, p.fraction, p.message, p.checkpoint, p.updated_at)
            ORDER BY p.stage) FROM \(schema).job_progress p WHERE p.job_id = j.id)::text
        """
    }

    /// ``progressColumn`` as read.
    static func progress(_ text: String?) throws -> [JobRecord.Progress] {
        guard let text else { return [] }
        return try (JSONValue(parsing: text).arrayValue ?? []).map { row in
            let fields = row.arrayValue ?? []
            guard fields.count == 6 else {
                throw BatonError.invalidChain(path: "progress", reason: "unreadable progress row")
            }
            return JobRecord.Progress(
                stage: try fields[0].decode(as: Int.self), attempt: try fields[1].decode(as: Int.self),
                progress: StageProgress(
                    fraction: fields[2].numberValue?.double, message: fields[3].stringValue,
                    checkpoint: fields[4] == .null ? nil : fields[4]),
                updatedAt: RFC3339.parse(fields[5].stringValue ?? "") ?? Date())
        }
    }
}
