import Baton
import BatonPostgres
import Logging
import PostgresNIO
import Synchronization
import Tracing

/// Why a running stage is stopped before it ends.
enum StopReason: Sendable {
    /// The job was cancelled: its row says so already; nothing is recorded.
    case cancelled
    /// The worker is draining and ran out of grace: the stage is put back.
    case released
}

/// The handle by which a running stage is stopped from outside: for good (``stop(_:)``), or one
/// attempt of it when its time is up (``timeOut(_:)``; the run goes on to its next stage).
final class RunControl: Sendable {
    let signal = Signal()
    /// When the worker took the run on (``Worker/admit(_:)``).
    let admitted = ContinuousClock.now
    private let reason = Mutex<StopReason?>(nil)
    /// The last attempt whose deadline passed.
    private let expired = Mutex<Deadlines.Watch?>(nil)

    func stop(_ why: StopReason) {
        reason.withLock { if $0 == nil { $0 = why } }
        signal.signal()
    }

    var stopReason: StopReason? { reason.withLock { $0 } }

    func timeOut(_ attempt: Deadlines.Watch) {
        expired.withLock { $0 = attempt }
        signal.signal()
    }

    func hasTimedOut(_ attempt: Deadlines.Watch) -> Bool { expired.withLock { $0 == attempt } }
}

/// Runs one attempt at one stage as a child task, with the stage's timeout, and says how it ended.
struct Executor: Sendable {
    let registry: TaskRegistry
    let workerID: String
    let progress: ProgressWriter
    let signals: SignalTokens
    let deadlines: Deadlines
    let logger: Logger

    enum Result: Sendable {
        case ended(StageOutcome)
        case stopped(StopReason)
    }

    func run(_ job: ClaimedJob, control: RunControl) async -> Result {
        let spec = job.spec
        let stage: TaskStage
        switch spec.body {
        case .task(let task):
            stage = task
        case .group:
            // A group stage: first its members start; once they are all done, their outputs are its output.
            return .ended(job.groupOutput.map { .succeeded(output: $0) } ?? .fanOut)
        case .await(let awaited):
            // The signal's payload is the stage's output; until it comes, the job waits without us.
            do {
                let payload = try await signals.store.signalPayload(job: job.id, name: awaited.signal)
                return .ended(payload.map { .succeeded(output: $0) } ?? .awaiting)
            } catch {
                // Not a failed attempt (an await stage has one by default): the stage is put back.
                logger.warning(
                    "cannot look for a signal; putting the stage back",
                    metadata: ["job": "\(job.id)", "error": "\(error.logDescription)"])
                return .stopped(.released)
            }
        }
        guard let runner = registry.runners[stage.task] else {
            return .ended(.failed(error: "no task named \"\(stage.task)\" on worker \(workerID)", retry: .byPolicy))
        }
        var logger = logger
        logger[metadataKey: "job"] = "\(job.id)"
        logger[metadataKey: "stage"] = "\(job.stage)"
        logger[metadataKey: "attempt"] = "\(job.attempt)"
        let context = StageContext(
            jobID: job.id, stageIndex: job.stage, stageName: spec.name, attempt: job.attempt, queue: job.queue,
            lane: stage.lane, metadata: job.metadata, logger: logger,
            earlier: job.earlier.map {
                ($0.stage, job.chain.indices.contains($0.stage) ? job.chain[$0.stage].name : nil, $0.output)
            },
            services: AttemptServices(writer: progress, tokens: signals, job: job))
        // A span per attempt (swift-distributed-tracing: a no-op until the process bootstraps a
        // tracer, e.g. swift-otel). The task runs inside it, so its own spans are children.
        return await withSpan("baton.stage \(stage.task)", ofKind: .consumer) { span in
            span.attributes["baton.job.id"] = Int(job.id)
            span.attributes["baton.stage.index"] = job.stage
            span.attributes["baton.stage.task"] = stage.task
            span.attributes["baton.attempt"] = job.attempt
            span.attributes["baton.queue"] = job.queue
            if let lane = stage.lane { span.attributes["baton.lane"] = lane }
            let result = await attempt(stage, runner: runner, job: job, context: context, control: control)
            if case .ended(.failed(let error, _)) = result {
                span.setStatus(SpanStatus(code: .error, message: error.description))
            }
            return result
        }
    }

    private func attempt(
        _ stage: TaskStage, runner: @escaping TaskRegistry.Runner, job: ClaimedJob, context: StageContext,
        control: RunControl
    ) async -> Result {
        let input = job.input
        let timeout = stage.timeout

        enum Race: Sendable {
            case finished(Swift.Result<(output: String, then: FlowRule.Action?), any Error>)
            case timedOut
            case stopped
        }
        let watch = deadlines.watch(control, until: .now + timeout)
        defer { deadlines.forget(watch) }
        let race = await withTaskGroup(of: Race?.self) { group -> Race in
            group.addTask { .finished(await Swift.Result(catching: { try await runner(stage.args, input, context) })) }
            group.addTask {
                // Woken by a stop, or by this attempt's deadline; a deadline of an attempt before
                // it that passed as that one ended may have left the signal set: not this one's.
                while true {
                    await control.signal.wait()
                    if Task.isCancelled { return nil }
                    if control.stopReason != nil { return .stopped }
                    if control.hasTimedOut(watch) { return .timedOut }
                }
            }
            while let next = await group.next() {
                if let next {
                    group.cancelAll()
                    return next
                }
            }
            return .stopped
        }
        if let reason = control.stopReason { return .stopped(reason) }
        // The worker itself is being torn down (not drained): put the stage back, count nothing.
        if Task.isCancelled { return .stopped(.released) }
        switch race {
        case .stopped:
            return .stopped(control.stopReason ?? .released)
        case .timedOut:
            return .ended(.failed(error: "timed out after \(timeout)", retry: .byPolicy))
        case .finished(.success(let result)):
            return .ended(.succeeded(output: result.output, then: result.then))
        case .finished(.failure(let snooze as Snooze)):
            return .ended(.snoozed(snooze.delay, pausingRateLimit: snooze.pausesRateLimit))
        case .finished(.failure(let failure as TaskFailure)):
            return .ended(.failed(error: failure.error, retry: failure.retry))
        case .finished(.failure(let error as StageError)):
            return .ended(.failed(error: error, retry: .byPolicy))
        case .finished(.failure(let error)):
            return .ended(.failed(error: StageError(Self.describe(error)), retry: .byPolicy))
        }
    }

    /// What a task's error says, for the job's errors. PostgresNIO describes every `PSQLError` with
    /// one fixed text (so as not to leak a statement's data into logs); what the server said and
    /// its SQLSTATE are kept instead, or the kind of failure when the server said nothing.
    static func describe(_ error: any Error) -> String {
        guard let error = error as? PSQLError else { return String(describing: error) }
        guard let message = error.serverInfo?[.message] else { return "PostgreSQL: \(error.code)" }
        return "PostgreSQL: \(message) (SQLSTATE \(error.serverInfo?[.sqlState] ?? "?"))"
    }
}
