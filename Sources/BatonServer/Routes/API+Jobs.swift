import Baton
import BatonAPI
import BatonPostgres
import Foundation
import HTTPTypes
import Hummingbird
import Metrics
import ServiceLifecycle

extension API {
    var jobRoutes: [Route] {
        [
            Route(method: .post, path: "/v1/jobs", access: .enqueuers, handler: enqueue),
            Route(method: .post, path: "/v1/jobs/batch", access: .enqueuers, handler: enqueueBatch),
            Route(method: .get, path: "/v1/jobs", access: .readers, handler: list),
            Route(method: .get, path: "/v1/jobs/{id}", access: .jobReaders, handler: show),
            Route(method: .post, path: "/v1/jobs/{id}/cancel", access: .admin, handler: cancel),
            Route(method: .post, path: "/v1/jobs/{id}/retry", access: .admin, handler: retry),
            Route(method: .delete, path: "/v1/jobs/{id}", access: .admin, handler: delete),
        ]
    }

    // MARK: enqueue

    /// `POST /v1/jobs`: 201 with the new job, or 200 with the job an idempotency key already names.
    /// With `?wait=30s`, answers once the job has finished or the time is up (request/response over
    /// a queue).
    @Sendable func enqueue(_ request: Request, context: BatonRequestContext, caller: Caller?) async throws -> Response {
        let query = Query(request)
        let wait = try query.duration("wait", max: configuration.maxWait)
        let body = try await JSONBody.read(request, limit: configuration.maxBodySize)
        var job = try JobRequest().job(body)
        if let header = request.headers[.idempotencyKey] {
            let key = try JobRequest.idempotencyKey(header, path: "Idempotency-Key")
            if let field = job.idempotencyKey, field != key {
                throw Problem.invalid("idempotency_key", "the Idempotency-Key header and idempotency_key differ")
            }
            job.idempotencyKey = key
        }
        job.enqueuedBy = caller?.fingerprint
        try await checkTasks([job], query: query)
        let enqueued = try await client.enqueue([job])[0]
        if enqueued.inserted { countEnqueued(job) }
        var record: JobRecord
        if enqueued.inserted {
            record = JobRecord(job: job, enqueued: enqueued)
        } else {
            record = try await client.job(enqueued.id)
            if caller?.role == .enqueue, record.enqueuedBy != caller?.fingerprint {
                throw Problem.idempotencyKeyTaken(path: "idempotency_key")
            }
        }
        // The job is committed: from here on, trouble answers with what is known rather than a 500
        // that would make the caller enqueue it again.
        if let wait, !record.state.isFinished { record = await waited(record, for: wait) }
        let members = wait != nil || !enqueued.inserted ? (try? await members(of: record)) ?? [] : []
        var response = JSONBody.response(
            JobView(record, members: members), status: enqueued.inserted ? .created : .ok)
        response.headers[.location] = "/v1/jobs/\(enqueued.id)"
        return response
    }

    /// `POST /v1/jobs/batch`: every job or none, in one transaction.
    @Sendable func enqueueBatch(_ request: Request, context: BatonRequestContext, caller: Caller?) async throws
        -> Response
    {
        let body = try await JSONBody.read(request, limit: configuration.maxBodySize)
        guard case .object(let fields) = body else { throw Problem.invalid("", "the body must be a JSON object") }
        if let unknown = fields.keys.first(where: { BatchSubmission.CodingKeys(stringValue: $0) == nil }) {
            throw Problem.invalid(unknown, "unknown field \"\(unknown)\"; a batch is {\"jobs\": [job, …]}")
        }
        guard case .array(let items)? = fields["jobs"] else { throw Problem.invalid("jobs", "jobs must be an array") }
        guard (1...10_000).contains(items.count) else {
            throw Problem.invalid("jobs", "a batch holds 1 to 10000 jobs, got \(items.count)")
        }
        let now = Date()
        let jobs = try items.enumerated().map { index, item in
            var job = try JobRequest(prefix: "jobs[\(index)].").job(item, now: now)
            job.enqueuedBy = caller?.fingerprint
            return job
        }
        try await checkTasks(jobs, query: Query(request))
        if caller?.role == .enqueue {
            // A key naming another caller's job would answer with that job's id and state.
            let keys = jobs.compactMap(\.idempotencyKey)
            if let taken = try await store.idempotencyKeys(keys, notEnqueuedBy: caller?.fingerprint).first,
                let index = jobs.firstIndex(where: { $0.idempotencyKey == taken })
            {
                throw Problem.idempotencyKeyTaken(path: "jobs[\(index)].idempotency_key")
            }
        }
        let enqueued = try await client.enqueue(jobs)
        for (job, result) in zip(jobs, enqueued) where result.inserted { countEnqueued(job) }
        return JSONBody.response(
            BatchResponse(jobs: enqueued.map(EnqueuedJobView.init)),
            status: enqueued.contains(where: \.inserted) ? .created : .ok)
    }

    /// 422 naming the tasks no live worker serves, unless `?unchecked=true`.
    private func checkTasks(_ jobs: [NewJob], query: Query) async throws {
        guard try !query.bool("unchecked") else { return }
        var names: [String] = []
        var paths: [String: String] = [:]
        func collect(_ stages: [StageSpec], at path: String) {
            for (index, stage) in stages.enumerated() {
                switch stage.body {
                case .task(let task) where paths[task.task] == nil:
                    paths[task.task] = "\(path)[\(index)].task"
                    names.append(task.task)
                case .group(let members): collect(members, at: "\(path)[\(index)].group")
                case .task: break
                }
            }
        }
        for (index, job) in jobs.enumerated() {
            collect(job.chain.stages, at: jobs.count > 1 ? "jobs[\(index)].stages" : "stages")
        }
        let unknown = try await catalog.unknown(names)
        guard let first = unknown.first else { return }
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
    @Sendable func show(_ request: Request, context: BatonRequestContext, caller: Caller?) async throws -> Response {
        let id = try Self.jobID(context)
        let wait = try Query(request).duration("wait", max: configuration.maxWait)
        var job = try await readableJob(id, caller: caller)
        if let wait, !job.state.isFinished { job = await waited(job, for: wait) }
        return JSONBody.response(JobView(job, members: try await members(of: job)))
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

    /// The job, if the caller may see it: an `enqueue` token sees only its own (others are 404,
    /// so as not to tell which ids exist).
    private func readableJob(_ id: Int64, caller: Caller?) async throws -> JobRecord {
        guard let job = try await store.job(id), caller?.role != .enqueue || job.enqueuedBy == caller?.fingerprint
        else { throw Problem.notFound("no job has id \(id)") }
        return job
    }

    private func members(of job: JobRecord) async throws -> [MemberRecord] {
        guard job.chain.contains(where: { if case .group = $0.body { true } else { false } }) else { return [] }
        return try await store.members(of: job.id)
    }

    /// `GET /v1/jobs`: newest first, `limit` at a time, `next_cursor` to go on.
    @Sendable func list(_ request: Request, context: BatonRequestContext, caller: Caller?) async throws -> Response {
        let query = Query(request)
        var filter = JobFilter(
            queue: try query.string("queue"), lane: try query.string("lane"), task: try query.string("task"),
            limit: try query.int("limit", default: 50, range: 1...1000))
        if let states = try query.string("state") {
            filter.states = try states.split(separator: ",").map { name in
                guard let state = JobState(rawValue: String(name)) else {
                    throw Problem.invalid(
                        "state",
                        "unknown state \"\(name)\"; states are "
                            + JobState.allCases.map(\.rawValue).joined(separator: ", "))
                }
                return state
            }
        }
        if let key = try Cursor.decode(try query.string("cursor")) {
            guard key.hasPrefix("job:"), let id = Int64(key.dropFirst(4)) else {
                throw Problem.invalid("cursor", "cursor is not one this server handed out")
            }
            filter.before = id
        }
        let limit = filter.limit
        filter.limit += 1
        let jobs = try await store.jobs(filter)
        let page = jobs.prefix(limit)
        let next = jobs.count > limit ? Cursor.encode("job:\(page.last!.id)") : nil
        return JSONBody.response(JobPage(jobs: page.map(JobSummaryView.init), nextCursor: next))
    }

    // MARK: steer

    /// `POST /v1/jobs/{id}/cancel`: 200 with the cancelled job; 409 if it had already finished.
    @Sendable func cancel(_ request: Request, context: BatonRequestContext, caller: Caller?) async throws -> Response {
        let id = try Self.jobID(context)
        guard try await !store.cancel(id).isEmpty else {
            let state = try await store.job(id)?.state.rawValue ?? "finished"
            throw Problem.conflict("job \(id) is \(state): only a job that has not finished can be cancelled")
        }
        guard let job = try await store.job(id) else { throw Problem.notFound("no job has id \(id)") }
        let task = job.chain.indices.contains(job.stage) ? job.chain[job.stage].task?.task ?? "group" : "none"
        Counter(
            label: "baton_jobs_cancelled_total",
            dimensions: [("queue", queueLabels.label(job.queue)), ("task", taskLabels.label(task))]
        ).increment()
        return JSONBody.response(JobView(job, members: try await members(of: job)))
    }

    /// `POST /v1/jobs/{id}/retry`: a discarded or cancelled job starts again at its failed stage.
    @Sendable func retry(_ request: Request, context: BatonRequestContext, caller: Caller?) async throws -> Response {
        let id = try Self.jobID(context)
        guard try await store.retry(id) != nil else {
            guard let job = try await store.job(id) else { throw Problem.notFound("no job has id \(id)") }
            let reason =
                job.parentID != nil
                ? "job \(id) is a group member: retry its parent \(job.parentID!)"
                : job.state.isFinished && job.state != .completed
                    ? "members of job \(id)'s failed group are still running: cancel them or wait"
                    : "job \(id) is \(job.state.rawValue): only a discarded or cancelled job can be retried"
            throw Problem.conflict(reason)
        }
        return try await showJob(id)
    }

    /// `DELETE /v1/jobs/{id}`: 204; a job that has not finished is refused (409).
    @Sendable func delete(_ request: Request, context: BatonRequestContext, caller: Caller?) async throws -> Response {
        let id = try Self.jobID(context)
        guard try await store.delete(id) else {
            let job = try await store.job(id)
            throw Problem.conflict(
                job?.parentID != nil
                    ? "job \(id) is a group member: delete its parent"
                    : "job \(id) is \(job?.state.rawValue ?? "gone"): only a finished job can be deleted")
        }
        return Response(status: .noContent)
    }

    private func showJob(_ id: Int64) async throws -> Response {
        guard let job = try await store.job(id) else { throw Problem.notFound("no job has id \(id)") }
        return JSONBody.response(JobView(job, members: try await members(of: job)))
    }
}

extension HTTPField.Name {
    static let idempotencyKey = HTTPField.Name("Idempotency-Key")!
}
