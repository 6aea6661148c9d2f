import Baton
import BatonPostgres
import Logging
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
/// attempt of it when its time is up (the run may go on to its next stage). Either cancels the
/// attempt's task.
final class RunControl: Sendable {
    /// When the worker took the run on (``Worker/admit(_:)``).
    let admitted = ContinuousClock.now

    private struct State {
        var reason: StopReason?
        /// The attempt running: its deadline's watch, whether that passed, how to cancel it.
        var attempt: (watch: Deadlines.Watch, timedOut: Bool, cancel: (@Sendable () -> Void)?)?
    }

    private let state = Mutex(State())

    func stop(_ why: StopReason) {
        let cancel = state.withLock { state in
            if state.reason == nil { state.reason = why }
            return state.attempt?.cancel
        }
        cancel?()
    }

    var stopReason: StopReason? { state.withLock { $0.reason } }

    /// Called by ``Deadlines`` when `watch`'s deadline passes; a watch of an attempt that has
    /// ended (forgotten as its deadline passed) is not this run's concern any more.
    func timeOut(_ watch: Deadlines.Watch) {
        let cancel = state.withLock { state -> (@Sendable () -> Void)? in
            guard state.attempt?.watch == watch else { return nil }
            state.attempt?.timedOut = true
            return state.attempt?.cancel
        }
        cancel?()
    }

    /// Runs `body` as an attempt, in a task of its own that a stop, the passing of `deadline`
    /// (watched by `deadlines`) or cancelling the caller cancels; returns once it has returned,
    /// with whether the deadline passed first.
    func attempt<Value: Sendable>(
        until deadline: ContinuousClock.Instant, watchedBy deadlines: Deadlines,
        _ body: sending @escaping @isolated(any) () async -> Value
    ) async -> (value: Value, timedOut: Bool) {
        // Watched under the lock, so that a deadline passing at once finds its attempt here.
        let watch = state.withLock { state in
            let watch = deadlines.watch(self, until: deadline)
            state.attempt = (watch, false, nil)
            return watch
        }
        // Immediate: the attempt starts on this thread, and one that never waits ends on it,
        // without a hop through the executor's queue (the task is still its own, to be cancelled
        // alone).
        let task = Task.immediate(operation: body)
        let cancelNow = state.withLock { state in
            state.attempt?.cancel = { task.cancel() }
            return state.reason != nil || state.attempt?.timedOut == true
        }
        if cancelNow { task.cancel() }
        let value = await withTaskCancellationHandler {
            await task.value
        } onCancel: {
            task.cancel()
        }
        deadlines.forget(watch)
        let timedOut = state.withLock { state in
            defer { state.attempt = nil }
            return state.attempt?.timedOut == true
        }
        return (value, timedOut)
    }
}

/// Runs one attempt at one stage in a task of its own, with the stage's timeout, and says how it ended.
struct Executor: Sendable {
    let registry: TaskRegistry
    let workerID: String
    let progress: ProgressWriter
    let signals: SignalTokens
    let deadlines: Deadlines
    let logger: Logger

    enum Result: Sendable {
        /// How the attempt ended, and what its task logged (``StageLog``), if anything.
        case ended(StageOutcome, log: String? = nil)
        case stopped(StopReason)
    }

    /// A group's or map's members' outputs, handed on; or, when they added up to more than one
    /// PostgreSQL value holds (`map_output` in the schema says so instead of failing the flush that
    /// finished the last member), the stage's permanent failure, with the figures.
    static func gathered(_ output: String) -> StageOutcome {
        guard output.hasPrefix(#"{"gather_too_large""#),
            let figures = try? JSONValue(parsing: output)["gather_too_large"],
            let members = figures["members"]?.numberValue?.integer(as: Int.self),
            let bytes = figures["bytes"]?.numberValue?.integer(as: Int.self)
        else { return .succeeded(output: output) }
        return .failed(
            error: StageError(
                "the outputs of its \(members) members add up to \(bytes) bytes, more than PostgreSQL holds in one "
                    + "value (256 MiB), so they cannot be handed on: have each return less (where its data is, not "
                    + "the data)"), retry: .never)
    }

    func run(_ job: ClaimedJob, control: RunControl) async -> Result {
        let spec = job.spec
        let stage: TaskStage
        switch spec.body {
        case .task(let task):
            stage = task
        case .group:
            // A group stage: first its members start; once they are all done, their outputs are its output.
            return .ended(job.groupOutput.map(Self.gathered) ?? .fanOut)
        case .map(let map):
            // A map: its members start, one per element of its input's array; once they are all
            // done, their outputs are its output. An empty array is its own output.
            if let output = job.groupOutput { return .ended(Self.gathered(output)) }
            guard let input = try? JSONValue(parsing: job.input) else {
                return .ended(.failed(error: StageError("map: its input is not JSON"), retry: .never))
            }
            switch map.elements(of: input) {
            case .success(let elements) where elements.isEmpty:
                return .ended(.succeeded(output: map.emptyOutput.jsonText))
            case .success(let elements):
                return .ended(.fanOutOver(elements: JSONValue.array(elements).jsonText))
            case .failure(let error):
                return .ended(.failed(error: error, retry: .never))
            }
        case .chain:
            // Only a group member is a sub-chain, and its job's chain is the sub-chain's stages.
            return .ended(.failed(error: "a sub-chain is not a stage of its own", retry: .never))
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
        let log = StageLog()
        let context = StageContext(
            jobID: job.id, stageIndex: job.stage, stageName: spec.name, attempt: job.attempt, queue: job.queue,
            lane: stage.lane, metadata: job.metadata, logger: logger, attemptLog: log,
            earlier: job.earlier.map {
                ($0.stage, job.chain.indices.contains($0.stage) ? job.chain[$0.stage].name : nil, $0.output)
            },
            services: AttemptServices(writer: progress, tokens: signals, job: job))
        // A span per attempt (swift-distributed-tracing: a no-op until the process bootstraps a
        // tracer, e.g. swift-otel). The task runs inside it, so its own spans are children.
        // Attributes only on a span that records: each set on a no-op span built a dictionary of
        // attributes to throw away.
        return await withSpan("baton.stage \(stage.task)", ofKind: .consumer) { span in
            if span.isRecording {
                span.updateAttributes { attributes in
                    attributes["baton.job.id"] = Int(job.id)
                    attributes["baton.stage.index"] = job.stage
                    attributes["baton.stage.task"] = stage.task
                    attributes["baton.attempt"] = job.attempt
                    attributes["baton.queue"] = job.queue
                    if let lane = stage.lane { attributes["baton.lane"] = lane }
                }
            }
            let result = await attempt(stage, runner: runner, job: job, context: context, control: control)
            if case .ended(.failed(let error, _), _) = result {
                span.setStatus(SpanStatus(code: .error, message: error.description))
            }
            guard case .ended(let outcome, _) = result else { return result }
            return .ended(outcome, log: log.text)
        }
    }

    private func attempt(
        _ stage: TaskStage, runner: @escaping TaskRegistry.Runner, job: ClaimedJob, context: StageContext,
        control: RunControl
    ) async -> Result {
        let input = job.input
        let timeout = stage.timeout
        // Stopped before it started (a cancel heard while its claim was answered): the task is not
        // begun at all, since an attempt starts running at once.
        if let reason = control.stopReason { return .stopped(reason) }

        // One task for the attempt, cancelled by a stop or by its deadline (one watch over every
        // attempt's): a task group racing the attempt against a timer and a stop cost two tasks
        // more and a timer on every stage
        // (docs/benchmarks.md#issue-21-part-5-the-workers-cpu-per-stage-2026-11-26-night).
        let (result, timedOut) = await control.attempt(until: .now + timeout, watchedBy: deadlines) {
            await Swift.Result(catching: { try await runner(stage.args, input, context) })
        }
        if let reason = control.stopReason { return .stopped(reason) }
        // The worker itself is being torn down (not drained): put the stage back, count nothing.
        if Task.isCancelled { return .stopped(.released) }
        if timedOut { return .ended(.failed(error: "timed out after \(timeout)", retry: .byPolicy)) }
        switch result {
        case .success(let result):
            return .ended(.succeeded(output: result.output, then: result.then))
        case .failure(let snooze as Snooze):
            return .ended(.snoozed(snooze.delay, pausingRateLimit: snooze.pausesRateLimit))
        case .failure(let failure as TaskFailure):
            return .ended(.failed(error: failure.error, retry: failure.retry))
        case .failure(let error as StageError):
            return .ended(.failed(error: error, retry: .byPolicy))
        case .failure(let error):
            return .ended(.failed(error: StageError(Self.describe(error)), retry: .byPolicy))
        }
    }

    /// What a task's error says, for the job's errors (``Swift/Error/stageErrorDescription``).
    static func describe(_ error: any Error) -> String { error.stageErrorDescription }
}
