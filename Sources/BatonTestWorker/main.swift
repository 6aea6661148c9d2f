// A worker process for the tests that need several processes (lanes across workers, SIGKILL,
// SIGTERM drain). It serves the built-in tasks and `record`, which logs each attempt's start and
// end (and when it was claimed, the job's `attempted_at`) to `<schema>.test_runs` and fails at
// random when asked to. With `"gate": N` it first waits
// until no one holds PostgreSQL's advisory lock N exclusively: a test holds it to keep the stage
// running for as long as it needs, and lets go to end it.
//
// Usage: BatonTestWorker DATABASE_URL [QUEUE:CONCURRENCY] [LEASE_MS] [GRACE_MS]
// BATON_DATABASE_LISTEN_URL, as for `baton worker`, sends the LISTEN connection there.
import Baton
import BatonPostgres
import BatonWorker
import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    FileHandle.standardError.write(
        Data("usage: BatonTestWorker DATABASE_URL [QUEUE:CONCURRENCY] [LEASE_MS] [GRACE_MS]\n".utf8))
    exit(2)
}
var logger = Logger(label: "baton.test-worker")
logger.logLevel =
    ProcessInfo.processInfo.environment["BATON_TEST_LOG_LEVEL"].flatMap { Logger.Level(rawValue: $0) } ?? .warning
var database = try DatabaseConfiguration(url: arguments[1])
if let listenURL = ProcessInfo.processInfo.environment["BATON_DATABASE_LISTEN_URL"] {
    database = try database.listening(at: listenURL)
}
let queueSpec = (arguments.count > 2 ? arguments[2] : "default:8").split(separator: ":")
let lease = arguments.count > 3 ? Duration.milliseconds(Int64(arguments[3]) ?? 15000) : .seconds(15)
let grace = arguments.count > 4 ? Duration.milliseconds(Int64(arguments[4]) ?? 30000) : .seconds(30)
let pool = DatabasePool(configuration: database, logger: logger)
let schema = database.schema

var tasks = TaskRegistry()
tasks.register(name: "record") { args, input, context in
    let started = Date()
    let minMs = args["min_ms"]?.numberValue?.integer(as: Int.self) ?? 0
    let maxMs = args["max_ms"]?.numberValue?.integer(as: Int.self) ?? minMs
    let failPercent = args["fail_percent"]?.numberValue?.integer(as: Int.self) ?? 0
    if let gate = args["gate"]?.numberValue?.integer(as: Int64.self) {
        try await pool.execute("SELECT pg_advisory_lock_shared(\(gate)), pg_advisory_unlock_shared(\(gate))")
    }
    try await Task.sleep(for: .milliseconds(Int.random(in: minMs...max(minMs, maxMs))))
    let failed = Int.random(in: 0..<100) < failPercent
    try await pool.execute(
        """
        INSERT INTO \(unescaped: schema).test_runs
            (job, stage, attempt, lane, pid, started_at, ended_at, failed, claimed_at)
        VALUES (\(context.jobID), \(context.stageIndex), \(context.attempt), \(context.lane),
                \(Int(ProcessInfo.processInfo.processIdentifier)), \(started), \(Date()), \(failed),
                (SELECT attempted_at FROM \(unescaped: schema).jobs WHERE id = \(context.jobID)))
        """, logger: logger)
    if failed { throw TaskFailure.retry(after: .milliseconds(Int64.random(in: 0...30)), "record failed on purpose") }
    return input
}

let worker = Worker(
    pool: pool, tasks: tasks,
    configuration: WorkerConfiguration(
        queues: [String(queueSpec[0]): Int(queueSpec.count > 1 ? queueSpec[1] : "8") ?? 8],
        lease: lease, pollInterval: .seconds(1), drainGrace: grace, schedulerInterval: .milliseconds(50)),
    logger: logger)
FileHandle.standardOutput.write(Data("ready \(worker.id)\n".utf8))
let group = ServiceGroup(
    configuration: ServiceGroupConfiguration(
        services: [
            .init(service: pool),
            .init(service: worker, successTerminationBehavior: .gracefullyShutdownGroup),
        ],
        gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
try await group.run()
