import Baton
import PostgresNIO

/// What a bulk operation does to each job its filter matches.
public enum BulkAction: String, Sendable, CaseIterable {
    /// Start discarded and cancelled jobs again at the stage they stopped on.
    case retry
    /// Cancel unfinished jobs (running ones: their workers stop the stage).
    case cancel
    /// Delete finished jobs.
    case delete

    /// The states the action applies to; a filter's other states match nothing.
    public var states: Set<JobState> {
        switch self {
        case .retry: [.discarded, .cancelled]
        case .cancel: [.scheduled, .available, .running, .retryable, .waiting]
        case .delete: [.completed, .discarded, .cancelled]
        }
    }
}

/// What a bulk operation found and did.
public struct BulkOutcome: Sendable, Hashable {
    /// Jobs that matched the filter in a state the action applies to.
    public var matched = 0
    /// Jobs the action changed: fewer than matched when some changed meanwhile, or a failed
    /// group's members still ran (retry, delete).
    public var changed = 0
    /// The first matched jobs (newest first), as they were when found.
    public var sample: [JobSummary] = []
    /// The queues of the jobs matched that are paused: a retried job of one waits until it is
    /// resumed.
    public var pausedQueues: [String] = []
}

extension Store {
    /// Applies `action` to every job `filter` matches (its `limit`, cursor and scan bound aside),
    /// newest first, a batch of `batchSize` jobs per transaction (`bulk_retry`, `bulk_cancel`,
    /// `bulk_delete`), so that a million matches neither time out one statement nor hold locks for
    /// long; with `dryRun`, only counts them. The jobs are found as listings find them: through
    /// the indexes for state and lane, the other filters checked on a bounded window at a time,
    /// so the whole table is read once at most.
    ///
    /// With an actor, each batch is recorded in the audit trail in its own transaction: the ids it
    /// changed, with the action.
    package func bulk(
        _ action: BulkAction, _ filter: JobFilter, dryRun: Bool, batchSize: Int = 1000, sampleSize: Int = 10,
        by actor: AuditActor? = nil
    ) async throws -> BulkOutcome {
        var outcome = BulkOutcome()
        var queues: Set<String> = []
        let states = filter.states.isEmpty ? action.states : action.states.intersection(filter.states)
        guard !states.isEmpty else { return outcome }
        var filter = filter
        filter.states = JobState.allCases.filter(states.contains)
        filter.limit = batchSize
        filter.scanLimit = max(filter.scanLimit, batchSize)
        filter.before = nil
        while true {
            let page = try await jobs(filter)
            outcome.matched += page.jobs.count
            outcome.sample += page.jobs.prefix(max(0, sampleSize - outcome.sample.count))
            queues.formUnion(page.jobs.map(\.queue))
            if !dryRun, !page.jobs.isEmpty {
                outcome.changed += try await apply(action, to: page.jobs.map(\.id), by: actor)
            }
            guard let next = page.jobs.count == batchSize ? page.jobs.last?.id : page.scannedTo else { break }
            filter.before = next
        }
        if !queues.isEmpty {
            outcome.pausedQueues = try await pool.read(
                """
                SELECT queue FROM \(unescaped: schema).paused_queues WHERE queue = ANY (\(Array(queues))) ORDER BY queue
                """, logger: logger
            ).map { try $0.decode(String.self) }
        }
        return outcome
    }

    /// Applies `action` to `ids` in one transaction, then tells whoever must know (queues with new
    /// work, workers running a cancelled stage, waiters); returns how many of `ids` it changed.
    private func apply(_ action: BulkAction, to ids: [Int64], by actor: AuditActor?) async throws -> Int {
        let function = "bulk_" + action.rawValue
        let columns = action == .cancel ? "id, worker_id, watched" : action == .retry ? "id, queue, state::text" : "id"
        let rows = try await audited(actor) { connection in
            let rows = try await connection.execute(
                "SELECT \(unescaped: columns) FROM \(unescaped: self.schema).\(unescaped: function)(\(ids))",
                logger: self.logger)
            // A cancel answers for group members too: only the jobs asked for are the batch's.
            let asked = Set(ids)
            let changed = try rows.map { try Array($0)[0].decode(Int64.self) }.filter(asked.contains)
            let change = AuditChange(
                "bulkJobs", "jobs",
                ["action": .string(action.rawValue), "ids": .array(changed.map { .number(JSONNumber($0)) })])
            return (rows, changed.isEmpty ? [] : [change])
        }
        switch action {
        case .retry:
            var queues: Set<String> = []
            for row in rows {
                let (_, queue, state) = try row.decode((Int64, String, String).self)
                if state == JobState.available.rawValue { queues.insert(queue) }
            }
            try await notify(queues.sorted().map { "q:" + $0 })
            return rows.count
        case .cancel:
            let asked = Set(ids)
            var changed = 0
            var payloads: [String] = []
            for row in rows {
                let (job, worker, watched) = try row.decode((Int64, String?, Bool).self)
                if asked.contains(job) { changed += 1 }
                if worker != nil { payloads.append("c:\(job)") }
                if watched { payloads.append("f:\(job)") }
            }
            try await notify(payloads)
            return changed
        case .delete:
            return rows.count
        }
    }
}
