import Baton
import BatonPostgres
import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// A Baton worker: claims stages from its queues, runs them, records their outcomes, and keeps
/// its lease alive. Run it in a `ServiceGroup` after its ``DatabasePool``:
///
/// ```swift
/// var tasks = TaskRegistry()
/// tasks.register(Render.self)
/// let worker = Worker(pool: pool, tasks: tasks, logger: logger)
/// try await ServiceGroup(services: [pool, worker], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger).run()
/// ```
///
/// On graceful shutdown it drains: it stops claiming, lets running stages finish for
/// `drainGrace`, then puts the rest back (their attempt does not count) and leaves.
public final class Worker: Service, Sendable {
    private struct State {
        var draining = false
        var running: [Int64: RunControl] = [:]
        /// Cancels heard for jobs not running here, and when: a claim under way may bring one.
        var cancelsHeard: [Int64: ContinuousClock.Instant] = [:]
        /// When the heartbeat loop last came round.
        var heartbeat = ContinuousClock.now
    }

    public let configuration: WorkerConfiguration
    package let store: Store
    let listener: Listener
    let waker: Waker
    let logger: Logger
    let executor: Executor
    let metrics = WorkerMetrics()
    let fetchers: [String: Fetcher]
    let tasks: [String]
    private let state = Mutex(State())
    private let completer: Completer

    public init(
        pool: DatabasePool, tasks: TaskRegistry,
        configuration: WorkerConfiguration = WorkerConfiguration(), logger: Logger
    ) {
        var logger = logger
        logger[metadataKey: "worker"] = "\(configuration.id)"
        let store = Store(pool: pool, logger: logger)
        self.configuration = configuration
        self.store = store
        self.logger = logger
        self.listener = Listener(configuration: pool.configuration, logger: logger)
        self.waker = Waker(store: store, logger: logger)
        self.executor = Executor(registry: tasks, workerID: configuration.id, logger: logger)
        self.tasks = tasks.names
        self.fetchers = Dictionary(
            uniqueKeysWithValues: configuration.queues.map {
                ($0.key, Fetcher(queue: $0.key, capacity: max(1, $0.value)))
            })
        let fetchers = self.fetchers
        let waker = self.waker
        // Back-pressure: past twice the worker's slots in unwritten outcomes, stages wait for the
        // database instead of claiming more.
        let slots = configuration.queues.values.reduce(0) { $0 + max(1, $1) }
        self.completer = Completer(
            store: store, workerID: configuration.id, logger: logger, limit: max(100, 2 * slots),
            reserve: { queue, count in fetchers[queue]?.reserve(upTo: count) ?? 0 },
            deliver: { queue, jobs, reserved in fetchers[queue]?.deliver(jobs, reserved: reserved) }
        ) { result in
            for queue in result.woken {
                fetchers[queue]?.wake()
            }
            waker.wake(result.woken)
            waker.announceFinished(result.finished)
        }
    }

    public var id: String { configuration.id }
    var isDraining: Bool { state.withLock { $0.draining } }

    /// Whether the worker's LISTEN is in effect (wake-ups reach it without waiting for a poll).
    public var isListening: Bool { listener.isListening }

    /// The loops that have not come round within the lease (`heartbeat`, `fetch:QUEUE`): a worker
    /// wedged so (a statement that never returns, a task that blocks its thread) is one to restart.
    /// Empty while it works, and while it drains. The worker's `/healthz` answers 503 with them.
    public func stalledLoops(at now: ContinuousClock.Instant = .now) -> [String] {
        guard !isDraining else { return [] }
        var stalled: [String] = []
        if now - state.withLock({ $0.heartbeat }) > configuration.lease { stalled.append("heartbeat") }
        for (queue, fetcher) in fetchers.sorted(by: { $0.key < $1.key })
        where now - fetcher.lastTick > configuration.lease {
            stalled.append("fetch:\(queue)")
        }
        return stalled
    }

    /// Ids of the jobs running on this worker now.
    public var runningJobs: [Int64] { state.withLock { Array($0.running.keys) } }

    /// The jobs this worker answers for: handed over and not yet started, running, or their
    /// outcome not yet written. A job the database says this worker runs that is not among them
    /// was never received (its claim's answer was lost); maintenance puts it back.
    ///
    /// Read in the order a job moves through (inbox, running, completer), and a job enters each
    /// place before it leaves the one before: so a job on its way is always seen in one of them.
    var holdings: [Int64] {
        let waiting = fetchers.values.flatMap(\.handedOverJobs)
        return waiting + runningJobs + completer.pendingJobs
    }

    public func run() async throws {
        try await register()
        state.withLock { $0.heartbeat = .now }
        let subscription = listener.subscribe { self.heard($0) }
        defer { subscription.cancel() }
        logger.info(
            "worker started",
            metadata: [
                "queues":
                    "\(configuration.queues.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: ","))",
                "tasks": "\(tasks.joined(separator: ","))",
            ])

        let drainStarted = Signal()
        try await withGracefulShutdownHandler {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await self.listener.run() }
                group.addTask { try await self.waker.run() }
                group.addTask { await self.heartbeat() }
                if configuration.maintenance { group.addTask { await Maintenance(worker: self).run() } }
                group.addTask {
                    await drainStarted.wait()
                    try await Task.sleep(for: self.configuration.drainGrace)
                    self.releaseRunning()
                    // The database may be unreachable: do not wait for it forever.
                    try await Task.sleep(for: .seconds(10))
                    // What the drain still waits for, so that a drain this slow explains itself.
                    self.logger.error(
                        "drain could not record every outcome; the lease will rescue the rest",
                        metadata: [
                            "running": "\(self.runningJobs)", "unwritten": "\(self.completer.pendingJobs)",
                            "fetchers": "\(self.fetchers.values.map(\.drainState))",
                        ])
                    throw CancellationError()
                }
                group.addTask {
                    await withDiscardingTaskGroup { running in
                        // The completer outlives the fetchers: it writes what they leave in its buffer.
                        running.addTask { await self.completer.run() }
                        running.addTask {
                            await withDiscardingTaskGroup { fetching in
                                for fetcher in self.fetchers.values {
                                    fetching.addTask { await fetcher.run(for: self) }
                                    fetching.addTask {
                                        await fetcher.poll(every: self.configuration.pollInterval, for: self)
                                    }
                                }
                            }
                            self.completer.finish()
                        }
                    }
                    throw WorkerStopped()
                }
                do {
                    while try await group.next() != nil {}
                } catch is WorkerStopped {
                    group.cancelAll()
                }
            }
        } onGracefulShutdown: {
            self.beginDrain()
            drainStarted.signal()
        }
        try? await store.removeWorker(id: id)
        logger.info("worker stopped")
    }

    private struct WorkerStopped: Error {}

    /// Stop claiming; running stages go on.
    func beginDrain() {
        logger.info("draining", metadata: ["running": "\(runningJobs.count)"])
        state.withLock { $0.draining = true }
        for fetcher in fetchers.values { fetcher.interrupt() }
    }

    private func releaseRunning() {
        let controls = state.withLock { Array($0.running.values) }
        if !controls.isEmpty {
            logger.warning("drain grace over; putting stages back", metadata: ["count": "\(controls.count)"])
        }
        for control in controls { control.stop(.released) }
    }

    private func register() async throws {
        var backoff = Duration.milliseconds(100)
        while true {
            do {
                try await store.registerWorker(
                    id: id, host: WorkerConfiguration.hostName, pid: Int(ProcessInfo.processInfo.processIdentifier),
                    queues: configuration.queues.keys.sorted(), tasks: tasks)
                return
            } catch {
                logger.warning("cannot register worker; retrying", metadata: ["error": "\(error.logDescription)"])
                try await Task.sleep(for: backoff)
                backoff = min(backoff * 2, .seconds(5))
            }
        }
    }

    /// One row per worker, refreshed every third of the lease: the lease of all its jobs at once.
    private func heartbeat() async {
        let interval = configuration.lease / 3
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)
            let sent = ContinuousClock.now
            state.withLock { $0.heartbeat = sent }
            do {
                let beat = try await store.heartbeat(worker: id, holds: { self.holdings })
                stopCancelled(beat.cancelled, admittedBefore: sent)
                if !beat.alive {
                    logger.warning("worker row was gone (declared lost?); registering again")
                    try await register()
                }
            } catch {
                if Task.isCancelled { return }
                logger.warning("heartbeat failed", metadata: ["error": "\(error.logDescription)"])
            }
        }
    }

    // MARK: running a job

    /// Acts on what the listener heard.
    func heard(_ event: Listener.Event) {
        switch event {
        case .available(let queue): fetchers[queue]?.wake()
        case .listening: for fetcher in fetchers.values { fetcher.wake() }
        case .cancel(let id): cancel(id)
        case .finished: break
        }
    }

    /// Stops the job if it runs here; else remembers the cancel for a while, since the claim that
    /// brings the job here may have committed before the cancel and be answered after its notice.
    private func cancel(_ id: Int64) {
        let now = ContinuousClock.now
        let control = state.withLock { state -> RunControl? in
            if let control = state.running[id] { return control }
            if state.cancelsHeard.count >= 1000 {
                state.cancelsHeard = state.cancelsHeard.filter { now - $0.value < .seconds(60) }
            }
            state.cancelsHeard[id] = now
            return nil
        }
        control?.stop(.cancelled)
    }

    /// Stops the stages of `jobs` that were running here before `instant`: cancels whose notice
    /// was missed, found by the heartbeat sent then (a run admitted since is a later one).
    private func stopCancelled(_ jobs: [Int64], admittedBefore instant: ContinuousClock.Instant) {
        guard !jobs.isEmpty else { return }
        let controls = state.withLock { state in
            jobs.compactMap { state.running[$0] }.filter { $0.admitted < instant }
        }
        for control in controls { control.stop(.cancelled) }
    }

    /// Registers a received job as running here (see `holdings`), before its task starts; stopped
    /// at once if it was cancelled after the statement that claimed it was sent. An earlier run of
    /// the same job still here is stopped: the job was handed out again, so that run is not the
    /// job's any more (and it would otherwise run on unseen by the drain).
    func admit(_ job: ClaimedJob) -> RunControl {
        let control = RunControl()
        let (cancelled, earlier) = state.withLock { state in
            let earlier = state.running.updateValue(control, forKey: job.id)
            guard let heard = state.cancelsHeard.removeValue(forKey: job.id) else { return (false, earlier) }
            return (heard > job.claimedSince, earlier)
        }
        earlier?.stop(.cancelled)
        if cancelled { control.stop(.cancelled) }
        return control
    }

    /// Says what became of an attempt: a failure at `warning` (retried, with its delay) or `error`
    /// (the job discarded), so that a job retrying for hours shows in the log; a success at `debug`.
    private func report(_ transition: Transition, of job: ClaimedJob, after duration: Duration) {
        var metadata: Logger.Metadata = [
            "job": "\(job.id)", "stage": "\(job.stage)", "attempt": "\(job.attempt)",
            "task": "\(job.spec.task?.task ?? "group")", "ms": "\(duration.milliseconds)",
        ]
        switch transition {
        case .retry(let error, let delay):
            metadata["error"] = "\(error)"
            metadata["retry_in"] = "\(DurationFormat.format(delay))"
            logger.warning("stage failed; retrying", metadata: metadata)
        case .discard(let error):
            metadata["error"] = "\(error)"
            logger.error("stage failed; job discarded", metadata: metadata)
        case .hop, .advance, .complete, .spawn:
            logger.debug("stage done", metadata: metadata)
        case .release:
            logger.info("stage put back: the worker is stopping", metadata: metadata)
        }
    }

    /// Runs the claimed stage, and the stages after it while they may hop (background, same
    /// worker), committing each outcome before the next stage starts. `control` is from `admit`.
    func execute(_ claimed: ClaimedJob, control: RunControl) async {
        var job = claimed
        // Only this run's entry: a retried job may already run again here under the same id.
        defer {
            state.withLock { state in
                if state.running[job.id] === control { state.running.removeValue(forKey: job.id) }
            }
        }
        if let invalid = job.invalid {
            logger.error("job cannot run", metadata: ["job": "\(job.id)", "reason": "\(invalid)"])
            await completer.submit(
                Outcome(jobID: job.id, stage: job.stage, attempt: job.attempt, transition: .discard(error: invalid)))
            return
        }
        while true {
            let transition: Transition
            let started = ContinuousClock.now
            switch await executor.run(job, control: control) {
            case .stopped(.cancelled):
                logger.info("stage cancelled", metadata: ["job": "\(job.id)", "stage": "\(job.stage)"])
                return
            case .stopped(.released):
                transition = .release
            case .ended(let outcome):
                transition = Transition.decide(
                    stage: job.spec, next: job.next, attempt: job.attempt, outcome: outcome,
                    canHop: !isDraining && control.stopReason == nil, random: Double.random(in: 0..<1))
            }
            let duration = ContinuousClock.now - started
            metrics.stageEnded(
                queue: job.queue, task: job.spec.task?.task ?? "group", transition: transition, duration: duration)
            report(transition, of: job, after: duration)
            let outcome = Outcome(
                jobID: job.id, stage: job.stage, attempt: job.attempt, transition: transition, queue: job.queue,
                heldLane: job.spec.lane)
            // Only a hop waits for its commit: the next stage must not start before its input is durable.
            guard case .hop(let output) = transition else {
                await completer.submit(outcome)
                return
            }
            guard await completer.submitAndWait(outcome) else {
                logger.notice(
                    "outcome not applied: the job is no longer this worker's",
                    metadata: ["job": "\(job.id)", "stage": "\(job.stage)", "attempt": "\(job.attempt)"])
                return
            }
            job.earlierOutputs.append((try? JSONValue(parsing: output)) ?? .null)
            job.stage += 1
            job.attempt = 1
            job.input = output
            job.groupOutput = nil
        }
    }
}
