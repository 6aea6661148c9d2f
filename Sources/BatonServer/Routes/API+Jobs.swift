import Baton
import BatonAPI
import BatonPostgres
import Foundation
import Metrics
import ServiceLifecycle

extension API {
    // MARK: enqueue

    /// `POST /v1/jobs`: 201 with the new job, or 200 with the job an idempotency key already names.
    /// With `?wait=30s`, answers once the job has finished or the time is up (request/response over
    /// a queue).
    func enqueueJob(_ input: Operations.EnqueueJob.Input) async throws -> Operations.EnqueueJob.Output {
        let wait = try wait(input.query.wait)
        guard case .json(let body) = input.body else { throw Problem.invalid("", "the body must be JSON") }
        let reader = JobReader()
        var request = try reader.job(body.job)
        if let header = input.headers.idempotencyKey {
            let key = try JobReader.idempotencyKey(header, path: "Idempotency-Key")
            if let field = request.idempotencyKey, field != key {
                throw Problem.invalid("idempotency_key", "the Idempotency-Key header and idempotency_key differ")
            }
            request.idempotencyKey = key
        }
        var valid = try reader.validated(request, checkingArgs: store.argsCheck)
        let caller = Caller.current
        try checkQueues(of: [valid.job], prefix: { _ in "" })
        valid.enqueuedBy = caller?.fingerprint
        // A caller that may not read every job may not learn another's through its key.
        valid.keyOwners = keyOwners
        let job = valid.job
        try await checkTasks([job], unchecked: input.query.unchecked)
        let enqueued: EnqueuedJob
        do {
            enqueued = try await client.enqueue([valid])[0]
        } catch is IdempotencyKeyTaken {
            throw Problem.idempotencyKeyTaken(path: "idempotency_key")
        } catch let refused as FairKeyNotText {
            throw Problem.invalid(refused.path, refused.description)
        }
        var record: JobRecord
        if enqueued.inserted {
            countEnqueued([job])
            record = JobRecord(job: job, enqueued: enqueued)
            record.waitingFor = await waitingFor(record)
        } else {
            record = try await client.job(enqueued.id)
        }
        // The job is committed: from here on, trouble answers with what is known rather than a 500
        // that would make the caller enqueue it again.
        if let wait, !record.state.isFinished { record = await waited(record, for: wait) }
        var members: [MemberRecord] = []
        if wait != nil || !enqueued.inserted, let read = try? await store.jobWithMembers(enqueued.id) {
            (record, members) = read
        }
        let answer = Components.Schemas.Job(record, members: members)
        let location = "/v1/jobs/\(enqueued.id)"
        return enqueued.inserted
            ? .created(.init(headers: .init(location: location), body: .json(answer)))
            : .ok(.init(headers: .init(location: location), body: .json(answer)))
    }

    /// `POST /v1/jobs/batch`: every job or none, in one transaction.
    func enqueueJobs(_ input: Operations.EnqueueJobs.Input) async throws -> Operations.EnqueueJobs.Output {
        guard case .json(let request) = input.body else { throw Problem.invalid("", "the body must be JSON") }
        guard (1...10_000).contains(request.jobs.count) else {
            throw Problem.invalid("jobs", "a batch holds 1 to 10000 jobs, got \(request.jobs.count)")
        }
        let caller = Caller.current
        let now = Date()
        let valid = try request.jobs.enumerated().map { index, item in
            let reader = JobReader(prefix: "jobs[\(index)].", now: now)
            var job = try reader.validated(reader.job(item), checkingArgs: store.argsCheck)
            job.enqueuedBy = caller?.fingerprint
            // A key naming another caller's job would answer with that job's id and state.
            job.keyOwners = keyOwners
            return job
        }
        let jobs = valid.map(\.job)
        try checkQueues(of: jobs, prefix: { "jobs[\($0)]." })
        try await checkTasks(jobs, unchecked: input.query.unchecked)
        let enqueued: [EnqueuedJob]
        do {
            enqueued = try await client.enqueue(valid)
        } catch let taken as IdempotencyKeyTaken {
            throw Problem.idempotencyKeyTaken(path: "jobs[\(taken.index)].idempotency_key")
        } catch let refused as FairKeyNotText {
            throw Problem.invalid("jobs[\(refused.index)].\(refused.path)", refused.description)
        }
        // The catalog read once for the batch, the counters bumped once per queue and task.
        let serving = try? await catalog.current()
        countEnqueued(zip(jobs, enqueued).filter { $0.1.inserted }.map(\.0))
        let answers = zip(jobs, enqueued).map { job, result -> Components.Schemas.EnqueuedJob in
            guard result.inserted else { return .init(result) }
            return .init(result, waitingFor: Self.waitingFor(JobRecord(job: job, enqueued: result), serving))
        }
        let response = Components.Schemas.BatchResponse(jobs: answers)
        return enqueued.contains(where: \.inserted)
            ? .created(.init(body: .json(response))) : .ok(.init(body: .json(response)))
    }

    // MARK: bulk

    /// `POST /v1/jobs/bulk`: retry, cancel or delete every job a filter matches, in batches (or,
    /// with `dry_run`, count them).
    func bulkJobs(_ input: Operations.BulkJobs.Input) async throws -> Operations.BulkJobs.Output {
        guard case .json(let request) = input.body else { throw Problem.invalid("", "the body must be JSON") }
        let given = request.filter
        // What the document says and the generated decoding does not check.
        if let error = given.error, !(1...200).contains(error.unicodeScalars.count) {
            throw Problem.invalid("filter.error", "error is text of 1 to 200 characters")
        }
        if let ids = given.ids {
            guard ids.count <= 10_000 else { throw Problem.invalid("filter.ids", "at most 10000 ids") }
            if let index = ids.firstIndex(where: { $0 < 1 }) {
                throw Problem.invalid("filter.ids[\(index)]", "a job id is a positive integer")
            }
        }
        if let states = given.state, states.count > 8 { throw Problem.invalid("filter.state", "at most 8 states") }
        let queue = try Self.name(given.queue, "filter.queue")
        if let queue { try checkQueue(queue, path: "filter.queue") }
        var filter = JobFilter(
            states: (given.state ?? []).compactMap { JobState(rawValue: $0.rawValue) },
            queue: queue, lane: try Self.name(given.lane, "filter.lane"),
            task: try Self.name(given.task, "filter.task"), error: given.error, createdAfter: given.createdAfter,
            createdBefore: given.createdBefore, finishedAfter: given.finishedAfter,
            finishedBefore: given.finishedBefore, ids: given.ids, queues: scopedQueues)
        filter.metadata = try Self.keyValues(given.metadata?.additionalProperties, "filter.metadata")
        filter.args = try Self.keyValues(given.args?.additionalProperties, "filter.args")
        guard let action = BulkAction(rawValue: request.action.rawValue) else {
            throw Problem.invalid("action", "the action is retry, cancel or delete")
        }
        let dryRun = request.dryRun ?? false
        let outcome = try await client.bulk(action, matching: filter, dryRun: dryRun, by: actor)
        return .ok(
            .init(
                body: .json(
                    .init(
                        action: .init(rawValue: action.rawValue)!, dryRun: dryRun, matched: outcome.matched,
                        changed: outcome.changed, sample: outcome.sample.map(Components.Schemas.JobSummary.init),
                        pausedQueues: outcome.pausedQueues.isEmpty ? nil : outcome.pausedQueues))))
    }

    /// What keeps a job just enqueued from running, as far as the catalog of workers tells
    /// without reading the job back: nothing if the catalog cannot be read (the job is enqueued).
    private func waitingFor(_ job: JobRecord) async -> [WaitReason] {
        Self.waitingFor(job, try? await catalog.current())
    }

    private static func waitingFor(_ job: JobRecord, _ serving: WorkersServing?) -> [WaitReason] {
        guard let serving else { return [] }
        return WaitReason.reasons(for: job, facts: serving.facts(queue: job.queue, task: job.currentTask))
    }

    /// 422 naming the tasks no live worker serves, or a stage's own queue no live worker serves
    /// with its task, unless `?unchecked=true`.
    func checkTasks(_ jobs: [NewJob], unchecked: Bool?, path: String? = nil) async throws {
        guard unchecked != true else { return }
        var names: [String] = []
        var paths: [String: String] = [:]
        var routed: [(task: String, queue: String, path: String)] = []
        func collect(_ stages: [StageSpec], at path: String) {
            for (index, stage) in stages.enumerated() {
                if let task = stage.task, let queue = task.queue {
                    routed.append((task.task, queue, "\(path)[\(index)].queue"))
                }
                switch stage.body {
                case .task(let task) where paths[task.task] == nil:
                    paths[task.task] = "\(path)[\(index)].task"
                    names.append(task.task)
                case .group(let members): collect(members, at: "\(path)[\(index)].group")
                case .chain(let stages): collect(stages, at: "\(path)[\(index)].stages")
                case .map(let map): collect(map.stages, at: "\(path)[\(index)].stages")
                case .task, .await: break
                }
            }
        }
        for (index, job) in jobs.enumerated() {
            collect(job.chain.stages, at: path ?? (jobs.count > 1 ? "jobs[\(index)].stages" : "stages"))
        }
        let unknown = try await catalog.unknown(names)
        guard let first = unknown.first else {
            if let stage = try await catalog.unserved(routed) {
                var problem = Problem(
                    .unprocessableContent, type: "unknown-task", title: "No live worker serves this task",
                    detail: "no worker seen in the last \(DurationFormat.format(configuration.taskWindow)) serves "
                        + "\"\(stage.task)\" in queue \"\(stage.queue)\" (enqueue anyway with ?unchecked=true)",
                    path: stage.path)
                problem.tasks = [stage.task]
                throw problem
            }
            return
        }
        var problem = Problem(
            .unprocessableContent, type: "unknown-task", title: "No live worker serves this task",
            detail: "no worker seen in the last \(DurationFormat.format(configuration.taskWindow)) serves "
                + unknown.map { "\"\($0)\"" }.joined(separator: ", ")
                + " (enqueue anyway with ?unchecked=true)",
            path: paths[first])
        problem.tasks = unknown
        throw problem
    }

    // MARK: read

    /// `GET /v1/jobs/{id}`, optionally waiting (`?wait=30s`) until the job has finished.
    func getJob(_ input: Operations.GetJob.Input) async throws -> Operations.GetJob.Output {
        let id = try Self.jobID(input.path.id)
        let wait = try wait(input.query.wait)
        var (job, members) = try await readableJob(id)
        if let wait, !job.state.isFinished {
            job = await waited(job, for: wait)
            if let read = try? await store.jobWithMembers(id) { (job, members) = read }
        }
        return .ok(.init(body: .json(.init(job, members: members))))
    }

    /// The job once it has finished, or as it is when `wait` runs out, the server begins to shut
    /// down (a long poll must not hold up a drain) or the job cannot be read.
    private func waited(_ job: JobRecord, for wait: Duration) async -> JobRecord {
        do {
            return try await cancelWhenGracefulShutdown {
                try await client.waitUntilFinished(job.id, timeout: wait)
            }
        } catch {
            return (try? await store.job(job.id)) ?? job
        }
    }

    /// The job, if the caller may see it: an `enqueue` token sees only its own, a token limited to
    /// queues only those queues' jobs (others are 404, so as not to tell which ids exist).
    private func readableJob(_ id: Int64) async throws -> (JobRecord, [MemberRecord]) {
        let caller = Caller.current
        try await checkJobInScope(id)
        guard let read = try await store.jobWithMembers(id),
            caller?.role != .enqueue || caller?.owns(read.job.enqueuedBy) == true
        else { throw Problem.notFound("no job has id \(id)") }
        return read
    }

    /// `GET /v1/jobs`: newest first, `limit` at a time, `next_cursor` to go on.
    func listJobs(_ input: Operations.ListJobs.Input) async throws -> Operations.ListJobs.Output {
        let query = input.query
        if let error = query.error, !(1...200).contains(error.unicodeScalars.count) {
            throw Problem.invalid("error", "error is text of 1 to 200 characters")
        }
        let queue = try Self.name(query.queue, "queue")
        if let queue { try checkQueue(queue, path: "queue") }
        var filter = JobFilter(
            queue: queue, lane: try Self.name(query.lane, "lane"), task: try Self.name(query.task, "task"),
            error: query.error, createdAfter: query.createdAfter, createdBefore: query.createdBefore,
            finishedAfter: query.finishedAfter, finishedBefore: query.finishedBefore, queues: scopedQueues,
            limit: try Self.limit(query.limit, default: 50))
        // An `enqueue` token lists the jobs it enqueued, as it reads them.
        if let caller = Caller.current, caller.role == .enqueue { filter.enqueuedBy = caller.fingerprints }
        if let states = query.state {
            filter.states = try states.split(separator: ",", omittingEmptySubsequences: false).map { name in
                guard let state = JobState(rawValue: String(name)) else {
                    throw Problem.invalid(
                        "state",
                        "unknown state \"\(name)\"; states are "
                            + JobState.allCases.map(\.rawValue).joined(separator: ", "))
                }
                return state
            }
        }
        filter.metadata = try Self.keyValues(query.metadata, "metadata")
        filter.args = try Self.keyValues(query.args, "args")
        filter.before = try Cursor.id(query.cursor, kind: "job")
        let limit = filter.limit
        filter.limit += 1
        let listing = try await store.jobs(filter)
        let page = listing.jobs.prefix(limit)
        // A full page goes on below its last job; a page whose scan stopped early, below the scan.
        let next =
            listing.jobs.count > limit
            ? Cursor.encode("job:\(page.last!.id)") : listing.scannedTo.map { Cursor.encode("job:\($0)") }
        return .ok(.init(body: .json(.init(jobs: page.map(Components.Schemas.JobSummary.init), nextCursor: next))))
    }

    /// `key=value` filters (`?metadata=tenant=42`, or `?metadata.tenant=42`) by key.
    static func keyValues(_ items: [String]?, _ parameter: String) throws -> [String: String] {
        try keyValues(
            (items ?? []).map { item in
                guard let equals = item.firstIndex(of: "=") else {
                    throw Problem.invalid(parameter, "\(parameter) is written key=value (or \(parameter).key=value)")
                }
                return (String(item[..<equals]), String(item[item.index(after: equals)...]))
            }, parameter)
    }

    /// Key and value filters (a bulk filter's `metadata` object) checked: at most ten, a value of 1
    /// to 1,000 characters, each key once. A key may be of any length (the index keeps its first 120
    /// characters, and a longer one is checked on each job).
    static func keyValues(_ pairs: [String: String]?, _ parameter: String) throws -> [String: String] {
        try keyValues((pairs ?? [:]).sorted { $0.key < $1.key }, parameter)
    }

    private static func keyValues(_ pairs: [(String, String)], _ parameter: String) throws -> [String: String] {
        var filters: [String: String] = [:]
        guard pairs.count <= 10 else { throw Problem.invalid(parameter, "at most 10 \(parameter) filters") }
        for (key, value) in pairs {
            let path = "\(parameter).\(key)"
            guard (1...1000).contains(value.unicodeScalars.count) else {
                throw Problem.invalid(path, "\(path) is a value of 1 to 1000 characters")
            }
            guard filters.updateValue(value, forKey: key) == nil else {
                throw Problem.invalid(path, "\(path) is given twice")
            }
        }
        return filters
    }

    /// A name filter, by the name rule.
    static func name(_ value: String?, _ parameter: String) throws -> String? {
        guard let value else { return nil }
        do {
            try ChainDefinition.checkName(value, path: parameter, what: parameter)
        } catch {
            throw Problem.invalid(error)
        }
        return value
    }

    static func limit(_ value: Int?, default: Int) throws -> Int {
        guard let value else { return `default` }
        guard (1...1000).contains(value) else { throw Problem.invalid("limit", "limit must be within 1...1000") }
        return value
    }

    // MARK: steer

    /// `POST /v1/jobs/{id}/cancel`: 200 with the cancelled job; 409 if it had already finished.
    func cancelJob(_ input: Operations.CancelJob.Input) async throws -> Operations.CancelJob.Output {
        let id = try Self.jobID(input.path.id)
        try await checkJobInScope(id)
        guard try await !store.cancel(id, by: actor).isEmpty else {
            let state = try await store.job(id)?.state.rawValue ?? "finished"
            throw Problem.conflict("job \(id) is \(state): only a job that has not finished can be cancelled")
        }
        guard let (job, members) = try await store.jobWithMembers(id) else {
            throw Problem.notFound("no job has id \(id)")
        }
        let task = job.chain.indices.contains(job.stage) ? job.chain[job.stage].kind : "none"
        Counter(
            label: "baton_jobs_cancelled_total",
            dimensions: [("queue", queueLabels.label(job.queue)), ("task", taskLabels.label(task))]
        ).increment()
        return .ok(.init(body: .json(.init(job, members: members))))
    }

    /// `POST /v1/jobs/{id}/retry`: a scheduled or retryable job runs its stage now; a discarded or
    /// cancelled job starts again at its failed stage.
    func retryJob(_ input: Operations.RetryJob.Input) async throws -> Operations.RetryJob.Output {
        let id = try Self.jobID(input.path.id)
        try await checkJobInScope(id)
        guard try await store.retry(id, by: actor) != nil else {
            guard let job = try await store.job(id) else { throw Problem.notFound("no job has id \(id)") }
            let holder = try await store.uniqueKeyHolder(of: id)
            let reason =
                job.parentID != nil
                ? "job \(id) is a group member: retry its parent \(job.parentID!)"
                : holder != nil && job.state.isFinished && job.state != .completed
                    ? "job \(holder!) holds job \(id)'s unique key: it cannot run beside it"
                    : job.state.isFinished && job.state != .completed
                        ? "members of job \(id)'s failed group are still running: cancel them or wait"
                        : "job \(id) is \(job.state.rawValue): only a scheduled, retryable, discarded or cancelled "
                            + "job can be retried"
            throw Problem.conflict(reason)
        }
        guard let (job, members) = try await store.jobWithMembers(id) else {
            throw Problem.notFound("no job has id \(id)")
        }
        return .ok(.init(body: .json(.init(job, members: members))))
    }

    /// `POST /v1/jobs/{id}/skip`: 200 with the job, discarded for the reason given; 409 for a job
    /// that is running, finished, a group member or a group stage waiting for its members.
    func skipJob(_ input: Operations.SkipJob.Input) async throws -> Operations.SkipJob.Output {
        let id = try Self.jobID(input.path.id)
        try await checkJobInScope(id)
        guard case .json(let body) = input.body else { throw Problem.invalid("", "a JSON body is required") }
        // JSON Schema counts code points; the generated code checks no length.
        guard body.reason.unicodeScalars.count <= 1000 else {
            throw Problem.invalid("reason", "reason must be at most 1000 characters")
        }
        // ASCII spaces, tabs and line breaks, as the spec's pattern names them: a validator and
        // this check agree on what is blank (Unicode's whitespace differs between languages).
        let reason = body.reason.trimmingCharacters(in: CharacterSet(charactersIn: "\t\n\u{0B}\u{0C}\r "))
        guard !reason.isEmpty else { throw Problem.invalid("reason", "reason must say why the job is skipped") }
        guard !reason.unicodeScalars.contains("\u{0}") else {
            throw Problem.invalid("reason", "reason must not hold a NUL character, which PostgreSQL cannot store")
        }
        guard try await store.skip(id, reason: reason, by: actor) else {
            guard let job = try await store.job(id) else { throw Problem.notFound("no job has id \(id)") }
            throw Problem.conflict(
                job.parentID != nil
                    ? "job \(id) is a group member: skip or cancel its parent \(job.parentID!)"
                    : job.state == .running
                        ? "job \(id) is running: cancel it instead (its worker stops it)"
                        : job.state == .waiting
                            ? "job \(id)'s group stage waits for its members: cancel it instead"
                            : "job \(id) is \(job.state.rawValue): only a job that has not finished can be skipped")
        }
        guard let (job, members) = try await store.jobWithMembers(id) else {
            throw Problem.notFound("no job has id \(id)")
        }
        return .ok(.init(body: .json(.init(job, members: members))))
    }

    /// `DELETE /v1/jobs/{id}`: 204; a job that has not finished is refused (409).
    func deleteJob(_ input: Operations.DeleteJob.Input) async throws -> Operations.DeleteJob.Output {
        let id = try Self.jobID(input.path.id)
        try await checkJobInScope(id)
        guard try await store.delete(id, by: actor) else {
            guard let job = try await store.job(id) else { throw Problem.notFound("no job has id \(id)") }
            throw Problem.conflict(
                job.parentID != nil
                    ? "job \(id) is a group member: delete its parent"
                    : "job \(id) is \(job.state.rawValue): only a finished job can be deleted")
        }
        return .noContent(.init())
    }
}
