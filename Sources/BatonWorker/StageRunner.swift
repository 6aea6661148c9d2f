import Baton
import BatonPostgres
import Logging
import ServiceLifecycle

/// Runs each stage the ``Intake`` admits as a child task, and the stages after it while they may
/// hop (background, same worker), submitting each outcome to the ``Completer``.
///
/// On graceful shutdown it drains: every queue stops claiming, running stages get `drainGrace` to
/// finish, then the rest are put back (their attempt does not count); it returns once every stage
/// it started has ended and nothing more can arrive.
final class StageRunner: Service, Sendable {
    let intake: Intake
    let executor: Executor
    let completer: Completer
    let metrics: WorkerMetrics
    let failures: FailureReporter
    let drainGrace: Duration
    let logger: Logger
    private let drainStarted = WakeUp()

    init(
        intake: Intake, executor: Executor, completer: Completer, metrics: WorkerMetrics, failures: FailureReporter,
        drainGrace: Duration, logger: Logger
    ) {
        self.intake = intake
        self.executor = executor
        self.completer = completer
        self.metrics = metrics
        self.failures = failures
        self.drainGrace = drainGrace
        self.logger = logger
    }

    func run() async {
        await withGracefulShutdownHandler {
            await withTaskGroup(of: Bool.self) { group in
                group.addTask {
                    await self.runAdmitted()
                    return true
                }
                group.addTask {
                    await self.executor.deadlines.run()
                    return false
                }
                group.addTask {
                    await self.drainStarted.wait()
                    try? await Task.sleep(for: self.drainGrace)
                    guard !Task.isCancelled else { return false }
                    let released = self.intake.releaseAll()
                    if released > 0 {
                        self.logger.warning("drain grace over; putting stages back", metadata: ["count": "\(released)"])
                    }
                    return false
                }
                while let stagesDone = await group.next() {
                    if stagesDone { group.cancelAll() }
                }
            }
        } onGracefulShutdown: {
            self.logger.info("draining", metadata: ["running": "\(self.intake.runningJobs.count)"])
            self.intake.drainAll()
            self.drainStarted.signal()
        }
    }

    private func runAdmitted() async {
        await withDiscardingTaskGroup { group in
            for await batch in intake.admitted {
                for admitted in batch {
                    group.addTask {
                        await self.execute(admitted.job, control: admitted.control)
                        self.intake.ended(admitted)
                    }
                }
            }
        }
    }

    /// Runs the claimed stage, and the stages after it while they may hop, committing each
    /// outcome before the next stage starts.
    func execute(_ claimed: ClaimedJob, control: RunControl) async {
        var job = claimed
        if let invalid = job.invalid {
            logger.error("job cannot run", metadata: ["job": "\(job.id)", "reason": "\(invalid)"])
            await completer.submit(
                Outcome(
                    jobID: job.id, stage: job.stage, attempt: job.attempt,
                    transition: .discard(error: StageError(invalid))))
            return
        }
        while true {
            let transition: Transition
            var log: String?
            let started = ContinuousClock.now
            let result = await executor.run(job, control: control)
            // The attempt's last progress is written before its outcome: the next attempt resumes
            // from the checkpoint it saved last.
            if case .stopped(.cancelled) = result {
                executor.progress.forget(job.id)
            } else {
                await executor.progress.settle(job.id)
            }
            switch result {
            case .stopped(.cancelled):
                logger.info("stage cancelled", metadata: ["job": "\(job.id)", "stage": "\(job.stage)"])
                return
            case .stopped(.released):
                transition = .release
            case .ended(let outcome, let kept):
                log = kept
                transition = Transition.decide(
                    chain: job.chain, stage: job.stage, runs: job.runs, attempt: job.attempt, outcome: outcome,
                    canHop: { next in self.mayRun(next, after: job, control: control) },
                    random: Double.random(in: 0..<1))
            }
            let duration = ContinuousClock.now - started
            metrics.stageEnded(
                queue: job.queue, task: job.spec.kind, transition: transition, duration: duration)
            report(transition, of: job, after: duration)
            failures.report(transition, of: job)
            let outcome = Outcome(
                jobID: job.id, stage: job.stage, attempt: job.attempt, transition: transition, queue: job.queue,
                heldLane: job.spec.lane, log: log)
            // Only a hop waits for its commit: the next stage must not start before its input is durable.
            guard case .hop(let output, let target, let queue) = transition else {
                await completer.submit(outcome)
                return
            }
            switch await completer.submitAndWait(outcome) {
            case .applied:
                break
            case .handedOn:
                logger.debug(
                    "next stage handed on: its queue is rate limited",
                    metadata: ["job": "\(job.id)", "stage": "\(target ?? job.stage + 1)"])
                return
            case .notApplied:
                logger.notice(
                    "outcome not applied: the job is no longer this worker's",
                    metadata: ["job": "\(job.id)", "stage": "\(job.stage)", "attempt": "\(job.attempt)"])
                return
            }
            job.earlier.append((job.stage, (try? JSONValue(parsing: output)) ?? .null))
            job.stage = target ?? job.stage + 1
            // Its slot stays counted in the queue it was admitted to until the chain leaves this worker.
            if let queue { job.queue = queue }
            job.attempt = 1
            job.input = output
            job.groupOutput = nil
        }
    }

    /// Whether this worker may run `next` straight after `job`'s stage, without a claim: only a
    /// worker that runs its task and serves its queue (not draining) may; another worker of that
    /// queue serves it otherwise. The queue is the stage's own, else the job's, which is `job.queue`
    /// unless the stage that ran named a queue of its own (then the database knows it, and the
    /// stage is handed on).
    private func mayRun(_ next: StageSpec, after job: ClaimedJob, control: RunControl) -> Bool {
        guard control.stopReason == nil, let task = next.task, executor.registry.runners[task.task] != nil,
            let queue = task.queue ?? (job.spec.task?.queue == nil ? job.queue : nil)
        else { return false }
        return !intake.isDraining(queue)
    }

    /// Says what became of an attempt: a failure at `warning` (retried, with its delay) or `error`
    /// (the job discarded), so that a job retrying for hours shows in the log; a success at `debug`.
    /// The metadata is made only for a level that is logged (an argument the logger evaluates on
    /// demand): at the default level, a stage that succeeds costs no text.
    private func report(_ transition: Transition, of job: ClaimedJob, after duration: Duration) {
        func metadata(_ more: Logger.Metadata = [:]) -> Logger.Metadata {
            [
                "job": "\(job.id)", "stage": "\(job.stage)", "attempt": "\(job.attempt)",
                "task": "\(job.spec.kind)", "ms": "\(duration.milliseconds)",
            ].merging(more) { $1 }
        }
        switch transition {
        case .retry(let error, let delay, _):
            logger.warning(
                "stage failed; retrying",
                metadata: metadata(["error": "\(error)", "retry_in": "\(DurationFormat.format(delay))"]))
        case .discard(let error):
            logger.error("stage failed; job discarded", metadata: metadata(["error": "\(error)"]))
        case .hop, .advance, .complete, .spawn, .spawnOver:
            logger.debug("stage done", metadata: metadata())
        case .release:
            logger.info("stage put back: the worker is stopping", metadata: metadata())
        case .snooze(let delay, _):
            logger.debug("stage snoozed", metadata: metadata(["until": "\(DurationFormat.format(delay)) from now"]))
        case .await(let timeout):
            logger.debug(
                "awaiting a signal", metadata: metadata(["until": "\(DurationFormat.format(timeout)) from now"]))
        }
    }
}
