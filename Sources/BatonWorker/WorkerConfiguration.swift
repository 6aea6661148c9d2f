import Foundation

/// How a worker runs: what it serves, and its timings.
public struct WorkerConfiguration: Sendable {
    /// Queue name → how many stages of it this worker runs at once.
    public var queues: [String: Int]
    /// A running stage whose worker has not sent a heartbeat for this long is rescued: its attempt
    /// counts as failed ("worker lost") and it is retried elsewhere. Heartbeats go every third of it.
    public var lease: Duration
    /// With no notification, look for work this often anyway (a lost NOTIFY costs this much latency).
    public var pollInterval: Duration
    /// On SIGTERM/SIGINT, running stages get this long to finish; then they are put back.
    public var drainGrace: Duration
    /// How long finished jobs are kept, by how they finished.
    public var retention: Retention
    /// How often the elected worker promotes due scheduled and retryable jobs.
    public var schedulerInterval: Duration
    /// Take part in maintenance (rescue, scheduling, pruning) when elected.
    public var maintenance: Bool
    /// Unique per process: `host-pid-random`.
    public var id: String
    /// Who hears of failed attempts and discards: a Swift handler, a webhook.
    public var failures: FailureReporting

    public init(
        queues: [String: Int] = ["default": 10], lease: Duration = .seconds(15), pollInterval: Duration = .seconds(1),
        drainGrace: Duration = .seconds(30), retention: Retention = Retention(),
        schedulerInterval: Duration = .milliseconds(200), maintenance: Bool = true, id: String? = nil,
        failures: FailureReporting = FailureReporting()
    ) {
        self.queues = queues
        self.lease = lease
        self.pollInterval = pollInterval
        self.drainGrace = drainGrace
        self.retention = retention
        self.schedulerInterval = schedulerInterval
        self.maintenance = maintenance
        self.failures = failures
        self.id =
            id ?? "\(Self.hostName)-\(ProcessInfo.processInfo.processIdentifier)-\(UInt32.random(in: 0...UInt32.max))"
    }

    static var hostName: String { ProcessInfo.processInfo.hostName }
}

/// How long finished jobs are kept after they finish, by final state: the successes briefly, the
/// failures (the dead letters) long enough to look into them and retry them. A job's idempotency
/// key stays taken while it is kept.
public struct Retention: Sendable, Hashable {
    public var completed: Duration
    public var discarded: Duration
    public var cancelled: Duration
    /// How long the audit trail keeps each change.
    public var audit: Duration

    public init(
        completed: Duration = .seconds(24 * 3600), discarded: Duration = .seconds(14 * 86400),
        cancelled: Duration = .seconds(14 * 86400), audit: Duration = .seconds(90 * 86400)
    ) {
        self.completed = completed
        self.discarded = discarded
        self.cancelled = cancelled
        self.audit = audit
    }
}
