import Baton
import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import Tracing

/// The Swift entry point to Baton: enqueue chains, follow and cancel jobs.
///
/// Run it in your `ServiceGroup` after its ``DatabasePool``: it listens for finished jobs (for
/// ``JobHandle/result()``) and sends coalesced wake-ups to workers (a signal delivered, say).
///
/// ```swift
/// let baton = BatonClient(pool: pool, logger: logger)
/// let job = try await baton.enqueue(Chain(input: order).then(Render(template: "invoice")))
/// let document = try await job.result()
/// ```
public final class BatonClient: Service, Sendable {
    package let store: Store
    package let listener: Listener
    package let signalTokens: SignalTokens
    let waker: Waker
    let batcher: EnqueueBatcher
    let logger: Logger

    /// `checkingArgs`: the tasks' own checks of their args (``TaskRegistry/argsCheck`` in
    /// `BatonWorker`, which knows the built-in `http` task's), made on every job enqueued through
    /// this client; nil checks no task's args.
    public init(pool: DatabasePool, logger: Logger, checkingArgs: ChainDefinition.ArgsCheck? = nil) {
        self.store = Store(pool: pool, logger: logger, checkingArgs: checkingArgs)
        self.signalTokens = SignalTokens(store: store)
        self.listener = Listener(configuration: pool.configuration, logger: logger)
        self.waker = Waker(store: store, logger: logger)
        self.batcher = EnqueueBatcher(write: { [store, waker] jobs in
            let enqueued = try await store.enqueueEach(jobs)
            if Store.callerWakes(afterEnqueueing: jobs.count) {
                waker.wake(Set(enqueued.compactMap { try? $0.get() }.filter { $0.state == .available }.map(\.queue)))
            }
            return enqueued
        })
        self.logger = logger
    }

    public func run() async throws {
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { try await self.listener.run() }
            group.addTask { try await self.waker.run() }
            let check = ListenCheck(listener: listener, waker: waker, logger: logger)
            group.addTask { _ = await cancelWhenGracefulShutdown { await check.run() } }
        }
    }

    // MARK: enqueue

    /// Enqueues a typed chain. A repeated `idempotencyKey` returns the existing job, and so does a
    /// job that `unique` says is the same as one that holds its key (the handle's `inserted` is
    /// false then). `fairKey`: the key (a tenant) its stages take turns under (``NewJob/fairKey``),
    /// with `fairWeight` (``NewJob/fairWeight``).
    public func enqueue<Output>(
        _ chain: Chain<Output>, queue: String = "default", priority: Int = 0, runAt: Date? = nil,
        idempotencyKey: String? = nil, metadata: JSONValue = [:], unique: Uniqueness? = nil, fairKey: String? = nil,
        fairWeight: Double? = nil
    ) async throws -> JobHandle<Output> {
        let job = NewJob(
            chain: try chain.definition(), queue: queue, priority: priority, runAt: runAt,
            idempotencyKey: idempotencyKey, metadata: metadata, unique: unique, fairKey: fairKey,
            fairWeight: fairWeight)
        let enqueued = try await enqueue([job])[0]
        return JobHandle(id: enqueued.id, inserted: enqueued.inserted, client: self)
    }

    /// Enqueues a typed chain on `connection`, inside the transaction the caller has open there:
    /// the job exists if and only if the caller commits (and the workers' wake-up, a NOTIFY in
    /// that transaction, is delivered then).
    public func enqueue<Output>(
        _ chain: Chain<Output>, on connection: PostgresConnection, queue: String = "default", priority: Int = 0,
        runAt: Date? = nil, idempotencyKey: String? = nil, metadata: JSONValue = [:]
    ) async throws -> JobHandle<Output> {
        let job = NewJob(
            chain: try chain.definition(), queue: queue, priority: priority, runAt: runAt,
            idempotencyKey: idempotencyKey, metadata: metadata)
        let enqueued = try await store.enqueue([store.validated(job)], on: connection)[0]
        return JobHandle(id: enqueued.id, inserted: enqueued.inserted, client: self)
    }

    /// Enqueues jobs in one transaction: all or none. Concurrent calls share transactions (group
    /// commit, see `EnqueueBatcher`); each returns once its jobs are committed, and one caller's
    /// refused job fails only that caller. A `baton.enqueue` span (swift-distributed-tracing) covers it.
    /// Each job is checked first (``NewJob/validated(checkingArgs:)`` with this client's args
    /// check): an invalid one throws ``BatonError`` and nothing is enqueued.
    public func enqueue(_ jobs: [NewJob]) async throws -> [EnqueuedJob] {
        try await enqueue(jobs.map(store.validated))
    }

    /// Enqueues jobs already checked, as ``enqueue(_:)-([NewJob])``.
    public func enqueue(_ jobs: [ValidJob]) async throws -> [EnqueuedJob] {
        try await withSpan("baton.enqueue", ofKind: .producer) { span in
            span.attributes["baton.jobs"] = jobs.count
            if let queue = jobs.first?.job.queue, jobs.allSatisfy({ $0.job.queue == queue }) {
                span.attributes["baton.queue"] = queue
            }
            let enqueued = try await batcher.enqueue(jobs)
            if enqueued.count == 1 { span.attributes["baton.job.id"] = Int(enqueued[0].id) }
            return enqueued
        }
    }

    // MARK: signals

    /// Delivers signal `signal` to job `job`: its await stage's output is `payload`. A job waiting
    /// for it goes on at once (``SignalDelivery/resumed``); one whose chain has not reached the
    /// stage keeps it for then (``SignalDelivery/kept``); a signal delivered before changes nothing
    /// (``SignalDelivery/duplicate``: the first payload stands).
    ///
    /// - Throws: ``SignalRefusal`` when the job does not exist, awaits no such signal, has finished
    ///   or passed the stage.
    @discardableResult
    public func signal(_ job: Int64, _ signal: String, payload: some Encodable, by actor: AuditActor? = nil)
        async throws -> SignalDelivery
    {
        try await deliver(signal, to: job, payload: JSONValue(encoding: payload), by: actor).delivery
    }

    /// ``signal(_:_:payload:)``, with the job's state once it is delivered.
    package func deliver(_ signal: String, to job: Int64, payload: JSONValue, by actor: AuditActor? = nil)
        async throws -> (delivery: SignalDelivery, state: JobState)
    {
        try payload.checkStorable(at: "payload")
        let (delivery, state, queue) = try await store.deliverSignal(
            job: job, name: signal, payload: payload, by: actor)
        if delivery == .resumed { waker.wake([queue]) }
        return (delivery, state)
    }

    /// The one-time token that delivers signal `signal` to job `job` without an API token
    /// (`POST /v1/jobs/{job}/signals/{signal}?token=…`): for a callback URL handed to a third
    /// party. A running stage gets the same from ``StageContext/signalToken(for:)``.
    public func signalToken(job: Int64, signal: String) async throws -> String {
        try await signalTokens.token(job: job, signal: signal)
    }

    // MARK: lanes

    /// Lets at most `width` stages of `lane` hold it at once (a lane is 1 wide unless set), or of
    /// every lane that `lane`, a prefix ending in `*`, starts (`"customer-*"`); nil deletes the
    /// setting. In effect at once: a wider lane admits its waiting stages now, in order; a
    /// narrower one lets its holders finish first.
    ///
    /// - Throws: ``BatonError/invalidChain(path:reason:)`` for a width outside 1…10000 or a lane
    ///   name with control characters.
    public func setLaneWidth(_ width: Int?, lane: String, by actor: AuditActor? = nil) async throws {
        try await store.setLaneWidth(width, lane: lane, by: actor)
    }

    /// The lane widths set, by lane or prefix.
    public func laneSettings() async throws -> [LaneSetting] {
        try await store.laneSettings()
    }

    /// Lets at most `limit.rate` stages naming `limit.key` (`.rate("partner")`) start per
    /// `limit.per`, `limit.burst` at once after a quiet spell, across every worker.
    ///
    /// - Throws: ``BatonError/invalidChain(path:reason:)`` naming `rate`, `per`, `burst` or `key`.
    public func setRateLimit(_ limit: RateLimit, by actor: AuditActor? = nil) async throws {
        try await store.setRateLimit(limit, by: actor)
    }

    /// The rate limits set, by key, with the tokens each has now.
    public func rateLimits() async throws -> [RateLimit] {
        try await store.rateLimits()
    }

    /// Deletes the rate limit of `key`; false if it had none.
    @discardableResult
    public func deleteRateLimit(_ key: String, by actor: AuditActor? = nil) async throws -> Bool {
        try await store.deleteRateLimit(key, by: actor)
    }

    // MARK: follow

    /// The job as stored now.
    public func job(_ id: Int64) async throws -> JobRecord {
        guard let job = try await store.job(id) else { throw BatonError.jobNotFound(id) }
        return job
    }

    /// A page of the jobs `filter` matches, newest first, at most `filter.limit`, found as
    /// `GET /v1/jobs` finds them: `jobs(JobFilter(metadata: ["tenant": "42"]))` lists tenant 42's.
    /// `next`, when more may match, is the ``JobFilter/before`` of the next page.
    public func jobs(_ filter: JobFilter) async throws -> (jobs: [JobSummary], next: Int64?) {
        var asked = filter
        asked.limit += 1
        let listing = try await store.jobs(asked)
        let page = Array(listing.jobs.prefix(filter.limit))
        return (page, listing.jobs.count > filter.limit ? page.last?.id : listing.scannedTo)
    }

    /// Waits until the job has finished (completed, discarded or cancelled), woken by NOTIFY.
    /// Returns the job as it is then, or as it is when `timeout` runs out.
    public func waitUntilFinished(_ id: Int64, timeout: Duration? = nil) async throws -> JobRecord {
        let signal = WakeUp()
        let subscription = listener.subscribe { event in
            switch event {
            case .finished(id), .listening: signal.signal()
            default: break
            }
        }
        defer { subscription.cancel() }
        let deadline = timeout.map { ContinuousClock.now + $0 }
        while true {
            guard let job = try await store.watch(id) else { throw BatonError.jobNotFound(id) }
            if job.state.isFinished { return job }
            // The re-read every few seconds only covers a notification lost with a dropped
            // connection in the instant before the listener noticed.
            var wait = Duration.seconds(5)
            if let deadline {
                let left = deadline - ContinuousClock.now
                if left <= .zero { return job }
                wait = min(wait, left)
            }
            await signal.wait(timeout: wait)
            try Task.checkCancellation()
        }
    }

    /// Cancels a job that has not finished; a running stage is stopped on its worker.
    ///
    /// Here and in every other method that changes something, `actor` names who does it: the
    /// change is then recorded in the audit trail (`GET /v1/audit`) in its own transaction.
    @discardableResult
    public func cancel(_ id: Int64, by actor: AuditActor? = nil) async throws -> Bool {
        !(try await store.cancel(id, by: actor)).isEmpty
    }

    /// Runs a scheduled or retryable job's stage now (a lane holder keeps its place), or starts a
    /// discarded or cancelled job again at the stage it stopped on, with fresh attempts. Returns
    /// its state after, nil when it cannot be retried (running, completed, a group member).
    @discardableResult
    public func retry(_ id: Int64, by actor: AuditActor? = nil) async throws -> JobState? {
        try await store.retry(id, by: actor)
    }

    /// Discards a job that is not running, `reason` kept as its stage's last error
    /// ("skipped: <reason>"); a lane it holds moves on at once. False when it cannot be skipped
    /// (running, finished, a group member, a group stage waiting for its members).
    @discardableResult
    public func skip(_ id: Int64, reason: String, by actor: AuditActor? = nil) async throws -> Bool {
        try await store.skip(id, reason: reason, by: actor)
    }

    /// The audit trail, newest first: the changes made through the control plane, and those of
    /// Swift callers that named themselves (`by:`).
    public func auditEvents(_ filter: AuditFilter = AuditFilter()) async throws -> [AuditEvent] {
        try await store.auditEvents(filter)
    }

    /// Retries, cancels or deletes every job `filter` matches in a state the action applies to
    /// (its limit and cursor aside), a thousand per transaction; with `dryRun`, only counts them.
    /// After an outage: `bulk(.retry, matching: JobFilter(states: [.discarded], queue: "billing"))`.
    @discardableResult
    public func bulk(
        _ action: BulkAction, matching filter: JobFilter, dryRun: Bool = false, by actor: AuditActor? = nil
    ) async throws -> BulkOutcome {
        try await store.bulk(action, filter, dryRun: dryRun, by: actor)
    }
}

/// A job enqueued from Swift, typed by its chain's output.
public struct JobHandle<Output: Codable & Sendable>: Sendable {
    public let id: Int64
    /// False when an idempotency key named an existing job.
    public let inserted: Bool
    let client: BatonClient

    /// Waits for the chain to finish and returns its final output; throws
    /// `BatonError.jobFailed` when it is discarded or cancelled.
    public func result() async throws -> Output {
        let job = try await client.waitUntilFinished(id)
        guard job.state == .completed, let output = job.output else {
            throw BatonError.jobFailed(id: id, state: job.state, error: job.lastFailure)
        }
        do {
            return try output.decode(as: Output.self)
        } catch {
            throw BatonError.outputMismatch(id: id, reason: "\(error)")
        }
    }

    /// The job as stored now.
    public func record() async throws -> JobRecord { try await client.job(id) }

    /// Cancels the job.
    @discardableResult
    public func cancel() async throws -> Bool { try await client.cancel(id) }
}
