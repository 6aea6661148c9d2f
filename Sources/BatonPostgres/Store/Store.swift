import Baton
import Foundation
import Logging
import PostgresNIO

/// Every statement Baton runs against PostgreSQL, one named operation each.
///
/// Transitions that need more than one step (lanes, groups, idempotency) are PL/pgSQL functions in
/// `migrations/`, so each is one round trip and one transaction. The store passes batches as one
/// JSON array parameter.
package struct Store: Sendable {
    package let pool: DatabasePool
    package let schema: String
    package let logger: Logger
    /// The tasks' own checks of their args, made when a job or schedule comes in (injected: the
    /// task registry knows the tasks, the store does not).
    package let argsCheck: ChainDefinition.ArgsCheck?

    package init(
        pool: DatabasePool, schema: String? = nil, logger: Logger = Logger(label: "baton.store"),
        checkingArgs argsCheck: ChainDefinition.ArgsCheck? = nil
    ) {
        self.pool = pool
        self.schema = schema ?? pool.configuration.schema
        self.logger = logger
        self.argsCheck = argsCheck
    }

    /// `job`, checked as this store checks what comes in (``NewJob/validated(checkingArgs:)``).
    package func validated(_ job: NewJob) throws(BatonError) -> ValidJob {
        try job.validated(checkingArgs: argsCheck)
    }

    /// The LISTEN/NOTIFY channel of this schema. Payloads: `q:<queue>` (jobs available),
    /// `c:<job id>` (cancel it), `f:<job id>` (a watched job finished).
    package var channel: String { "\(schema)_events" }

    /// Sends notifications on the channel, all in one statement, outside any other transaction.
    package func notify(_ payloads: [String]) async throws {
        guard !payloads.isEmpty else { return }
        try await pool.execute(
            "SELECT pg_notify(\(channel), p) FROM unnest(\(payloads)::text[]) AS p", logger: logger)
    }
}

extension Store {
    // MARK: enqueue

    /// Enqueues `jobs` in one transaction (all or none). A job whose first stage names a lane
    /// becomes that lane's holder or waits behind it. Returns one entry per job, in order.
    package func enqueue(_ jobs: [ValidJob]) async throws -> [EnqueuedJob] {
        try await enqueueEach(jobs).map { try $0.get() }
    }

    /// Checks `jobs` (``validated(_:)``) and enqueues them as ``enqueue(_:)-([ValidJob])``.
    package func enqueue(_ jobs: [NewJob]) async throws -> [EnqueuedJob] {
        try await enqueue(jobs.map(validated))
    }

    /// Batches of up to this many jobs wake their queues' workers inside their own transaction
    /// (`enqueue` in the schema says why); the caller of a larger one announces it after its
    /// commit (``Waker``, or ``notify(_:)``).
    package static let wakesInTransaction = 100

    /// Whether an enqueue of `count` jobs leaves waking the workers to its caller.
    package static func callerWakes(afterEnqueueing count: Int) -> Bool { count > wakesInTransaction }

    /// Enqueues `jobs` in one transaction, as ``enqueue(_:)``, and answers for each job apart: a
    /// failure for a job that an idempotency key matched and that was deleted in the instant
    /// between the insert and its look-up (``JobVanished``; the others are committed).
    ///
    /// `enqueue_committed` commits before it answers: its row is the proof, no commit check.
    package func enqueueEach(_ jobs: [ValidJob]) async throws -> [Result<EnqueuedJob, JobVanished>] {
        guard !jobs.isEmpty else { return [] }
        let batch = Self.enqueueBatch(jobs)
        return try await Self.refusingKeysTaken {
            let rows = try await pool.call(
                "CALL \(unescaped: schema).enqueue_committed(\(batch)::jsonb, NULL, NULL, NULL, NULL, NULL, NULL)",
                logger: logger)
            guard let row = rows.first else { return [] }
            let cells = Array(row)
            let (ids, queues, states) = try (
                BinaryArray.int64s(cells[0]), BinaryArray.strings(cells[1]), BinaryArray.strings(cells[2])
            )
            let (inserted, runAt, createdAt) = try (
                BinaryArray.bools(cells[3]), BinaryArray.dates(cells[4]), BinaryArray.dates(cells[5])
            )
            return ids.indices.map { index in
                guard ids[index] != 0 else { return .failure(JobVanished()) }
                return .success(
                    EnqueuedJob(
                        id: ids[index], queue: queues[index], state: JobState(rawValue: states[index]) ?? .available,
                        inserted: inserted[index], runAt: runAt[index], createdAt: createdAt[index]))
            }
        }
    }

    /// Enqueues `jobs` on `connection`, inside whatever transaction the caller has open there: the
    /// jobs exist if and only if the caller commits.
    package func enqueue(_ jobs: [ValidJob], on connection: PostgresConnection) async throws -> [EnqueuedJob] {
        guard !jobs.isEmpty else { return [] }
        let batch = Self.enqueueBatch(jobs)
        return try await Self.refusingKeysTaken {
            try Self.decodeEnqueued(
                try await connection.execute(
                    """
                    SELECT id, queue, state::text, inserted, run_at, created_at
                    FROM \(unescaped: schema).enqueue(\(batch)::jsonb)
                    """, logger: logger))
        }.map { try $0.get() }
    }

    /// What `run` answers, or ``IdempotencyKeyTaken`` when `enqueue` refused a batch whose key
    /// names another owner's job (SQLSTATE BT409, the job's index in DETAIL), ``FairKeyNotText``
    /// when a job's queue takes its fairness key from what the job carries and that is not text
    /// (BT422, the path in HINT).
    private static func refusingKeysTaken(_ run: () async throws -> [Result<EnqueuedJob, JobVanished>]) async throws
        -> [Result<EnqueuedJob, JobVanished>]
    {
        do {
            return try await run()
        } catch let error as StoreError where error.sqlState == "BT409" {
            throw IdempotencyKeyTaken(index: error.detail.flatMap { Int($0) } ?? 0)
        } catch let error as StoreError where error.sqlState == "BT422" {
            throw FairKeyNotText(
                index: error.detail.flatMap { Int($0) } ?? 0, path: error.hint ?? "",
                description: error.message ?? "not a fairness key")
        }
    }

    /// The batch as `enqueue` reads it: `[{"queue", "priority", "run_at"?, "chain", "input", "metadata",
    /// "key"?, "owner"?, "key_owners"?, "no_tags"?, "features"?, "fair_key"?, "fair_weight"?}, …]`,
    /// written straight to JSON text (no `Codable` on this path). `no_tags` spares the database looking for what a job without metadata
    /// or args is found by; `features` are those its chain uses (``ChainDefinition/features``).
    private static func enqueueBatch(_ jobs: [ValidJob]) -> String {
        var batch: [UInt8] = []
        batch.reserveCapacity(jobs.count * 300)
        batch.append(UInt8(ascii: "["))
        let now = Date()
        for (index, job) in jobs.map(\.job).enumerated() {
            // Written field by field (no dictionary per job): this runs for every job of a batch.
            // A first stage with a queue of its own starts there; the job's queue is its home.
            let first = job.chain.stages.first?.task?.queue
            batch.append(contentsOf: (index > 0 ? ",{\"queue\":" : "{\"queue\":").utf8)
            JSONValue.string(first ?? job.queue).write(into: &batch)
            if first != nil {
                batch.append(contentsOf: ",\"home_queue\":".utf8)
                JSONValue.string(job.queue).write(into: &batch)
            }
            batch.append(contentsOf: ",\"priority\":\(job.priority),\"chain\":".utf8)
            batch.append(UInt8(ascii: "["))
            for (position, stage) in job.chain.stages.enumerated() {
                if position > 0 { batch.append(UInt8(ascii: ",")) }
                stage.write(into: &batch)
            }
            batch.append(UInt8(ascii: "]"))
            batch.append(contentsOf: ",\"input\":".utf8)
            job.chain.input.write(into: &batch, sortingKeys: false)
            batch.append(contentsOf: ",\"metadata\":".utf8)
            job.metadata.write(into: &batch, sortingKeys: false)
            if let runAt = job.runAt {
                batch.append(contentsOf: ",\"run_at\":".utf8)
                JSONValue.string(RFC3339.format(runAt)).write(into: &batch)
            }
            if let key = job.idempotencyKey {
                batch.append(contentsOf: ",\"key\":".utf8)
                JSONValue.string(key).write(into: &batch)
            }
            if let owner = job.enqueuedBy {
                batch.append(contentsOf: ",\"owner\":".utf8)
                JSONValue.string(owner).write(into: &batch)
            }
            if let owners = job.keyOwners {
                batch.append(contentsOf: ",\"key_owners\":".utf8)
                JSONValue.array(owners.map(JSONValue.string)).write(into: &batch)
            }
            if job.metadata.objectValue?.isEmpty ?? true, !job.chain.stages.contains(where: \.hasArgs) {
                batch.append(contentsOf: ",\"no_tags\":true".utf8)
            }
            let features = job.chain.features
            if !features.isEmpty {
                batch.append(contentsOf: ",\"features\":".utf8)
                JSONValue.array(features.map(JSONValue.string)).write(into: &batch)
            }
            if let fairKey = job.fairKey {
                batch.append(contentsOf: ",\"fair_key\":".utf8)
                JSONValue.string(fairKey).write(into: &batch)
            }
            if let fairWeight = job.fairWeight.flatMap(JSONNumber.init) {
                batch.append(contentsOf: ",\"fair_weight\":".utf8)
                JSONValue.number(fairWeight).write(into: &batch)
            }
            if let unique = job.unique {
                batch.append(contentsOf: ",\"unique_key\":".utf8)
                JSONValue.string(unique.storedKey(for: job, at: now)).write(into: &batch)
                batch.append(contentsOf: ",\"unique_states\":".utf8)
                JSONValue.string("{" + unique.states.map(\.rawValue).joined(separator: ",") + "}").write(into: &batch)
            }
            batch.append(UInt8(ascii: "}"))
        }
        batch.append(UInt8(ascii: "]"))
        return String(decoding: batch, as: UTF8.self)
    }

    /// One entry per job sent: a NULL id is a job that an idempotency key matched and that was
    /// deleted in the instant between the insert and its look-up.
    private static func decodeEnqueued(_ rows: [PostgresRow]) throws -> [Result<EnqueuedJob, JobVanished>] {
        try rows.map { row in
            let (id, queue, state, inserted, runAt, createdAt) = try row.decode(
                (Int64?, String?, String?, Bool, Date?, Date?).self)
            guard let id, let queue, let state, let runAt, let createdAt else { return .failure(JobVanished()) }
            return .success(
                EnqueuedJob(
                    id: id, queue: queue, state: JobState(rawValue: state) ?? .available, inserted: inserted,
                    runAt: runAt, createdAt: createdAt))
        }
    }

    // MARK: claim

    /// Claims up to `limit` available jobs of `queue` for `worker`, in priority, due time and id
    /// order, skipping rows other workers hold and task stages of tasks not in `tasks` (nil: any)
    /// (`claim_for` in the schema, from `ready`), each with how long it waited to be
    /// picked up.
    package func claim(queue: String, limit: Int, worker: String, tasks: [String]? = nil) async throws
        -> [ClaimedJob]
    {
        try await claimCountingTokens(queue: queue, limit: limit, worker: worker, tasks: tasks).jobs
    }

    /// ``claim(queue:limit:worker:tasks:)``, and when a rate limit key ran out of tokens with
    /// stages of this queue still waiting for one, how long until the first of them has one.
    package func claimCountingTokens(queue: String, limit: Int, worker: String, tasks: [String]? = nil)
        async throws -> (jobs: [ClaimedJob], nextToken: Duration?)
    {
        let asked = ContinuousClock.now
        // `claim_committed` commits before it answers: its row is the proof, no commit check.
        let rows = try await pool.call(
            """
            CALL \(unescaped: schema).claim_committed(
                \(queue), \(limit)::int, \(worker), \(tasks)::text[], NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)
            """, logger: logger)
        guard let row = rows.first else { return ([], nil) }
        let cells = Array(row)
        let (ids, stages, attempts) = try (
            BinaryArray.int64s(cells[0]), BinaryArray.ints(cells[1]), BinaryArray.ints(cells[2])
        )
        let (chains, inputs, results, metadata, groupOutputs) = try (
            BinaryArray.strings(cells[3]), BinaryArray.strings(cells[4]), BinaryArray.strings(cells[5]),
            BinaryArray.strings(cells[6]), BinaryArray.strings(cells[7])
        )
        let (waited, nextToken) = try (BinaryArray.doubles(cells[8]), cells[9].decode(Double?.self))
        var decoder = ClaimDecoder()
        var claimed: [ClaimedJob] = []
        claimed.reserveCapacity(ids.count)
        for index in ids.indices {
            var job = try decoder.job(
                id: ids[index], queue: queue, stage: stages[index], attempt: attempts[index], chain: chains[index],
                input: inputs[index], results: results[index].isEmpty ? nil : results[index],
                metadata: metadata[index], groupOutput: groupOutputs[index].isEmpty ? nil : groupOutputs[index])
            job.waited = waited[index]
            job.claimedSince = asked
            claimed.append(job)
        }
        return (claimed, nextToken.map { .milliseconds(Int64(($0 * 1000).rounded(.up))) })
    }

    /// Builds claimed jobs from the columns `claim` returns.
    struct ClaimDecoder {
        /// Jobs enqueued from one template share their chain text: decode each text once per batch.
        var chains: [String: [StageSpec]] = [:]

        mutating func job(
            id: Int64, queue: String, stage: Int, attempt: Int, chain chainText: String, input: String,
            results: String?, metadata: String, groupOutput: String?
        ) throws -> ClaimedJob {
            let chain: [StageSpec]
            var invalid: String?
            if let known = chains[chainText] {
                chain = known
            } else {
                (chain, invalid) = StoredChain.decode(chainText, stage: stage)
                if invalid == nil { chains[chainText] = chain }
            }
            return ClaimedJob(
                id: id, queue: queue, stage: stage, attempt: attempt, chain: chain, input: input,
                earlier: results.flatMap {
                    try? JSONValue(parsing: $0).decode(as: [OutputOnly].self).enumerated().map {
                        (stage: $1.stage ?? $0, output: $1.output)
                    }
                }
                    ?? [],
                metadata: metadata == "{}" ? [:] : (try? JSONValue(parsing: metadata)) ?? [:],
                groupOutput: groupOutput, invalid: invalid)
        }
    }

    /// A run of the path; entries written before control flow have no `stage`: their index is it.
    private struct OutputOnly: Decodable {
        var stage: Int?
        var output: JSONValue
    }

    // MARK: outcomes

    /// Applies decided transitions in one call of `apply_outcomes`: each only if the job is still
    /// running that stage and attempt for `worker`, who takes lane holders promoted meanwhile into
    /// its free `slots` if it runs their `tasks` (nil: any).
    package func apply(
        _ outcomes: [Outcome], worker: String, slots: [String: Int] = [:], tasks: [String]? = nil
    ) async throws -> AppliedOutcomes {
        guard !outcomes.isEmpty else { return AppliedOutcomes() }
        let batch = Self.outcomeBatch(outcomes)
        let queues = Array(slots.keys)
        let free = queues.map { slots[$0] ?? 0 }
        let asked = ContinuousClock.now
        // `apply_outcomes_committed` commits before it answers: its row is the proof, no commit check.
        let rows = try await pool.call(
            """
            CALL \(unescaped: schema).apply_outcomes_committed(
                \(worker), \(batch)::jsonb, \(queues)::text[], \(free)::int[], \(tasks)::text[],
                NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)
            """, logger: logger)
        var result = AppliedOutcomes()
        guard let row = rows.first else { return result }
        let cells = Array(row)
        let (events, ids, queueNames) = try (
            BinaryArray.strings(cells[0]), BinaryArray.int64s(cells[1]), BinaryArray.strings(cells[2])
        )
        let (stages, attempts) = try (BinaryArray.ints(cells[3]), BinaryArray.ints(cells[4]))
        let (chains, inputs, results, metadata, groupOutputs) = try (
            BinaryArray.strings(cells[5]), BinaryArray.strings(cells[6]), BinaryArray.strings(cells[7]),
            BinaryArray.strings(cells[8]), BinaryArray.strings(cells[9])
        )
        var decoder = ClaimDecoder()
        for (index, event) in events.enumerated() {
            switch event {
            case "applied": result.applied.insert(ids[index])
            case "handed-on": result.handedOn.insert(ids[index])
            case "wake": result.woken.insert(queueNames[index])
            case "finished": result.finished.append(ids[index])
            case "claimed":
                var job = try decoder.job(
                    id: ids[index], queue: queueNames[index], stage: stages[index], attempt: attempts[index],
                    chain: chains[index], input: inputs[index], results: results[index].isEmpty ? nil : results[index],
                    metadata: metadata[index],
                    groupOutput: groupOutputs[index].isEmpty ? nil : groupOutputs[index])
                job.claimedSince = asked
                result.claimed.append(job)
            default: break
            }
        }
        return result
    }

    /// The batch as JSON text, written by hand: outputs are JSON text already and go in verbatim.
    static func outcomeBatch(_ outcomes: [Outcome]) -> String {
        var json = "["
        json.reserveCapacity(outcomes.count * 96)
        for (index, outcome) in outcomes.enumerated() {
            if index > 0 { json += "," }
            json += "{\"id\":\(outcome.jobID),\"stage\":\(outcome.stage),\"attempt\":\(outcome.attempt),"
            switch outcome.transition {
            case .hop(let output, let to, let queue):
                json += "\"kind\":\"hop\",\"output\":\(output)"
                if let to { json += ",\"target\":\(to)" }
                if let queue { json += ",\"queue\":\(jsonString(queue))" }
            case .advance(let output, let lane, let to, let queue):
                json += "\"kind\":\"advance\",\"output\":\(output)"
                if let lane { json += ",\"lane\":\(jsonString(lane))" }
                if let to { json += ",\"target\":\(to)" }
                if let queue { json += ",\"queue\":\(jsonString(queue))" }
            case .complete(let output):
                json += "\"kind\":\"complete\",\"output\":\(output)"
            case .retry(let error, let delay, let pause):
                json += "\"kind\":\"retry\",\(failure(error)),\"delay_ms\":\(delay.milliseconds)"
                if pause { json += ",\"pause\":true" }
            case .discard(let error):
                json += "\"kind\":\"discard\",\(failure(error))"
            case .spawn:
                json += "\"kind\":\"spawn\""
            case .spawnOver(let elements):
                json += "\"kind\":\"spawn\",\"elements\":\(elements)"
            case .release:
                json += "\"kind\":\"release\""
            case .snooze(let delay, let pause):
                json += "\"kind\":\"snooze\",\"delay_ms\":\(delay.milliseconds)"
                if pause { json += ",\"pause\":true" }
            case .await(let timeout):
                json += "\"kind\":\"await\",\"delay_ms\":\(timeout.milliseconds)"
            }
            if let log = outcome.log { json += ",\"log\":\(jsonString(log))" }
            json += "}"
        }
        return json + "]"
    }

    /// A failure's fields of an outcome: `"error"`, and `"code"` and `"details"` when it has them
    /// (details PostgreSQL cannot hold are dropped, ``StageError/storable``).
    static func failure(_ error: StageError) -> String {
        let error = error.storable
        var json = "\"error\":\(jsonString(error.message))"
        if let code = error.code { json += ",\"code\":\(jsonString(code))" }
        if let details = error.details { json += ",\"details\":\(details.jsonText)" }
        return json
    }

    /// `value` as a JSON string literal, a NUL (which `jsonb` cannot hold) as U+FFFD.
    static func jsonString(_ value: String) -> String {
        JSONValue.string(value.contains("\u{0}") ? value.replacingOccurrences(of: "\u{0}", with: "\u{FFFD}") : value)
            .jsonText
    }
}

/// An enqueue refused as a whole: the idempotency key of the job at `index` of the batch names a
/// job of another owner (``NewJob/keyOwners``).
package struct IdempotencyKeyTaken: Error {
    package var index: Int
}

/// A job of the batch (`index`) named no fairness key, and its queue takes them from `path` in
/// what jobs carry (`metadata.tenant`), where this one holds something else than text of 1 to 200
/// characters: the batch is refused, as it would be for such a `fair_key`.
public struct FairKeyNotText: Error, CustomStringConvertible {
    public var index: Int
    public var path: String
    public var description: String
}

/// A job an idempotency key named was deleted in the instant between the enqueue's insert and its
/// look-up: nothing of that job was enqueued, and enqueueing it again is safe.
package struct JobVanished: Error, CustomStringConvertible {
    package init() {}
    package var description: String { "a job named by an idempotency key was deleted while enqueueing; try again" }
}
