import Baton
import Foundation
import PostgresNIO

/// What became of a signal delivered to a job (`deliver_signal` in the schema).
public enum SignalDelivery: String, Sendable, Hashable {
    /// The job was waiting for it: it goes on now.
    case resumed
    /// The chain has not reached the stage that awaits it: kept for it.
    case kept
    /// It was delivered before: nothing changed, the first payload stands.
    case duplicate
}

/// Why a signal was refused.
public enum SignalRefusal: Error, Sendable, Hashable, CustomStringConvertible {
    /// No job has this id.
    case noJob(Int64)
    /// No stage of the job awaits a signal of this name.
    case notAwaited(job: Int64, signal: String)
    /// The job has finished, or passed the stage that awaited it.
    case late(job: Int64, signal: String, state: JobState)

    public var description: String {
        switch self {
        case .noJob(let id): "job \(id) not found"
        case .notAwaited(let job, let signal): "no stage of job \(job) awaits a signal \"\(signal)\""
        case .late(let job, let signal, let state):
            state.isFinished
                ? "job \(job) is \(state.rawValue): signal \"\(signal)\" comes too late"
                : "job \(job) has passed the stage that awaited signal \"\(signal)\""
        }
    }
}

extension Store {
    /// Delivers signal `name` with `payload` to job `job`, once; returns what became of it, the
    /// job's state then, and the queue to wake when the job resumed.
    /// With an actor, a delivery that changed something (resumed or kept) is recorded in the audit
    /// trail (the signal's name, not its payload, which stays with the job).
    package func deliverSignal(job: Int64, name: String, payload: JSONValue, by actor: AuditActor? = nil)
        async throws -> (delivery: SignalDelivery, state: JobState, queue: String)
    {
        let rows = try await audited(actor) { connection in
            let rows = try await connection.execute(
                """
                SELECT outcome, state::text, queue
                FROM \(unescaped: self.schema).deliver_signal(\(job), \(name), \(payload.jsonText)::jsonb)
                """, logger: self.logger)
            let changes = try rows.compactMap { row -> AuditChange? in
                let (outcome, _, queue) = try row.decode((String, String, String).self)
                guard outcome == SignalDelivery.resumed.rawValue || outcome == SignalDelivery.kept.rawValue else {
                    return nil
                }
                return AuditChange(
                    "deliverSignal", "job:\(job)",
                    ["queue": .string(queue), "signal": .string(name), "outcome": .string(outcome)])
            }
            return (rows, changes)
        }
        guard let row = rows.first else { throw SignalRefusal.noJob(job) }
        let (outcome, stateName, queue) = try row.decode((String, String, String).self)
        let state = JobState(rawValue: stateName) ?? .available
        switch outcome {
        case "unknown": throw SignalRefusal.notAwaited(job: job, signal: name)
        case "late": throw SignalRefusal.late(job: job, signal: name, state: state)
        default:
            return (SignalDelivery(rawValue: outcome) ?? .kept, state, queue)
        }
    }

    /// The payload of signal `name` delivered to job `job`, as JSON text; nil if none was.
    package func signalPayload(job: Int64, name: String) async throws -> String? {
        let rows = try await pool.read(
            """
            SELECT payload::text FROM \(unescaped: schema).job_signals WHERE job_id = \(job) AND name = \(name)
            """, logger: logger)
        return try rows.first?.decode(String.self)
    }

    /// Ends the waits for signals that ran out, up to `limit`: failed attempts, the stage waiting
    /// again or its job discarded (`expire_waits`; `jobs_awaiting`). Returns each wait that ended
    /// and the jobs discarded that someone awaits.
    package func expireAwaits(limit: Int) async throws -> (ended: [ExpiredWait], watchedDiscarded: [Int64]) {
        let rows = try await pool.execute(
            """
            SELECT id, discarded, watched, queue, stage, attempt, chain, metadata, error, next_at
            FROM \(unescaped: schema).expire_waits(\(limit)::int)
            """, logger: logger)
        var ended: [ExpiredWait] = []
        var watched: [Int64] = []
        for row in rows {
            let (id, discarded, isWatched, queue, stage, attempt, chain, metadata, error, nextAt) = try row.decode(
                (Int64, Bool, Bool, String, Int, Int, String, String, String, Date).self)
            if discarded, isWatched { watched.append(id) }
            ended.append(
                ExpiredWait(
                    jobID: id, queue: queue, stage: stage, attempt: attempt,
                    chain: StoredChain.decode(chain, stage: stage).chain,
                    metadata: (try? JSONValue(parsing: metadata)) ?? [:], error: error,
                    nextAt: discarded ? nil : nextAt))
        }
        return (ended, watched)
    }

    /// A key the migrations made in the database (`keys`): `signal-token` (``SignalTokens``),
    /// `api-fingerprint` (the control plane's token fingerprints).
    package func key(_ name: String) async throws -> [UInt8] {
        let rows = try await pool.read(
            "SELECT value FROM \(unescaped: schema).keys WHERE name = \(name)", logger: logger)
        guard let row = rows.first else {
            throw BatonError.invalidChain(
                path: "keys", reason: "the schema has no \(name) key: run `baton migrate`")
        }
        var buffer = try row.decode(ByteBuffer.self)
        return buffer.readBytes(length: buffer.readableBytes) ?? []
    }
}
