import ArgumentParser
import BatonPostgres
import BatonWorker
import Logging
import PostgresNIO
import ServiceLifecycle

struct WorkerOptions: ParsableArguments {
    @Option(
        name: .customLong("queue"),
        help: "A queue to serve, as NAME or NAME:CONCURRENCY (repeatable; default: default).")
    var queues: [String] = []

    @Option(help: "Stages run at once per queue, where --queue does not say.")
    var concurrency: Int = 10

    @Option(help: "Rescue a lost worker's stages after this long without its heartbeat (e.g. 15s).")
    var lease: Duration = .seconds(15)

    @Option(help: "On SIGTERM/SIGINT, let running stages finish for this long, then put them back.")
    var grace: Duration = .seconds(30)

    @Option(help: "Delete finished jobs this long after they finish.")
    var retention: Duration = .seconds(24 * 3600)

    func configuration() throws -> WorkerConfiguration {
        var queues: [String: Int] = [:]
        for entry in self.queues.isEmpty ? ["default"] : self.queues {
            let parts = entry.split(separator: ":", maxSplits: 1).map(String.init)
            guard let name = parts.first, !name.isEmpty else { throw ValidationError("empty queue name in --queue") }
            let slots = parts.count == 2 ? Int(parts[1]) : concurrency
            guard let slots, slots >= 1 else {
                throw ValidationError("--queue \(entry): concurrency must be a positive number")
            }
            queues[name] = slots
        }
        guard lease >= .milliseconds(300) else { throw ValidationError("--lease must be at least 300ms") }
        return WorkerConfiguration(queues: queues, lease: lease, drainGrace: grace, retention: retention)
    }
}

struct Worker: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run stages from the given queues until SIGTERM or SIGINT (then drain).")

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var options: WorkerOptions

    func run() async throws {
        let logger = makeLogger("baton.worker")
        let workerConfiguration = try options.configuration()
        let (databaseConfiguration, postgres) = try await database.connect(logger: logger)
        let worker = BatonWorker.Worker(
            postgres: postgres, database: databaseConfiguration, tasks: try builtinTasks(),
            configuration: workerConfiguration, logger: logger)
        try await runServices(postgres: postgres, main: [worker], logger: logger) {
            try await requireMigrated(postgres, database: databaseConfiguration, logger: logger)
        }
    }
}

/// The built-in tasks, the `http` task configured by `BATON_HTTP_ALLOW`, `BATON_HTTP_DENY` and
/// `BATON_SECRET_*` (a malformed list refuses to start rather than failing every request).
func builtinTasks() throws -> TaskRegistry {
    var tasks = TaskRegistry()
    do {
        tasks.register(HTTPTask(configuration: try .fromEnvironment()))
    } catch {
        throw ValidationError("\(error)")
    }
    return tasks
}

/// Runs the pool and `main` services in one group that drains on SIGTERM/SIGINT; `prepare`
/// runs once the pool is up, before the others start.
func runServices(
    postgres: PostgresClient, main: [any Service], logger: Logger,
    prepare: @escaping @Sendable () async throws -> Void = {}
) async throws {
    let services: [ServiceGroupConfiguration.ServiceConfiguration] =
        [.init(service: postgres)]
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
