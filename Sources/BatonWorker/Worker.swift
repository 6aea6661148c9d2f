import Baton
import BatonPostgres
import Foundation
import Logging
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
    public let configuration: WorkerConfiguration
    let logger: Logger
    let metrics: WorkerMetrics
    let history: QueueHistory
    let progress: ProgressWriter
    let failures: FailureReporter
    let store: Store
    let listener: Listener
    let waker: Waker
    let intake: Intake
    let heartbeat: Heartbeat
    let completer: Completer
    let runner: StageRunner
    let fetchers: [Fetcher]
    let maintenance: [any Service]

    public init(
        pool: DatabasePool, tasks: TaskRegistry,
        configuration: WorkerConfiguration = WorkerConfiguration(), logger: Logger
    ) {
        var logger = logger
        logger[metadataKey: "worker"] = "\(configuration.id)"
        let store = Store(pool: pool, logger: logger, checkingArgs: tasks.argsCheck)
        let intake = Intake(capacities: configuration.queues)
        let waker = Waker(store: store, logger: logger)
        let history = QueueHistory(store: store, logger: logger)
        let metrics = WorkerMetrics(history: history)
        let progress = ProgressWriter(store: store, workerID: configuration.id, logger: logger)
        let failures = FailureReporter(reporting: configuration.failures, logger: logger)
        self.failures = failures
        self.history = history
        self.progress = progress
        self.metrics = metrics
        self.configuration = configuration
        self.logger = logger
        self.store = store
        self.intake = intake
        self.waker = waker
        self.listener = Listener(configuration: pool.configuration, logger: logger)
        // Back-pressure: past twice the worker's slots in unwritten outcomes, stages wait for the
        // database instead of claiming more.
        let slots = configuration.queues.values.reduce(0) { $0 + max(1, $1) }
        let completer = Completer(
            store: store, workerID: configuration.id, tasks: tasks.names, logger: logger, limit: max(100, 2 * slots),
            reserve: { queue, count in intake.reserve(count, in: queue) },
            deliver: { queue, jobs, reserved in intake.receive(jobs, queue: queue, via: .handOver(reserved: reserved)) }
        ) { result in
            for queue in result.woken { intake.wake(queue) }
            waker.wake(result.woken)
            waker.announceFinished(result.finished)
        }
        self.completer = completer
        self.runner = StageRunner(
            intake: intake,
            executor: Executor(
                registry: tasks, workerID: configuration.id, progress: progress, signals: SignalTokens(store: store),
                deadlines: Deadlines(), logger: logger),
            completer: completer, metrics: metrics, failures: failures, drainGrace: configuration.drainGrace,
            logger: logger)
        self.fetchers = configuration.queues.keys.sorted().map {
            Fetcher(
                queue: $0, store: store, workerID: configuration.id, tasks: tasks.names, intake: intake,
                metrics: metrics,
                pollInterval: configuration.pollInterval, logger: logger)
        }
        // The jobs this worker answers for: running (received and not ended), or their outcome not
        // yet written; a job enters the completer before it leaves the running ones, so one on its
        // way is always seen. A job the database says this worker runs that is not among them was
        // never received (its claim's answer was lost); the rescuer puts it back.
        self.heartbeat = Heartbeat(
            store: store,
            registration: .init(
                workerID: configuration.id, queues: configuration.queues.keys.sorted(), tasks: tasks.names),
            lease: configuration.lease, logger: logger, holdings: { intake.runningJobs + completer.pendingJobs },
            cancelled: { intake.stopCancelled($0, admittedBefore: $1) })
        if configuration.maintenance {
            let leadership = Leadership(
                store: store, workerID: configuration.id, interval: configuration.schedulerInterval, logger: logger)
            self.maintenance = [
                leadership,
                Scheduler(
                    store: store, leadership: leadership, interval: configuration.schedulerInterval,
                    wake: { queues in
                        for queue in queues { intake.wake(queue) }
                        waker.wake(queues)
                    }, finished: { waker.announceFinished($0) },
                    expired: { waits in for wait in waits { failures.report(wait) } }),
                Rescuer(
                    store: store, leadership: leadership, lease: configuration.lease, waker: waker, failures: failures,
                    logger: logger),
                Pruner(store: store, leadership: leadership, retention: configuration.retention),
                ScheduleRunner(store: store, leadership: leadership, logger: logger),
            ]
        } else {
            self.maintenance = []
        }
    }

    public var id: String { configuration.id }

    /// Whether the worker's LISTEN is in effect (wake-ups reach it without waiting for a poll).
    public var isListening: Bool { listener.isListening }

    /// The loops that have not come round within the lease (`heartbeat`, `fetch:QUEUE`): a worker
    /// wedged so (a statement that never returns, a task that blocks its thread) is one to restart.
    /// Empty while it works, and while it drains. The worker's `/healthz` answers 503 with them.
    public func stalledLoops(at now: ContinuousClock.Instant = .now) -> [String] {
        guard !intake.isStopping else { return [] }
        var stalled: [String] = []
        if now - heartbeat.lastTick > configuration.lease { stalled.append("heartbeat") }
        for fetcher in fetchers where now - fetcher.lastTick > configuration.lease && !intake.isDraining(fetcher.queue)
        {
            stalled.append("fetch:\(fetcher.queue)")
        }
        return stalled
    }

    /// Ids of the jobs running on this worker now.
    public var runningJobs: [Int64] { intake.runningJobs }

    /// Runs the worker's loops in a `ServiceGroup` of their own, which the group running the
    /// worker shuts down gracefully with it: in reverse order of start, so that the fetchers stop
    /// claiming first, the runner drains (``WorkerConfiguration/drainGrace``, then puts back what
    /// still runs), the completer writes the last outcomes, and the heartbeat and the listener,
    /// which keep running stages alive and cancellable, stop last.
    public func run() async throws {
        try await heartbeat.register()
        let subscription = listener.subscribe { self.heard($0) }
        defer { subscription.cancel() }
        logger.info(
            "worker started",
            metadata: [
                "queues":
                    "\(configuration.queues.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: ","))",
                "tasks": "\(heartbeat.registration.tasks.joined(separator: ","))",
            ])
        // The history stops after the completer: its last write holds the last outcomes; progress
        // after the runner, which settles each stage's as it ends; failure reports after the
        // runner and the rescuer, reporting what they queued.
        var services: [any Service] = [listener, waker, heartbeat, history, progress, failures]
        services += maintenance
        services += [completer, runner]
        services += fetchers
        var group = ServiceGroupConfiguration(services: services, logger: logger)
        // The database may be unreachable: once the grace is over, the completer tries what it
        // holds for a second (``Completer/finishing``); this bounds the rest.
        group.maximumGracefulShutdownDuration = configuration.drainGrace + Self.drainMargin
        try await withThrowingDiscardingTaskGroup { checks in
            checks.addTask { await ListenCheck(listener: self.listener, waker: self.waker, logger: self.logger).run() }
            try await ServiceGroup(configuration: group).run()
            checks.cancelAll()
        }
        let (running, unwritten) = (intake.runningJobs, completer.pendingJobs)
        if !running.isEmpty || !unwritten.isEmpty {
            logger.error(
                "drain could not record every outcome; the lease will rescue the rest",
                metadata: ["running": "\(running)", "unwritten": "\(unwritten)", "slots": "\(intake.drainState)"])
        }
        // Its heartbeat row goes, unless the database is away: then it is just old, like a
        // lost worker's.
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await self.store.removeWorker(id: self.id) }
            group.addTask { try? await Task.sleep(for: .milliseconds(300)) }
            await group.next()
            group.cancelAll()
        }
        logger.info("worker stopped")
    }

    /// How much longer than ``WorkerConfiguration/drainGrace`` a graceful shutdown may take, at
    /// most, the database away included: the completer's try at what it holds, the heartbeat
    /// row's removal.
    public static let drainMargin = Duration.milliseconds(1500)

    /// Acts on what the listener heard.
    func heard(_ event: Listener.Event) {
        switch event {
        case .available(let queue): intake.wake(queue)
        case .listening: intake.wakeAll()
        case .cancel(let id): intake.cancel(id)
        case .finished, .probe: break
        }
    }
}
