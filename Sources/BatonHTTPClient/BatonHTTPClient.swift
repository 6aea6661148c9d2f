import AsyncHTTPClient
import Baton
import BatonAPI
import Foundation
import OpenAPIAsyncHTTPClient
import OpenAPIRuntime

/// Baton's control plane over HTTP, for Swift services that enqueue and follow jobs without a
/// connection to PostgreSQL: the client generated from the OpenAPI document, with numbers kept
/// exact. Every method throws ``BatonHTTPError`` (declared as plain `throws`: with typed throws,
/// `catch BatonHTTPError.refused(let p) where …` crashes the Swift 6.3 compiler).
///
/// ```swift
/// let baton = try BatonHTTPClient(url: URL(string: "http://127.0.0.1:8080")!, token: token)
/// let job = try await baton.enqueue(Chain(input: order).then(Render(template: "invoice")), queue: "billing")
/// let document = try await job.result()
/// ```
public struct BatonHTTPClient: Sendable {
    public typealias Job = Components.Schemas.Job
    public typealias JobRequest = Components.Schemas.JobRequest
    public typealias StageRequest = Components.Schemas.StageRequest
    public typealias JobSummary = Components.Schemas.JobSummary
    public typealias JobPage = Components.Schemas.JobPage
    public typealias EnqueuedJob = Components.Schemas.EnqueuedJob
    public typealias Queue = Components.Schemas.Queue
    public typealias LanePage = Components.Schemas.LanePage
    public typealias LaneSetting = Components.Schemas.LaneSetting
    public typealias RateLimit = Components.Schemas.RateLimit
    public typealias Worker = Components.Schemas.Worker
    public typealias BulkFilter = Components.Schemas.BulkFilter
    public typealias SignalReceipt = Components.Schemas.SignalReceipt
    public typealias BulkAction = Components.Schemas.BulkRequest.ActionPayload
    public typealias BulkResponse = Components.Schemas.BulkResponse
    public typealias Schedule = Components.Schemas.Schedule
    public typealias ScheduleRequest = Components.Schemas.ScheduleRequest
    public typealias AuditPage = Components.Schemas.AuditPage

    /// The generated client, for what this type does not wrap.
    public let client: Client
    public let url: URL

    /// - Parameters:
    ///   - url: Where `baton serve` answers, such as `http://127.0.0.1:8080`.
    ///   - token: A bearer token (`BATON_API_TOKEN`, or the one `baton dev` prints).
    ///   - httpClient: The AsyncHTTPClient to send with. `HTTPClient.shared` retries connecting until
    ///     the request's timeout; a client with `connectionPool.retryConnectionEstablishment = false`
    ///     reports a server that is down at once (as the `baton` CLI does).
    ///   - timeout: The longest one request may take; long polls (`wait`) are kept shorter.
    public init(url: URL, token: String?, httpClient: HTTPClient = .shared, timeout: Duration = .seconds(330)) throws {
        guard url.scheme == "http" || url.scheme == "https", url.host != nil else {
            throw BatonHTTPError.invalidURL(url.absoluteString)
        }
        self.url = url
        client = Client(
            serverURL: url, configuration: .baton,
            transport: AsyncHTTPClientTransport(
                configuration: .init(client: httpClient, timeout: .milliseconds(timeout.milliseconds))),
            middlewares: [
                HeadersMiddleware(token: token), RefusalMiddleware(), RawHeaderValuesClientMiddleware(),
                ExactJSONClientMiddleware(),
            ])
    }

    // MARK: enqueue

    /// What an enqueue did.
    public struct Enqueued: Sendable {
        /// The job as it is now (with `wait`, as it was when it finished or the time ran out).
        public var job: Job
        /// False when an idempotency key named an existing job.
        public var inserted: Bool
    }

    /// Enqueues a job as the API's JSON describes it. With `wait`, answers once the job has finished
    /// or the time is up (at most the server's longest wait, 5 minutes by default).
    public func enqueue(
        _ request: JobRequest, idempotencyKey: String? = nil, unchecked: Bool = false, wait: Duration? = nil
    ) async throws -> Enqueued {
        let output = try await call {
            try await client.enqueueJob(
                query: .init(unchecked: unchecked ? true : nil, wait: wait.map(DurationFormat.format)),
                headers: .init(idempotencyKey: idempotencyKey), body: .json(ExactJobRequest(request)))
        }
        switch output {
        case .created(let created): return Enqueued(job: try Self.json(created.body.json), inserted: true)
        case .ok(let ok): return Enqueued(job: try Self.json(ok.body.json), inserted: false)
        default: throw Self.unexpected(output)
        }
    }

    /// Enqueues a typed chain; `result()` on the handle waits for its output.
    public func enqueue<Output>(
        _ chain: Chain<Output>, queue: String = "default", priority: Int = 0, runAt: Date? = nil,
        idempotencyKey: String? = nil, metadata: JSONValue = [:], unchecked: Bool = false
    ) async throws -> Handle<Output> {
        var request = try JobRequest(try chain.definition())
        request.queue = queue
        request.priority = Int32(clamping: priority)
        request.runAt = runAt
        request.idempotencyKey = idempotencyKey
        request.metadata = metadata
        let enqueued = try await enqueue(request, unchecked: unchecked)
        return Handle(id: enqueued.job.id, inserted: enqueued.inserted, client: self)
    }

    /// Enqueues every job or none, in one transaction; one entry per job, in order.
    public func enqueue(batch jobs: [JobRequest], unchecked: Bool = false) async throws
        -> [EnqueuedJob]
    {
        let output = try await call {
            try await client.enqueueJobs(
                query: .init(unchecked: unchecked ? true : nil), body: .json(.init(jobs: jobs)))
        }
        switch output {
        case .created(let created): return try Self.json(created.body.json).jobs
        case .ok(let ok): return try Self.json(ok.body.json).jobs
        default: throw Self.unexpected(output)
        }
    }

    // MARK: follow

    /// The job with every stage. With `wait`, answers once it has finished or the time is up.
    public func job(_ id: Int64, wait: Duration? = nil) async throws -> Job {
        let output = try await call {
            try await client.getJob(path: .init(id: id), query: .init(wait: wait.map(DurationFormat.format)))
        }
        guard case .ok(let ok) = output else { throw Self.unexpected(output) }
        return try Self.json(ok.body.json)
    }

    /// Waits until the job has finished (or `timeout` is up, if given) with long polls, and returns
    /// it as it is then.
    public func waitUntilFinished(_ id: Int64, timeout: Duration? = nil) async throws -> Job {
        let deadline = timeout.map { ContinuousClock.now + $0 }
        while true {
            let left = deadline.map { $0 - ContinuousClock.now } ?? .seconds(60)
            let job = try await self.job(id, wait: max(.zero, min(left, .seconds(60))))
            if [.completed, .discarded, .cancelled].contains(job.state) || left <= .zero { return job }
            if Task.isCancelled { throw BatonHTTPError.cancelled }
        }
    }

    /// Jobs, newest first; pass the page's `nextCursor` as `cursor` for the next. `metadata` and
    /// `args`: jobs whose metadata, or a stage's args, hold each key with that value (a string as
    /// it is, a number as it was written, `true` or `false`).
    public func jobs(
        states: [Components.Schemas.JobState] = [], queue: String? = nil, lane: String? = nil, task: String? = nil,
        error: String? = nil, createdAfter: Date? = nil, createdBefore: Date? = nil,
        metadata: [String: String] = [:], args: [String: String] = [:], limit: Int? = nil, cursor: String? = nil
    ) async throws -> JobPage {
        func items(_ pairs: [String: String]) -> [String]? {
            pairs.isEmpty ? nil : pairs.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        }
        let output = try await call {
            try await client.listJobs(
                query: .init(
                    state: states.isEmpty ? nil : states.map(\.rawValue).joined(separator: ","), queue: queue,
                    lane: lane, task: task, error: error, createdAfter: createdAfter, createdBefore: createdBefore,
                    metadata: items(metadata), args: items(args), limit: limit, cursor: cursor))
        }
        guard case .ok(let ok) = output else { throw Self.unexpected(output) }
        return try Self.json(ok.body.json)
    }

    // MARK: steer

    /// Cancels a job that has not finished; a running stage is stopped on its worker.
    public func cancel(_ id: Int64) async throws -> Job {
        let output = try await call { try await client.cancelJob(path: .init(id: id)) }
        guard case .ok(let ok) = output else { throw Self.unexpected(output) }
        return try Self.json(ok.body.json)
    }

    /// Runs a scheduled or retryable job's stage now (a lane holder keeps its place), or starts a
    /// discarded or cancelled job again at its failed stage.
    public func retry(_ id: Int64) async throws -> Job {
        let output = try await call { try await client.retryJob(path: .init(id: id)) }
        guard case .ok(let ok) = output else { throw Self.unexpected(output) }
        return try Self.json(ok.body.json)
    }

    /// Discards a job that is not running, `reason` kept as its stage's last error; a lane it
    /// holds moves on at once.
    public func skip(_ id: Int64, reason: String) async throws -> Job {
        let output = try await call {
            try await client.skipJob(path: .init(id: id), body: .json(.init(reason: reason)))
        }
        guard case .ok(let ok) = output else { throw Self.unexpected(output) }
        return try Self.json(ok.body.json)
    }

    /// Delivers signal `signal` to job `id`: `payload` becomes the output of the stage that awaits
    /// it. The receipt says whether the job goes on (`resumed`), keeps it for a stage it has not
    /// reached (`kept`) or had it already (`duplicate`: nothing changed). With `token`, the
    /// signal's one-time token is sent instead of the client's API token.
    public func signal(_ id: Int64, _ signal: String, payload: JSONValue, token: String? = nil) async throws
        -> SignalReceipt
    {
        let output = try await call {
            try await client.deliverSignal(
                path: .init(id: id, name: signal), query: .init(token: token), body: .json(payload))
        }
        guard case .ok(let ok) = output else { throw Self.unexpected(output) }
        return try Self.json(ok.body.json)
    }

    /// Retries, cancels or deletes every job `filter` matches in a state the action applies to, in
    /// batches on the server; with `dryRun`, counts them and returns the first ten.
    public func bulk(_ action: BulkAction, matching filter: BulkFilter, dryRun: Bool = false) async throws
        -> BulkResponse
    {
        let output = try await call {
            try await client.bulkJobs(body: .json(.init(action: action, dryRun: dryRun, filter: filter)))
        }
        guard case .ok(let ok) = output else { throw Self.unexpected(output) }
        return try Self.json(ok.body.json)
    }

    // MARK: schedules

    /// Every schedule, by name, with its next slots and its last job.
    public func schedules() async throws -> [Schedule] {
        let output = try await call { try await client.listSchedules() }
        guard case .ok(let ok) = output else { throw Self.unexpected(output) }
        return try Self.json(ok.body.json).schedules
    }

    public func schedule(_ name: String) async throws -> Schedule {
        let output = try await call { try await client.getSchedule(path: .init(name: name)) }
        guard case .ok(let ok) = output else { throw Self.unexpected(output) }
        return try Self.json(ok.body.json)
    }

    /// Creates or replaces a schedule (not one the settings file defines).
    public func setSchedule(_ name: String, _ request: ScheduleRequest, unchecked: Bool = false) async throws
        -> Schedule
    {
        let output = try await call {
            try await client.putSchedule(
                path: .init(name: name), query: .init(unchecked: unchecked ? true : nil), body: .json(request))
        }
        guard case .ok(let ok) = output else { throw Self.unexpected(output) }
        return try Self.json(ok.body.json)
    }

    public func deleteSchedule(_ name: String) async throws {
        let output = try await call { try await client.deleteSchedule(path: .init(name: name)) }
        guard case .noContent = output else { throw Self.unexpected(output) }
    }

    /// Pauses a schedule, or resumes it from its next slot after now.
    public func setPaused(_ paused: Bool, schedule name: String) async throws -> Schedule {
        if paused {
            let output = try await call { try await client.pauseSchedule(path: .init(name: name)) }
            guard case .ok(let ok) = output else { throw Self.unexpected(output) }
            return try Self.json(ok.body.json)
        }
        let output = try await call { try await client.resumeSchedule(path: .init(name: name)) }
        guard case .ok(let ok) = output else { throw Self.unexpected(output) }
        return try Self.json(ok.body.json)
    }

    /// Enqueues a schedule's job now, outside its slots.
    public func runSchedule(_ name: String) async throws -> EnqueuedJob {
        let output = try await call { try await client.runSchedule(path: .init(name: name)) }
        guard case .created(let created) = output else { throw Self.unexpected(output) }
        return try Self.json(created.body.json)
    }

    /// Deletes a finished job.
    public func delete(_ id: Int64) async throws {
        let output = try await call { try await client.deleteJob(path: .init(id: id)) }
        guard case .noContent = output else { throw Self.unexpected(output) }
    }

    // MARK: the cluster

    public func queues() async throws -> [Queue] {
        let output = try await call { try await client.listQueues() }
        guard case .ok(let ok) = output else { throw Self.unexpected(output) }
        return try Self.json(ok.body.json).queues
    }

    /// Pauses (`true`) or resumes a queue.
    /// Pauses or resumes `queue`. A pause of a queue that no job is in and no worker serves is
    /// refused (``BatonProblem/Kind/unknownQueue``) unless `unchecked`.
    public func setPaused(_ paused: Bool, queue: String, unchecked: Bool = false) async throws {
        if paused {
            let output = try await call {
                try await client.pauseQueue(path: .init(name: queue), query: .init(unchecked: unchecked ? true : nil))
            }
            guard case .ok = output else { throw Self.unexpected(output) }
        } else {
            let output = try await call { try await client.resumeQueue(path: .init(name: queue)) }
            guard case .ok = output else { throw Self.unexpected(output) }
        }
    }

    /// Makes `queue`'s jobs that name no fairness key take the one at `from` in their metadata or
    /// input (`metadata.tenant`), or, with nil, name their own again.
    @discardableResult
    public func setFairKeySource(_ from: String?, queue: String) async throws -> Components.Schemas.QueueFairKey {
        if let from {
            let output = try await call {
                try await client.setFairKeySource(path: .init(name: queue), body: .json(.init(from: from)))
            }
            guard case .ok(let ok) = output else { throw Self.unexpected(output) }
            return try Self.json(ok.body.json)
        }
        let output = try await call { try await client.clearFairKeySource(path: .init(name: queue)) }
        guard case .ok(let ok) = output else { throw Self.unexpected(output) }
        return try Self.json(ok.body.json)
    }

    /// Lanes by name; only those whose holder failed and waits to retry if `blocked`.
    public func lanes(blocked: Bool = false, limit: Int? = nil, cursor: String? = nil) async throws -> LanePage {
        let output = try await call {
            try await client.listLanes(query: .init(blocked: blocked ? true : nil, limit: limit, cursor: cursor))
        }
        guard case .ok(let ok) = output else { throw Self.unexpected(output) }
        return try Self.json(ok.body.json)
    }

    /// The lane widths operators set, by lane (a lane, or a prefix ending in `*`).
    public func laneSettings() async throws -> [LaneSetting] {
        let output = try await call { try await client.listLaneSettings() }
        guard case .ok(let ok) = output else { throw Self.unexpected(output) }
        return try Self.json(ok.body.json).settings
    }

    /// Sets how many stages of `lane` (or of every lane a prefix ending in `*` starts) run at once.
    public func setLaneWidth(_ width: Int, lane: String) async throws -> LaneSetting {
        let output = try await call {
            try await client.setLaneSetting(path: .init(lane: lane), body: .json(.init(width: width)))
        }
        guard case .ok(let ok) = output else { throw Self.unexpected(output) }
        return try Self.json(ok.body.json)
    }

    /// Deletes a lane's setting: it takes its prefix's width, or 1.
    public func deleteLaneSetting(_ lane: String) async throws {
        let output = try await call { try await client.deleteLaneSetting(path: .init(lane: lane)) }
        guard case .noContent = output else { throw Self.unexpected(output) }
    }

    /// Every rate limit, by key, with the tokens each has now.
    public func rateLimits() async throws -> [RateLimit] {
        let output = try await call { try await client.listRateLimits() }
        guard case .ok(let ok) = output else { throw Self.unexpected(output) }
        return try Self.json(ok.body.json).rateLimits
    }

    /// Lets at most `rate` stages naming `key` start per `per` (`"1s"`), `burst` at once.
    public func setRateLimit(_ key: String, rate: Int, per: String, burst: Int? = nil) async throws -> RateLimit {
        let output = try await call {
            try await client.setRateLimit(path: .init(key: key), body: .json(.init(rate: rate, per: per, burst: burst)))
        }
        guard case .ok(let ok) = output else { throw Self.unexpected(output) }
        return try Self.json(ok.body.json)
    }

    /// Deletes the rate limit of `key`.
    public func deleteRateLimit(_ key: String) async throws {
        let output = try await call { try await client.deleteRateLimit(path: .init(key: key)) }
        guard case .noContent = output else { throw Self.unexpected(output) }
    }

    public func workers() async throws -> [Worker] {
        let output = try await call { try await client.listWorkers() }
        guard case .ok(let ok) = output else { throw Self.unexpected(output) }
        return try Self.json(ok.body.json).workers
    }

    /// The audit trail, newest first: every change made through the API (an admin token limited
    /// to no queue).
    public func auditEvents(
        actor: String? = nil, action: String? = nil, target: String? = nil, limit: Int? = nil, cursor: String? = nil
    ) async throws -> AuditPage {
        let output = try await call {
            try await client.listAuditEvents(
                query: .init(actor: actor, action: action, target: target, limit: limit, cursor: cursor))
        }
        guard case .ok(let ok) = output else { throw Self.unexpected(output) }
        return try Self.json(ok.body.json)
    }

    // MARK: calls

    /// Runs a generated call with exact numbers, its failures as ``BatonHTTPError``.
    private func call<T: Sendable>(_ body: () async throws -> T) async throws(BatonHTTPError) -> T {
        do {
            return try await ExactJSON.call(body)
        } catch {
            throw BatonHTTPError(error, url: url)
        }
    }

    /// A body's JSON, which the generated accessor reads; a body of another type is a server of
    /// another version.
    private static func json<T>(_ accessor: @autoclosure () throws -> T) throws(BatonHTTPError) -> T {
        do {
            return try accessor()
        } catch {
            throw .unexpectedAnswer(status: 200, "\(error)")
        }
    }

    /// A documented answer the call does not expect (the refusals are thrown before this).
    private static func unexpected(_ output: Any) -> BatonHTTPError {
        .unexpectedAnswer(status: 0, "\(output)")
    }
}
