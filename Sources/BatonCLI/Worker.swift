import ArgumentParser
import Baton
import BatonPostgres
import BatonWorker
import Configuration
import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle

struct WorkerOptions: ParsableArguments, SettingFlags {
    @Option(
        name: .customLong("queue"),
        help: "A queue to serve, as NAME or NAME:CONCURRENCY (repeatable; BATON_WORKER_QUEUES; default: default).")
    var queues: [String] = []

    @Option(help: "Stages run at once per queue, where --queue does not say (BATON_WORKER_CONCURRENCY; default 10).")
    var concurrency: Int?

    @Option(
        help: "Rescue a lost worker's stages after this long without its heartbeat (BATON_WORKER_LEASE; default 15s).")
    var lease: Duration?

    @Option(
        help:
            "On SIGTERM/SIGINT, let running stages finish for this long, then put them back (BATON_WORKER_GRACE; default 30s)."
    )
    var grace: Duration?

    @Option(help: "Delete completed jobs this long after they finish (BATON_WORKER_RETENTION; default 24h).")
    var retention: Duration?

    @Option(help: "Delete discarded jobs this long after they failed (BATON_WORKER_RETENTION_DISCARDED; default 14d).")
    var retentionDiscarded: Duration?

    @Option(
        help:
            "Delete cancelled jobs this long after they were cancelled (BATON_WORKER_RETENTION_CANCELLED; default 14d)."
    )
    var retentionCancelled: Duration?

    @Option(help: "Delete audit events this long after the change (BATON_WORKER_RETENTION_AUDIT; default 90d).")
    var retentionAudit: Duration?

    @Option(help: "POST each job this worker discards here, as JSON (BATON_WORKER_DISCARD_WEBHOOK; off by default).")
    var discardWebhook: String?

    var flags: [Setting: ConfigContent] {
        var flags: [Setting: ConfigContent] = [:]
        if !queues.isEmpty { flags[.workerQueues] = .stringArray(queues) }
        flags.add(.workerConcurrency, concurrency.map(ConfigContent.int))
        flags.add(.workerLease, lease.map { .string(DurationFormat.format($0)) })
        flags.add(.workerGrace, grace.map { .string(DurationFormat.format($0)) })
        flags.add(.workerRetention, retention.map { .string(DurationFormat.format($0)) })
        flags.add(.workerRetentionDiscarded, retentionDiscarded.map { .string(DurationFormat.format($0)) })
        flags.add(.workerRetentionCancelled, retentionCancelled.map { .string(DurationFormat.format($0)) })
        flags.add(.workerRetentionAudit, retentionAudit.map { .string(DurationFormat.format($0)) })
        flags.add(.workerDiscardWebhook, discardWebhook.map(ConfigContent.string))
        return flags
    }
}

/// `baton worker`'s own: where its metrics are served.
struct WorkerMetricsOptions: ParsableArguments, SettingFlags {
    @Option(help: "Serve /metrics and /healthz on this port (BATON_WORKER_METRICS_PORT; off by default).")
    var metricsPort: Int?

    @Option(help: "Address of the metrics listener (BATON_WORKER_METRICS_HOST; default 0.0.0.0).")
    var metricsHost: String?

    var flags: [Setting: ConfigContent] {
        var flags: [Setting: ConfigContent] = [:]
        flags.add(.workerMetricsPort, metricsPort.map(ConfigContent.int))
        flags.add(.workerMetricsHost, metricsHost.map(ConfigContent.string))
        return flags
    }
}

extension Settings {
    func worker() throws -> WorkerConfiguration {
        let concurrency = try int(.workerConcurrency) ?? 10
        guard concurrency >= 1 else { throw ValidationError("worker.concurrency must be at least 1") }
        var queues: [String: Int] = [:]
        for entry in try list(.workerQueues) ?? ["default"] {
            let parts = entry.split(separator: ":", maxSplits: 1).map(String.init)
            guard let name = parts.first, !name.isEmpty else {
                throw ValidationError("worker.queues: empty queue name in \"\(entry)\"")
            }
            let slots = parts.count == 2 ? Int(parts[1]) : concurrency
            guard let slots, slots >= 1 else {
                throw ValidationError("worker.queues \(entry): concurrency must be a positive number")
            }
            queues[name] = slots
        }
        let lease = try duration(.workerLease) ?? .seconds(15)
        guard lease >= .milliseconds(300) else { throw ValidationError("worker.lease must be at least 300ms") }
        var webhook: URL?
        if let text = try string(.workerDiscardWebhook) {
            guard let url = URL(string: text), ["http", "https"].contains(url.scheme), url.host != nil else {
                throw ValidationError("worker.discard-webhook must be an http:// or https:// URL, not \(text)")
            }
            webhook = url
        }
        return WorkerConfiguration(
            queues: queues, lease: lease, drainGrace: try duration(.workerGrace) ?? .seconds(30),
            retention: Retention(
                completed: try duration(.workerRetention) ?? .seconds(24 * 3600),
                discarded: try duration(.workerRetentionDiscarded) ?? .seconds(14 * 86400),
                cancelled: try duration(.workerRetentionCancelled) ?? .seconds(14 * 86400),
                audit: try duration(.workerRetentionAudit) ?? .seconds(90 * 86400)),
            failures: FailureReporting(discardWebhook: webhook))
    }

    /// The worker's metrics listener, if `worker.metrics-port` is set.
    func workerMetrics() throws -> (host: String, port: Int)? {
        guard let port = try int(.workerMetricsPort) else { return nil }
        guard (0...65535).contains(port) else { throw ValidationError("worker.metrics-port must be within 0...65535") }
        return (try string(.workerMetricsHost) ?? "0.0.0.0", port)
    }

    /// The built-in tasks, the `http` task limited by `http.allow` and `http.deny`, with `http.tls`'s
    /// certificates, the proxies of the environment and the `BATON_SECRET_*` variables (a malformed
    /// list or an unreadable file refuses to start rather than failing every request).
    func builtinTasks() throws -> TaskRegistry {
        var tasks = TaskRegistry()
        let environment = ProcessInfo.processInfo.environment
        var configuration = HTTPTaskConfiguration(secrets: HTTPTaskConfiguration.secrets(in: environment))
        do {
            configuration.policy = try OutboundPolicy(
                allow: try list(.httpAllow)?.joined(separator: ","), deny: try list(.httpDeny)?.joined(separator: ","))
        } catch let error as OutboundPolicyError {
            throw ValidationError("http.allow/http.deny: \(error)")
        }
        do {
            configuration.proxies = try OutboundProxies(environment: environment)
            configuration.tls = try OutboundTLS(try list(.httpTLS) ?? [])
        } catch let error as OutboundPolicyError {
            throw ValidationError("\(error)")
        }
        tasks.register(HTTPTask(configuration: configuration))
        return tasks
    }
}

struct WorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "worker",
        abstract: "Run stages from the given queues until SIGTERM or SIGINT (then drain).")

    @OptionGroup var runtime: RuntimeOptions
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var options: WorkerOptions
    @OptionGroup var metrics: WorkerMetricsOptions

    func run() async throws {
        let settings = try await runtime.settings(database, options, metrics)
        let logger = makeLogger("baton.worker")
        let workerConfiguration = try settings.worker()
        let tasks = try settings.builtinTasks()
        let listener = try settings.workerMetrics()
        let sections = try settings.sections.checked()
        let pool = try await settings.connect(logger: logger)
        let worker = Worker(pool: pool, tasks: tasks, configuration: workerConfiguration, logger: logger)
        var services: [any Service] = [worker]
        if let listener {
            services.append(
                WorkerEndpoint(
                    host: listener.host, port: listener.port, registry: Metrics.registry, logger: logger,
                    stalled: { worker.stalledLoops() }))
        }
        try await runServices(pool: pool, main: services, logger: logger) {
            try await requireMigrated(pool, logger: logger)
            try await sections.save(pool, logger: logger)
        }
    }
}

/// Runs the pool and `main` services in one group that drains on SIGTERM/SIGINT; `prepare`
/// runs once the pool is up, before the others start.
func runServices(
    pool: DatabasePool, main: [any Service], logger: Logger,
    prepare: @escaping @Sendable () async throws -> Void = {}
) async throws {
    let services: [ServiceGroupConfiguration.ServiceConfiguration] =
        [.init(service: pool)]
        + [
            .init(
                service: Prepared(prepare: prepare, services: main),
                successTerminationBehavior: .gracefullyShutdownGroup)
        ]
    let group = ServiceGroup(
        configuration: ServiceGroupConfiguration(
            services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
    try await group.run()
}

/// Runs `prepare`, then `services` side by side, all sharing one graceful shutdown.
struct Prepared: Service {
    let prepare: @Sendable () async throws -> Void
    let services: [any Service]

    func run() async throws {
        try await prepare()
        try await withThrowingDiscardingTaskGroup { group in
            for service in services {
                group.addTask { try await service.run() }
            }
        }
    }
}
